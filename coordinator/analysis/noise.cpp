// Base-rate arithmetic (noise.hpp).
#include "coordinator/analysis/noise.hpp"

#include <algorithm>
#include <cmath>

namespace kiln::analysis::noise {

namespace {
// The most repeats or votes any rule asks: in effect, no number of them will do.
constexpr int kMaxRepeats = 64;
}  // namespace

int repeats_needed(double q, double tests, int floor, double alpha) {
  if (!(q > 0.0 && q < 1.0) || tests < 1.0) return floor;
  const double k = std::ceil(std::log(alpha / tests) / std::log(q));
  return std::max(floor, static_cast<int>(std::min(k, static_cast<double>(kMaxRepeats))));
}

int repeats_needed_one_miss(double q, double tests, int floor, int guard, double alpha) {
  if (!(q > 0.0 && q < 1.0) || tests < 1.0) return floor;
  int k = std::max(1, floor);
  auto chance = [&](int r) { return std::pow(q, r) * (1.0 + std::max(0, r - guard) * (1.0 - q)); };
  while (k < kMaxRepeats && tests * chance(k) > alpha) ++k;
  return k;
}

int votes_needed(double p, double tests, int floor, double alpha) {
  if (!(p > 0.0) || tests < 1.0) return floor;
  if (p >= 0.5) return std::max(floor, kMaxRepeats);  // k votes of 2k-1 tests is then no rarer than not
  int k = std::max(1, floor);
  while (k < kMaxRepeats && tests * binomial_tail(k, 2 * k - 1, p) > alpha) ++k;
  return k;
}

// Sums the upper tail's terms in log space from k up, until they no longer add anything.
double binomial_tail(int k, int trials, double p) {
  if (k <= 0) return 1.0;
  if (k > trials || p <= 0.0) return 0.0;
  if (p >= 1.0) return 1.0;
  double sum = 0.0;
  for (int i = k; i <= trials; ++i) {
    const double log_term = std::lgamma(trials + 1.0) - std::lgamma(i + 1.0) - std::lgamma(trials - i + 1.0) +
                            i * std::log(p) + (trials - i) * std::log1p(-p);
    const double term = std::exp(log_term);
    sum += term;
    if (i > trials * p && term < sum * 1e-12) break;
  }
  return std::min(1.0, sum);
}

double poisson_tail(int k, double mean) {
  if (k <= 0) return 1.0;
  if (mean <= 0.0) return 0.0;
  double sum = 0.0;
  for (int i = k;; ++i) {
    const double term = std::exp(i * std::log(mean) - mean - std::lgamma(i + 1.0));
    sum += term;
    if ((i > mean && term < sum * 1e-12) || i > k + 100000) break;
  }
  return std::min(1.0, sum);
}

bool hot(int count, int trials, double rate, double tests, int min_trials, double alpha) {
  if (trials < min_trials || rate < 0.0) return false;
  const double expected = std::max(trials * rate, 0.5);
  if (count < kHotRatio * expected || (count - expected) / std::sqrt(expected) < kHotSigmas) return false;
  return poisson_tail(count, expected) < alpha / std::max(1.0, tests);
}

}  // namespace kiln::analysis::noise
