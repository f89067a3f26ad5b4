#include "coordinator/progress_line.hpp"

#include <cmath>
#include <cstdio>

namespace kiln::coord {

std::string clock_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

std::string status_text(const StatusFigures& f) {
  std::string out = "round " + std::to_string(f.round);
  if (f.rounds_estimate >= f.round && f.rounds_estimate > 0) out += " of about " + std::to_string(f.rounds_estimate);
  out += " | " + std::to_string(f.done) + "/" + std::to_string(f.expected) + " ranks done | " + std::to_string(f.results) + " results";
  if (f.elapsed_s >= 1) out += ", " + std::to_string(std::lround(static_cast<double>(f.results) / f.elapsed_s)) + "/s";
  out += " | " + clock_text(f.elapsed_s) + " elapsed";
  if (f.eta_s >= 0) out += ", about " + clock_text(f.eta_s) + " left";
  return out;
}

int localize_rounds_estimate(int units) {
  if (units < 2) return 0;
  if (units < 8) return 3 * (units % 2 == 0 ? units - 1 : units);  // circle method: N-1 rounds (N odd: N)
  return static_cast<int>(std::ceil(2.0 * std::log2(static_cast<double>(units)))) + 10;
}

double eta_seconds(double elapsed_s, std::int64_t rounds_done, int rounds_estimate) {
  if (rounds_done <= 0 || rounds_estimate <= 0 || elapsed_s <= 0) return -1;
  const double left = static_cast<double>(rounds_estimate - rounds_done);
  return left > 0 ? elapsed_s / static_cast<double>(rounds_done) * left : 0.0;
}

}  // namespace kiln::coord
