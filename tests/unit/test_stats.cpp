#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "common/stats.hpp"

using namespace kiln::stats;
using V = std::vector<double>;

TEST_CASE("median of odd and even samples", "[stats]") {
  CHECK(median(V{3, 1, 2}) == 2);
  CHECK(median(V{4, 1, 3, 2}) == 2.5);
  CHECK(median(V{5}) == 5);
  CHECK_THROWS_AS(median(V{}), std::invalid_argument);
}

// Large inputs take a bracketed selection (a strided sample's pivots, one pass): it must give the
// sorted input's middle values exactly, in orders that put the sample's pivots far off too.
TEST_CASE("median of large inputs is the sorted middle, whatever the order", "[stats]") {
  auto sorted_median = [](V v) {
    std::sort(v.begin(), v.end());
    const auto n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
  };
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> lognormal(0.0, 0.05);
  for (const std::size_t n : {16384u, 16385u, 523776u}) {
    V random(n), ties(n), periodic(n), halves(n);
    for (auto& x : random) x = lognormal(rng);
    for (std::size_t i = 0; i < n; ++i) {
      ties[i] = static_cast<double>(i % 3);
      // Every sampled position (a multiple of n / 4,096) holds a low value: the pivots miss.
      periodic[i] = i % (n / 4096) == 0 ? -1.0 : static_cast<double>(i);
      halves[i] = i < n / 2 ? 1.0 : 2.0;
    }
    V ascending = random, descending = random;
    std::sort(ascending.begin(), ascending.end());
    std::sort(descending.rbegin(), descending.rend());
    for (const V* v : {&random, &ascending, &descending, &ties, &periodic, &halves}) {
      const double want = sorted_median(*v);
      CHECK(median(*v) == want);
      V scratch = *v;
      CHECK(median_in_place(scratch) == want);
    }
  }
  V with_nan(20000, 1.0);
  with_nan[5] = std::numeric_limits<double>::quiet_NaN();  // unordered: no claim on the value, but no crash
  CHECK_NOTHROW(median(with_nan));
}

TEST_CASE("MAD ignores one outlier where the standard deviation would not", "[stats]") {
  V xs{10, 10.1, 9.9, 10.05, 9.95, 100};
  CHECK(median(xs) == Approx(10.025));
  CHECK(mad(xs) == Approx(0.075));
  CHECK(mad_sigma(xs) == Approx(0.075 * 1.4826));
  CHECK(robust_z(100, xs) > 100);
  CHECK(std::fabs(robust_z(10.0, xs)) < 1);
}

TEST_CASE("percentiles interpolate between ranks", "[stats]") {
  V xs{1, 2, 3, 4, 5};
  CHECK(percentile(xs, 0) == 1);
  CHECK(percentile(xs, 50) == 3);
  CHECK(percentile(xs, 100) == 5);
  CHECK(percentile(xs, 25) == 2);
  CHECK(percentile(V{1, 2}, 50) == 1.5);
  CHECK_THROWS(percentile(xs, 101));
}

TEST_CASE("robust z with tied peers uses a relative floor, not infinity", "[stats]") {
  V ties{5, 5, 5, 5};
  CHECK(mad(ties) == 0);
  CHECK(robust_z(5, ties) == 0);
  const double z = robust_z(4, ties);
  CHECK(std::isfinite(z));
  CHECK(z < -100);
  CHECK(mean(V{1, 2, 3}) == 2);
  CHECK(min(V{3, 1}) == 1);
  CHECK(max(V{3, 1}) == 3);
}
