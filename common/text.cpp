#include "common/text.hpp"

#include <charconv>
#include <cstdint>

namespace kiln {

namespace {
// The length of the well-formed UTF-8 sequence at s[i] that is safe on a terminal (not a C1 control
// such as U+009B, which some terminals take as CSI), or 0.
std::size_t safe_utf8(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const std::size_t n = c >= 0xf5 ? 0 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  std::uint32_t cp = c & (0x7f >> n);
  for (std::size_t k = 1; k < n; ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3f);
  }
  const bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  if (overlong || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f)) return 0;
  return n;
}
}  // namespace

std::string printable(std::string_view s, std::size_t max) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(std::min(s.size(), max) + 16);
  std::size_t i = 0;
  while (i < s.size() && out.size() < max) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
      ++i;
    } else if (const auto n = c >= 0x80 ? safe_utf8(s, i) : 0; n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {  // controls, DEL, the backslash itself, C1 controls and malformed UTF-8
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xf];
      ++i;
    }
  }
  if (i < s.size()) out += "...(" + std::to_string(s.size() - i) + " more bytes)";
  return out;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string short_number(double v) {
  char b[32];
  const auto r = std::to_chars(b, b + sizeof b, v, std::chars_format::general, 4);
  return std::string(b, r.ptr);
}

}  // namespace kiln
