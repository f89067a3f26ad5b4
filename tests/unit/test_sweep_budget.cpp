// The time budget of the size sweeps (worker/sweep_budget.hpp): the estimate from the last
// measured size and the run/skip decision against the time left.
#include <algorithm>

#include <catch2/catch.hpp>

#include "worker/sweep_budget.hpp"

using namespace kiln::worker::budget;

TEST_CASE("sweep budget: nothing measured yet estimates zero, so the first size runs", "[budget]") {
  CHECK(estimate_s(Step{}, 1 << 20, 10) == 0.0);
  const Decision d = decide(1 << 20, 0.0, 5.0, 1.0);
  CHECK(d.run);
  CHECK(d.reason.empty());
  CHECK(decide(1 << 20, 0.0, 0.5, 1.0).run);  // even with less time left than the reserve
}

TEST_CASE("sweep budget: the estimate scales the last time per operation by bytes, with the safety factor",
          "[budget]") {
  const Step last{1 << 20, 10, 1.0};  // 0.1 s per operation of 1 MiB
  CHECK(estimate_s(last, 4 << 20, 10, 1.0) == Approx(4.0));
  CHECK(estimate_s(last, 4 << 20, 5, 1.0) == Approx(2.0));
  CHECK(estimate_s(last, 4 << 20, 10) == Approx(4.0 * kSafety));
  // A smaller size is never estimated below the last size's time per operation.
  CHECK(estimate_s(last, 1024, 10, 1.0) == Approx(1.0));
}

TEST_CASE("sweep budget: a size that does not fit before the deadline less the reserve is skipped", "[budget]") {
  CHECK(decide(64, 3.0, 5.0, 1.0).run);
  CHECK(decide(64, 4.0, 5.0, 1.0).run);  // exactly fits
  const Decision d = decide(1073741824, 4.5, 5.0, 1.0);
  CHECK_FALSE(d.run);
  CHECK(d.estimate_s == 4.5);
  CHECK(d.left_s == 5.0);
  CHECK(d.reason.find("1073741824 B") != std::string::npos);
  CHECK(d.reason.find("estimated 4.500 s") != std::string::npos);
  CHECK(d.reason.find("5.000 s left") != std::string::npos);
  CHECK(d.reason.find("1.000 s kept in reserve") != std::string::npos);
}

TEST_CASE("sweep budget: past the deadline nothing runs and the time left reads as zero", "[budget]") {
  const Decision d = decide(8, 0.001, -2.0, 0.5);
  CHECK_FALSE(d.run);
  CHECK(d.reason.find("0.000 s left") != std::string::npos);
}

TEST_CASE("sweep budget: the same group figures give every member the same decision", "[budget]") {
  // Members feed decide() the group's largest estimate and least time left (one MAX reduction).
  const double est = std::max(estimate_s({1 << 20, 3, 0.3}, 8 << 20, 3), estimate_s({1 << 20, 3, 0.6}, 8 << 20, 3));
  const double left = std::min(10.0, 9.5);
  CHECK(decide(8 << 20, est, left, 1.0).run == decide(8 << 20, est, left, 1.0).run);
  CHECK_FALSE(decide(8 << 20, est, left, 1.0).run);  // the slow member's 0.2 s/op * 8 * 3 * 2 = 9.6 s
}
