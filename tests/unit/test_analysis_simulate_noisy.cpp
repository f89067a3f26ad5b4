// `kiln simulate` on healthy clusters of 8-11 nodes at 20% noise, where a few campaigns in 5,000 named
// a healthy node or left one undecided: a fast core from noise, an all-to-all slow only against a
// pair history faster than the reference, pair votes judged before the noise was measured (and a slow
// node so withdrawn, named by repetition), a suspect left without a partner, and slow pair tests
// weighed at too low a rate (docs/localization.md, the
// thirty-first session). Each seed below failed before its change; the true cases show what a real
// fault still gives.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "coordinator/analysis/simulate.hpp"

using kiln::analysis::parse_simulate_options;
using kiln::analysis::simulate_trial;

namespace {

kiln::analysis::SimulateOptions healthy(const std::string& nodes, bool reference) {
  auto o = parse_simulate_options({{"model", "severity"}, {"bad-nodes", "0"}, {"bad-links", "0"}, {"noise", "0.20"},
                                   {"per-peer", "on"}, {"nodes", nodes}, {"reference", reference ? "1" : "0"}});
  o.story = true;
  return o;
}

int fast_cores(const nlohmann::json& detail) {
  int cores = 0;
  for (const auto& round : detail["story"]["rounds"])
    for (const auto& e : round.value("slow", nlohmann::json::array()))
      cores += e.contains("edges") && e["edges"].contains("fast_core") ? 1 : 0;
  return cores;
}

}  // namespace

TEST_CASE("simulate: with a reference, a fast core counts only in a group slow against it", "[analysis][simulate]") {
  // 8 healthy nodes, seed 2174: an all-to-all of 8 read 4 rows slow against a core of 4 while its
  // figure was 1.11x the reference; the 4 nodes were reported undecided. Without a reference the
  // same campaign still reads that core (nothing says the rest are not slow).
  const auto r = simulate_trial(healthy("8", true), 2174, true);
  INFO(r.detail["findings"].dump());
  CHECK(r.false_findings == 0);
  CHECK(r.unresolved == 0);
  CHECK(fast_cores(r.detail) == 0);
  CHECK(fast_cores(simulate_trial(healthy("8", false), 2174, true).detail) >= 1);
  // Half of 8 nodes 2x with a reference: the groups read 1.95x the reference and up, the cores count.
  auto o = parse_simulate_options({{"model", "severity"}, {"bad-nodes", "4"}, {"noise", "0.05"}, {"per-peer", "on"},
                                   {"nodes", "8"}, {"reference", "1"}});
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const auto t = simulate_trial(o, seed, true);
    INFO("seed " << seed << ": " << t.detail["findings"].dump());
    CHECK(t.false_findings == 0);
    CHECK(t.true_positives == 4);
  }
}

TEST_CASE("simulate: an all-to-all within the relative cutoff of the reference is not slow against a faster history",
          "[analysis][simulate]") {
  // 8 healthy nodes, seed 2625: the screen's three fast pairs read 0.63-0.72x of the reference, each
  // all-to-all of 8 then read 1.6-1.8x of them and was taken for uniformly slow, six times, and the two
  // suspects in it, never seen fast, were reported undecided.
  const auto r = simulate_trial(healthy("8", true), 2625, true);
  INFO(r.detail["findings"].dump());
  CHECK(r.false_findings == 0);
  CHECK(r.unresolved == 0);
}

TEST_CASE("simulate: pair votes judged before the noise was measured count at the measured noise", "[analysis][simulate]") {
  // Healthy, reference, 20% noise: a node slow with two known-good partners at 1.4-2.2x, judged on the
  // reference's floor (slow from 1.35x) before any all-to-all, was named node.slow (8 nodes seed 1319,
  // 9 nodes seed 3381, 11 nodes seeds 785 and 1085), or, once the votes needed rose, "intermittently
  // slow (3 of 13 tests)", undecided (9 nodes, seed 3381).
  struct Case {
    const char* nodes;
    std::uint64_t seed;
  };
  for (const Case c : {Case{"8", 1319}, Case{"9", 1319}, Case{"9", 3381}, Case{"9", 4236}, Case{"11", 785}, Case{"11", 1085}}) {
    const auto r = simulate_trial(healthy(c.nodes, true), c.seed, true);
    INFO(c.nodes << " nodes, seed " << c.seed << ": " << r.detail["findings"].dump());
    CHECK(r.false_findings == 0);
    CHECK(r.unresolved == 0);
  }
  // A 2x node named on two such votes and withdrawn when the noise was measured, whose pair tests then
  // read fine at the cut that spread sets (2.2x), is slow by repetition: its pair tests with 5 distinct
  // partners together (8 nodes, seed 13; with votes_for alone, no finding at all).
  {
    auto o = parse_simulate_options({{"model", "severity"}, {"noise", "0.20"}, {"per-peer", "on"}, {"nodes", "8"},
                                     {"reference", "1"}});
    const auto r = simulate_trial(o, 13, true);
    INFO(r.detail["findings"].dump());
    REQUIRE(r.true_positives == 1);
    CHECK(r.false_findings == 0);
    bool by_repetition = false;
    for (const auto& f : r.detail["findings"])
      by_repetition = by_repetition || (f["code"] == "node.slow" && f["evidence"].contains("pair_spread") &&
                                        f["evidence"]["combined_z"].get<double>() >= 5.5);
    CHECK(by_repetition);
  }
  // A 2x node at the same noise is still named: its pair tests read slow at that cut 39 times in 40.
  auto o = parse_simulate_options({{"model", "severity"}, {"noise", "0.20"}, {"per-peer", "on"}, {"nodes", "9"},
                                   {"reference", "1"}});
  int found = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto t = simulate_trial(o, seed, false);
    CHECK(t.false_findings == 0);
    found += t.true_positives;
  }
  CHECK(found == 20);
}

TEST_CASE("simulate: a suspect with no free partner waits for one when no node is known-good yet", "[analysis][simulate]") {
  // 9 healthy nodes, seed 4436: the screen read all 4 of its pairs slow (the ninth node sat out), no
  // node was known-good, the 8 suspects were paired with each other, and the last was marked
  // unresolved at once and never tested again.
  for (const std::uint64_t seed : {4436u, 4654u, 4846u}) {
    const auto r = simulate_trial(healthy("9", true), seed, true);
    INFO("seed " << seed << ": " << r.detail["findings"].dump());
    CHECK(r.false_findings == 0);
    CHECK(r.unresolved == 0);
  }
}
