#include "common/text.hpp"

namespace kiln {

std::string printable(std::string_view s, std::size_t max) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(std::min(s.size(), max) + 16);
  std::size_t i = 0;
  for (; i < s.size() && out.size() < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || c == '\\') {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (i < s.size()) out += "...(" + std::to_string(s.size() - i) + " more bytes)";
  return out;
}

}  // namespace kiln
