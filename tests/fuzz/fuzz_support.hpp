// Helpers shared by the libFuzzer targets in tests/fuzz (docs/fuzzing.md).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <typeinfo>

#include <nlohmann/json.hpp>

namespace kiln::fuzz {

// nlohmann::json parses iteratively, but copying, comparing and dumping a value recurse once per
// level, so a deeply nested value can overflow the stack. Frames are refused past
// proto::kMaxJsonDepth (64) before they are parsed (common/channel.hpp), and fuzz_frame feeds that
// check deep input as it comes; the targets that parse JSON themselves (messages, records, params)
// skip inputs nested deeper than the same 64 levels, measured by a SAX pass that builds nothing.
inline constexpr int kMaxDepth = 64;

// A SAX handler that builds nothing, notes the deepest nesting and fails once it passes `limit`.
class DepthCheck : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit DepthCheck(int limit = kMaxDepth) : limit_(limit) {}
  bool too_deep() const { return too_deep_; }
  int deepest() const { return deepest_; }

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return enter(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return --depth_ >= 0; }
  bool start_array(std::size_t) override { return enter(); }
  bool end_array() override { return --depth_ >= 0; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool enter() {
    deepest_ = std::max(deepest_, ++depth_);
    too_deep_ = depth_ > limit_;
    return !too_deep_;
  }
  int limit_;
  int depth_ = 0, deepest_ = 0;
  bool too_deep_ = false;
};

// True when `text` is not nested deeper than kMaxDepth. The SAX pass reads exactly as far as the
// parser would: invalid JSON stops both at the same byte.
inline bool shallow(std::string_view text) {
  DepthCheck check;
  nlohmann::json::sax_parse(text.begin(), text.end(), &check);
  return !check.too_deep();
}

// The nesting depth of valid JSON text (0 for a scalar).
inline int depth(std::string_view text) {
  DepthCheck check(std::numeric_limits<int>::max());
  nlohmann::json::sax_parse(text.begin(), text.end(), &check);
  return check.deepest();
}

// JSON text as a value, or nullopt when it is not JSON or is nested too deeply.
inline std::optional<nlohmann::json> parse_json(std::string_view text) {
  if (!shallow(text)) return std::nullopt;
  auto j = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// A failed expectation: say what, then abort so that libFuzzer records the input as a crash.
[[noreturn]] inline void fail(const char* where, const std::string& what) {
  std::fprintf(stderr, "\n*** kiln fuzz: %s: %s\n", where, what.c_str());
  std::fflush(stderr);
  std::abort();
}

// An exception of a type the caller does not catch.
[[noreturn]] inline void uncaught(const char* where, const std::exception& e) {
  fail(where, std::string("uncaught ") + typeid(e).name() + ": " + e.what());
}

inline void expect(bool ok, const char* where, const std::string& what) {
  if (!ok) fail(where, what);
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace kiln::fuzz
