// The progress of a campaign as one line: round k of about K, ranks done, results and their rate,
// time so far and an estimate of the time left. On a terminal kiln keeps it as one status line
// rewritten in place; otherwise the round lines carry the estimate (docs/operator-guide.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::coord {

struct StatusFigures {
  std::int64_t round = 0;
  int rounds_estimate = 0;  // plan rounds plus the localization's likely rounds; 0: unknown
  std::size_t done = 0, expected = 0;
  std::size_t results = 0;  // results of the campaign so far
  double elapsed_s = 0;     // since the first round started
  double eta_s = -1;        // < 0: not known yet
};

// "4:05", "1:02:03"
std::string clock_text(double seconds);
// "round 5 of about 17 | 4/6 ranks done | 1234 results, 210/s | 0:42 elapsed, about 1:55 left"
std::string status_text(const StatusFigures& f);
// The likely number of localization rounds on `units` nodes (or ranks): every pair three times on
// fewer than 8 (the exact path), else the one-fault bound 2 log2 N + 10; 0 below 2 units.
int localize_rounds_estimate(int units);
// Seconds left at the mean round time so far: rounds_done finished rounds took elapsed_s.
double eta_seconds(double elapsed_s, std::int64_t rounds_done, int rounds_estimate);

}  // namespace kiln::coord
