#include <catch2/catch.hpp>

#include <cmath>

#include "common/stats.hpp"

using namespace kiln::stats;
using V = std::vector<double>;

TEST_CASE("median of odd and even samples", "[stats]") {
  CHECK(median(V{3, 1, 2}) == 2);
  CHECK(median(V{4, 1, 3, 2}) == 2.5);
  CHECK(median(V{5}) == 5);
  CHECK_THROWS_AS(median(V{}), std::invalid_argument);
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
