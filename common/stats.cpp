#include "common/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace kiln::stats {
namespace {
void require(std::span<const double> xs, const char* fn) {
  if (xs.empty()) throw std::invalid_argument(std::string(fn) + ": empty input");
}
}  // namespace

double median(std::span<const double> xs) {
  require(xs, "median");
  std::vector<double> v(xs.begin(), xs.end());
  return median_in_place(v);
}

double median_in_place(std::vector<double>& v) {
  require(v, "median");
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
