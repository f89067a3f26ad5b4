// Rules that scale with the campaign's own noise (coordinator/analysis/noise.hpp, evidence_noise.cpp):
// the repeats a suspicion needs from its base rate and the number of suspicions, the binomial and
// Poisson tails, the hot-node rule, and the planner against the simulator's 1.1x node.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>

#include "coordinator/analysis/noise.hpp"
#include "coordinator/analysis/simulate.hpp"

namespace noise = kiln::analysis::noise;

TEST_CASE("noise: repeats needed grow with the base rate and the number of suspicions", "[analysis][noise]") {
  // 0.5% stragglers: q ~0.01 over ~10k suspicions stays at the floor of three.
  CHECK(noise::repeats_needed(0.01, 10000.0, 3) == 3);
  // 5% stragglers: q ~0.1 over 40k suspicions: ceil(log(0.01/40000)/log(0.1)) = ceil(6.6) = 7.
  CHECK(noise::repeats_needed(0.1, 40000.0, 3) == 7);
  CHECK(noise::repeats_needed(0.2, 40000.0, 3) == static_cast<int>(std::ceil(std::log(0.01 / 40000.0) / std::log(0.2))));
  // Pair votes: 8% slow pair tests over 1,500 candidates need 5 votes, 1% over 20 the configured 2.
  CHECK(noise::repeats_needed(0.08, 1500.0, 2) == 5);
  CHECK(noise::repeats_needed(0.01, 20.0, 2) == 2);
  // Unknown rates or nothing tested: the floor.
  CHECK(noise::repeats_needed(-1.0, 100.0, 3) == 3);
  CHECK(noise::repeats_needed(0.0, 100.0, 3) == 3);
  CHECK(noise::repeats_needed(0.5, 0.0, 2) == 2);
}

TEST_CASE("noise: binomial and Poisson tails", "[analysis][noise]") {
  CHECK(noise::binomial_tail(0, 10, 0.3) == 1.0);
  CHECK(noise::binomial_tail(11, 10, 0.3) == 0.0);
  CHECK(noise::binomial_tail(10, 10, 0.5) == Approx(std::pow(0.5, 10)));
  // P(X >= 1), X ~ B(5, 0.2) = 1 - 0.8^5.
  CHECK(noise::binomial_tail(1, 5, 0.2) == Approx(1.0 - std::pow(0.8, 5)));
  // node794 of the heavy-tail story: 4 of 24 at 8% is no evidence; 4 of 8 at 1% is.
  CHECK(noise::binomial_tail(4, 24, 0.08) > 0.1);
  CHECK(noise::binomial_tail(4, 8, 0.01) < 1e-5);
  CHECK(noise::poisson_tail(1, 2.0) == Approx(1.0 - std::exp(-2.0)));
  CHECK(noise::poisson_tail(0, 2.0) == 1.0);
  CHECK(noise::poisson_tail(3, 0.0) == 0.0);
}

TEST_CASE("noise: the hot-node rule fires far above the base rate, never at it", "[analysis][noise]") {
  // A healthy node of 1,024: ~2,000 readings, 1% slow, ~20 expected; 40 is within Poisson reach
  // for 1,024 nodes, 200 (a 1.1x node reads slow on a quarter of its edges) is not.
  CHECK_FALSE(noise::hot(20, 2000, 0.01, 1024.0));
  CHECK_FALSE(noise::hot(35, 2000, 0.01, 1024.0));
  CHECK(noise::hot(200, 2000, 0.01, 1024.0));
  // Too few readings to judge, however slow.
  CHECK_FALSE(noise::hot(20, 29, 0.01, 1024.0));
  // Twice the expected count is required even when sigma is small.
  CHECK_FALSE(noise::hot(1500, 100000, 0.01, 1.0));
}

TEST_CASE("noise: a 1.1x node is found as a node, not as links of it", "[analysis][noise]") {
  kiln::analysis::SimulateOptions opt;
  kiln::analysis::apply_model(opt, "severity");
  opt.slow_factor = 1.1;
  opt.per_peer = true;
  opt.nodes = 256;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const auto r = kiln::analysis::simulate_trial(opt, seed, true);
    CHECK(r.true_positives == 1);
    CHECK(r.false_findings == 0);
    CHECK(r.unresolved == 0);
  }
}
