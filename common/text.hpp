// Text from peers on the operator's terminal and in logs: bounded and with control characters
// escaped, so a peer cannot flood the terminal or send it escape sequences.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// At most `max` bytes of `s`, with control bytes (below 0x20, and 0x7f) and backslashes written as
// \xNN, and "...(N more bytes)" when cut.
std::string printable(std::string_view s, std::size_t max = 300);

// A number in 4 significant digits, as printf's %.4g writes it ("700.1", "1e-05"): for figures in
// findings and generated text.
std::string short_number(double v);

// The strings with sep between each two ("a,b,c").
std::string join(const std::vector<std::string>& v, const std::string& sep);

// Allows one log line per period and counts the events in between.
class RateLimitedLog {
 public:
  explicit RateLimitedLog(std::chrono::steady_clock::duration period) : period_(period) {}
  // The number of events since the last line when a line is due now (log it), else 0.
  std::uint64_t tick() {
    ++pending_;
    const auto now = std::chrono::steady_clock::now();
    if (logged_once_ && now - last_ < period_) return 0;
    logged_once_ = true;
    last_ = now;
    const auto n = pending_;
    pending_ = 0;
    return n;
  }

 private:
  std::chrono::steady_clock::duration period_;
  std::chrono::steady_clock::time_point last_{};
  bool logged_once_ = false;
  std::uint64_t pending_ = 0;
};

}  // namespace kiln
