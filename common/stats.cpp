#include "common/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <utility>

namespace kiln::stats {
namespace {
void require(std::span<const double> xs, const char* fn) {
  if (xs.empty()) throw std::invalid_argument(std::string(fn) + ": empty input");
}

// Inputs at least this long take bracketed(): a per-edge group of 1,024 has 523,776 figures, and
// std::nth_element over them (twice per group) was a seventh of a 16,384-node simulation.
constexpr std::size_t kBracketFrom = 16384;

// The order statistics of ranks k-1 and k (0-based; 1 <= k < n) of a large input, without moving
// it: the values between two pivots from a strided sample of 4,096 (256 sample ranks either side of
// where rank k falls, 8 of the sample's standard errors) are kept in one pass, and the two ranks are
// selected exactly among them. The values are the input's own, so any selection gives the same
// ones. nullopt when the bracket missed them or a value is NaN: the caller selects over the whole.
std::optional<std::pair<double, double>> bracketed(std::span<const double> xs, std::size_t k) {
  constexpr std::size_t kSample = 4096;
  constexpr std::size_t kMargin = 256;
  const std::size_t n = xs.size();
  const std::size_t step = n / kSample;
  std::vector<double> sample;
  sample.reserve(kSample);
  for (std::size_t i = 0; i < kSample; ++i) sample.push_back(xs[i * step]);
  if (std::any_of(sample.begin(), sample.end(), [](double x) { return std::isnan(x); })) return std::nullopt;
  std::sort(sample.begin(), sample.end());
  const std::size_t at = k * kSample / n;
  const double lo = sample[at > kMargin ? at - kMargin : 0];
  const double hi = sample[std::min(kSample - 1, at + kMargin)];
  std::size_t below = 0, above = 0;
  std::vector<double> mid;
  mid.reserve(n / 8);
  for (double x : xs) {
    if (x < lo) ++below;
    else if (x > hi) ++above;
    else if (x <= hi) mid.push_back(x);
  }
  if (below + above + mid.size() != n || k - 1 < below || k >= below + mid.size()) return std::nullopt;
  const auto kth = mid.begin() + static_cast<std::ptrdiff_t>(k - below);
  std::nth_element(mid.begin(), kth, mid.end());
  return std::pair{*std::max_element(mid.begin(), kth), *kth};
}

// The median of a large input from bracketed(), or nullopt.
std::optional<double> bracketed_median(std::span<const double> xs) {
  if (xs.size() < kBracketFrom) return std::nullopt;
  const auto r = bracketed(xs, xs.size() / 2);
  if (!r) return std::nullopt;
  return xs.size() % 2 == 1 ? r->second : (r->first + r->second) / 2.0;
}
}  // namespace

double median(std::span<const double> xs) {
  require(xs, "median");
  if (const auto m = bracketed_median(xs)) return *m;
  std::vector<double> v(xs.begin(), xs.end());
  return median_in_place(v);
}

double median_in_place(std::vector<double>& v) {
  require(v, "median");
  if (const auto m = bracketed_median(v)) return *m;
  const auto n = v.size();
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (n % 2 == 1) return *mid;
  const double hi = *mid;
  const double lo = *std::max_element(v.begin(), mid);
  return (lo + hi) / 2.0;
}

double mean(std::span<const double> xs) {
  require(xs, "mean");
  return std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
}

double mad(std::span<const double> xs) {
  require(xs, "mad");
  const double m = median(xs);
  std::vector<double> dev;
  dev.reserve(xs.size());
  for (double x : xs) dev.push_back(std::fabs(x - m));
  return median(dev);
}

double mad_sigma(std::span<const double> xs) { return 1.4826 * mad(xs); }

double percentile(std::span<const double> xs, double p) {
  require(xs, "percentile");
  if (p < 0.0 || p > 100.0) throw std::invalid_argument("percentile: p outside [0, 100]");
  std::vector<double> v(xs.begin(), xs.end());
  std::sort(v.begin(), v.end());
  if (v.size() == 1) return v[0];
  const double pos = p / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return v[lo] + (v[hi] - v[lo]) * frac;
}

double min(std::span<const double> xs) {
  require(xs, "min");
  return *std::min_element(xs.begin(), xs.end());
}

double max(std::span<const double> xs) {
  require(xs, "max");
  return *std::max_element(xs.begin(), xs.end());
}

double robust_z(double x, std::span<const double> sample, double min_rel_scale) {
  const double m = median(sample);
  double scale = mad_sigma(sample);
  const double floor_scale = std::fabs(m) * min_rel_scale;
  if (scale < floor_scale) scale = floor_scale;
  if (scale == 0.0) return x == m ? 0.0 : (x > m ? INFINITY : -INFINITY);
  return (x - m) / scale;
}

}  // namespace kiln::stats
