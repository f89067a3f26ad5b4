// Intermittent faults (evidence_intermittent.cpp): a node slow in some rounds and fast in others is
// reported (node.slow calling it intermittent, or localize.unresolved naming it), never dropped.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <tuple>
#include <utility>

#include "common/findings.hpp"
#include "coordinator/analysis/planner.hpp"

using kiln::analysis::GroupOutcome;
using kiln::analysis::Planner;
using kiln::analysis::PlannerConfig;

namespace {

// 32 nodes, node 5 three times slower in the rounds where a coin (fixed seed) says it is active.
std::vector<kiln::Finding> run_intermittent(std::uint64_t seed, double rate) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::bernoulli_distribution active(rate);
  PlannerConfig cfg;
  cfg.seed = seed;
  Planner p(32, cfg);
  while (auto plan = p.next()) {
    const bool on = active(rng);
    std::vector<GroupOutcome> out;
    for (const auto& g : plan->groups) {
      GroupOutcome o;
      o.members = g;
      const bool slow = on && std::count(g.begin(), g.end(), 5) > 0;
      o.value = 2.0 * (slow ? 3.0 : 1.0) * std::exp(0.03 * z(rng));
      out.push_back(std::move(o));
    }
    p.observe(*plan, std::move(out));
  }
  return p.findings();
}

}  // namespace

TEST_CASE("intermittent: a node slow in half the rounds is named, and no other node is", "[analysis][intermittent]") {
  int named = 0, intermittent = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    bool hit = false;
    for (const auto& f : run_intermittent(seed, 0.5)) {
      if (f.entity.kind == "node") CHECK(f.entity.id == "node5");
      if (f.entity.id != "node5") continue;
      hit = true;
      if (f.evidence.value("intermittent", false)) {
        ++intermittent;
        CHECK(f.summary.find("intermittently slow") != std::string::npos);
        CHECK(f.evidence["slow_rate"].get<double>() > 0.0);
        CHECK(f.evidence["slow_rate"].get<double>() < 1.0);
        CHECK(f.evidence["tests"].get<int>() >= 4);
      }
    }
    named += hit ? 1 : 0;
  }
  INFO(named << " of 20 trials named node5, " << intermittent << " findings called it intermittent");
  // Measured 7 of 20 named, 4 called intermittent (before the watch: 0 called intermittent). The
  // issue's target, 19 of 20, is not reached yet: a node fast in the screen and in the big group
  // after it is known-good and not tested again (docs/localization.md, the planner, item 7).
  CHECK(named >= 6);
  CHECK(intermittent >= 3);
}

// --- with per-edge figures (the live configuration), small clusters ------------------------------

#include "coordinator/analysis/simulate.hpp"

namespace {

kiln::analysis::SimulateOptions per_peer(const std::string& model, int nodes) {
  auto opt = kiln::analysis::parse_simulate_options({{"model", model}, {"nodes", std::to_string(nodes)}});
  opt.per_peer = true;
  return opt;
}

// A campaign with no false finding that accounted for its fault with localize.unresolved on the
// link `id` (and, when `flapping`, with the clearly fast pair tests of a flapping link).
void check_unresolved_link(int nodes, int seed, const std::string& id, bool flapping) {
  const auto r = kiln::analysis::simulate_trial(per_peer("intermittent", nodes), static_cast<std::uint64_t>(seed), true);
  INFO("seed " << seed << ": " << r.detail["findings"].dump());
  CHECK(r.false_findings == 0);
  CHECK(r.accounted);
  bool link = false;
  for (const auto& f : r.detail["findings"])
    link = link || (f["code"] == "localize.unresolved" && f["entity"]["kind"] == "link" && f["entity"]["id"] == id &&
                    (!flapping || (f["evidence"].value("intermittent", false) &&
                                   !f["evidence"]["clearly_fast_pair_tests"].empty())));
  CHECK(link);
}

// The diluted model with no fault planted, at a noise level.
kiln::analysis::SimulateOptions healthy(int nodes, double noise) {
  auto opt = per_peer("diluted", nodes);
  opt.bad_nodes = 0;
  opt.bad_links = 0;
  opt.noise = noise;
  return opt;
}

// Healthy campaigns at 20% noise, one per (nodes, seed), each to end with no finding and nothing
// unresolved.
void expect_clean(std::initializer_list<std::pair<int, std::uint64_t>> trials) {
  for (const auto& [nodes, seed] : trials) {
    const auto r = kiln::analysis::simulate_trial(healthy(nodes, 0.20), seed, false);
    INFO("N=" << nodes << " seed " << seed << ": " << r.findings << " findings, " << r.unresolved << " unresolved");
    CHECK(r.findings == 0);
    CHECK(r.unresolved == 0);
  }
}

// Faults found, faults planted and false findings over seeds 1..seeds.
struct Tally {
  int found = 0, truth = 0, false_findings = 0;
};
Tally tally(const kiln::analysis::SimulateOptions& opt, std::uint64_t seeds) {
  Tally t;
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    const auto r = kiln::analysis::simulate_trial(opt, seed, false);
    t.found += r.true_positives;
    t.truth += r.truth;
    t.false_findings += r.false_findings;
  }
  return t;
}

// One trial with its story, which must find every planted fault and nothing else.
kiln::analysis::TrialResult finds_all(const std::string& model, int nodes, std::uint64_t seed) {
  auto opt = per_peer(model, nodes);
  opt.story = true;
  auto r = kiln::analysis::simulate_trial(opt, seed, true);
  CHECK(r.false_findings == 0);
  CHECK(r.true_positives == r.truth);
  return r;
}

// Conclusions of a trial's story (simulate_trial with opt.story) that contain `text`.
int concluded(const nlohmann::json& detail, const std::string& text) {
  int n = 0;
  for (const auto& round : detail["story"]["rounds"])
    for (const auto& c : round["concluded"])
      if (c.get<std::string>().find(text) != std::string::npos) ++n;
  return n;
}

}  // namespace

TEST_CASE("intermittent, per-edge figures: a node slow in half the rounds is accounted for at N=8 and 12, with no false finding",
          "[analysis][intermittent]") {
  // Before the look-again rounds the campaign could end in 2-4 rounds that all fell in the fault's
  // quiet rounds, and the node's own pair tests confirmed false links: 6 of 20 accounted at N=8.
  for (int n : {8, 12}) {
    int accounted = 0, false_findings = 0;
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      const auto r = kiln::analysis::simulate_trial(per_peer("intermittent", n), seed, false);
      accounted += r.accounted ? 1 : 0;
      false_findings += r.false_findings;
    }
    INFO("N=" << n << ": accounted " << accounted << " of 20, " << false_findings << " false findings");
    CHECK(accounted >= 19);
    CHECK(false_findings == 0);
  }
}

TEST_CASE("look again: a healthy cluster of 12 gets look-again rounds, stays within the rounds bound and names nothing", "[analysis][intermittent]") {
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    auto opt = per_peer("diluted", 12);
    opt.bad_nodes = 0;
    opt.bad_links = 0;
    opt.story = true;
    const auto r = kiln::analysis::simulate_trial(opt, seed, true);
    CHECK(r.findings == 0);
    CHECK(r.unresolved == 0);
    int looks = 0;
    for (const auto& round : r.detail["story"]["rounds"])
      if (round["reason"].get<std::string>().rfind("look again", 0) == 0) ++looks;
    INFO("seed " << seed << ": " << r.rounds << " rounds, " << looks << " look-again rounds");
    CHECK(looks >= 1);
    CHECK(r.rounds <= 17);  // 2 log2(12) + 10
  }
}

TEST_CASE("per-edge figures: a slow node's row does not hide a mild link beside it (N=12, 1.25x both)",
          "[analysis][edges]") {
  // The node's row was a sixth of the group's edges and widened their spread until the 1.25x link
  // read z ~2.4, below the 2.5 that opens a suspicion: recall 0.23 over 40 seeds before, 0.86 after.
  const auto t = tally(per_peer("diluted", 12), 20);
  INFO(t.found << " of " << t.truth << " faults found, " << t.false_findings << " false findings");
  CHECK(t.found >= t.truth * 3 / 4);
  CHECK(t.false_findings == 0);
}

TEST_CASE("congestion: one congested leaf among four is the only switch finding (N=100, seed 14)", "[analysis][switch]") {
  // With pair candidates retested inside all-to-alls, one group held three leaves: the leaves beside
  // the congested one read slow into it, and one straggler into a third leaf made two of them look
  // congested too while leaves were declared all at once (leaf0, leaf1 and leaf2 named).
  const auto r = kiln::analysis::simulate_trial(per_peer("congestion", 100), 14, true);
  CHECK(r.false_findings == 0);
  CHECK(r.switch_findings == 1);
  CHECK(r.detail["findings"].size() == 1);
}

TEST_CASE("congestion: a node alone under its leaf is named with its leaf, which reads the same", "[analysis][switch]") {
  // 11 nodes in leaves of 2 leave node10 alone under leaf5 (7 nodes: node6 under leaf3, every pair
  // repeated). Every path to it crosses leaf5's uplink, so the congested uplink reads as a slow
  // node: the finding names both, and its next step does not drain the node outright.
  for (const auto& [nodes, seed, node, leaf] : {std::tuple{11, 3, "node10", "leaf5"}, std::tuple{7, 3, "node6", "leaf3"}}) {
    CAPTURE(nodes, seed);
    auto opt = per_peer("congestion", nodes);
    const auto r = kiln::analysis::simulate_trial(opt, static_cast<std::uint64_t>(seed), true);
    REQUIRE(r.detail["findings"].size() == 1);
    const auto& f = r.detail["findings"][0];
    CHECK(f["code"] == "node.slow");
    CHECK(f["entity"]["id"] == node);
    CHECK(f["evidence"]["alone_under_switch"] == leaf);
    CHECK(f["summary"].get<std::string>().find(std::string("only node measured under switch ") + leaf) !=
          std::string::npos);
    CHECK(f["next_step"].get<std::string>().find(std::string("switch ") + leaf) != std::string::npos);
    CHECK(r.false_findings == 0);  // right for the switch: the two cannot be told apart
    CHECK(r.accounted);
  }
}

TEST_CASE("congestion: every pair repeated (5-7 nodes), an uplink slow in 80% of rounds is its switch", "[analysis][switch]") {
  // Each crossing pair's median was fast in about 1 repeat sweep of 10, and every crossing median
  // had to be slow: 47-66 false link findings per 100 campaigns. Judged by the crossing readings,
  // 20 seeds of 20 at each size give the switch (or the lone node under it), and nothing else.
  for (int nodes = 5; nodes <= 7; ++nodes)
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      CAPTURE(nodes, seed);
      const auto r = kiln::analysis::simulate_trial(per_peer("congestion", nodes), seed, true);
      CHECK(r.false_findings == 0);
      CHECK(r.unresolved == 0);
      CHECK(r.accounted);
      for (const auto& f : r.detail["findings"])
        CHECK((f["code"] == "switch.slow" || f["evidence"].contains("alone_under_switch")));
    }
}

TEST_CASE("congestion: a healthy small cluster in leaves has no switch finding", "[analysis][switch]") {
  // The readings rule (half the crossing readings two spreads past the baseline) against noise
  // alone: 20% noise, leaves of 2 and 3, 4-7 nodes, 50 seeds each.
  for (int leaf : {2, 3})
    for (int nodes = 4; nodes <= 7; ++nodes)
      for (std::uint64_t seed = 1; seed <= 50; ++seed) {
        CAPTURE(leaf, nodes, seed);
        auto opt = per_peer("severity", nodes);
        opt.bad_nodes = 0, opt.bad_links = 0, opt.leaf_size = leaf, opt.noise = 0.2;
        const auto r = kiln::analysis::simulate_trial(opt, seed, false);
        CHECK(r.false_findings == 0);
      }
}

TEST_CASE("every pair repeated (6-7 nodes): a node slow in half the rounds is a node, not its links", "[analysis][intermittent]") {
  // Slow with 3 of 5 partners by their medians, fast with 2: each slow pair read as a slow link
  // (both ends had a clearly fast pair). 20 seeds at 6 and at 7 nodes, 5% noise: accounted 14 and
  // 13, false findings 21 and 31; now 19 and 20, 3 and 0.
  int accounted = 0, false_findings = 0;
  for (int nodes : {6, 7})
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      const auto r = kiln::analysis::simulate_trial(per_peer("intermittent", nodes), seed, false);
      accounted += r.accounted ? 1 : 0, false_findings += r.false_findings;
    }
  CHECK(accounted >= 38);
  CHECK(false_findings <= 4);
  // Seed 1 at 6 nodes: node3, slow with 3 of 5, is named as intermittently slow with its rate.
  const auto r = kiln::analysis::simulate_trial(per_peer("intermittent", 6), 1, true);
  REQUIRE(r.detail["findings"].size() == 1);
  const auto& f = r.detail["findings"][0];
  CHECK(f["code"] == "node.slow");
  CHECK(f["entity"]["id"] == "node3");
  CHECK(f["evidence"]["intermittent"] == true);
  CHECK(f["evidence"]["slow_rate"].get<double>() > 0.2);
  CHECK(f["evidence"]["slow_rate"].get<double>() < 0.8);
  CHECK(f["summary"].get<std::string>().find("intermittently slow") != std::string::npos);
}

TEST_CASE("congestion: a leaf is judged from a group's edges twice, against the spread inside the leaves", "[analysis][switch]") {
  // Healthy, leaves of 4, 20% noise: a retest group of 8 held two members of a leaf, and one group
  // was enough to declare it (24 nodes seeds 57 and 73, 64 nodes seed 11).
  for (const auto& [nodes, seed] : {std::pair{24, 57}, std::pair{24, 73}, std::pair{64, 11}}) {
    CAPTURE(nodes, seed);
    auto opt = per_peer("severity", nodes);
    opt.bad_nodes = 0, opt.bad_links = 0, opt.leaf_size = 4, opt.noise = 0.2;
    const auto r = kiln::analysis::simulate_trial(opt, static_cast<std::uint64_t>(seed), true);
    CHECK(r.false_findings == 0);
    CHECK(r.detail["findings"].empty());
  }
  // Healthy, leaves of 2 (the last of one), 20% noise: the inside edges are 4 or 5, too few for a
  // level or a spread, and with 1.25x of their level a leaf was declared in 15, 6 and 20 campaigns of
  // 1,000 at 8, 9 and 11 nodes (544, 596 and 918 on 8805288, before every member had to be slow across). Each
  // leaf's level and spread now come from the edges that do not touch it.
  // Seed 592 at 8 nodes: exactly half of the leaf's 12 crossing edges slow, twice, was "mostly slow".
  for (const auto& [nodes, seed] : {std::pair{8, 4}, std::pair{8, 59}, std::pair{8, 105}, std::pair{8, 592}, std::pair{9, 51},
                                    std::pair{9, 415}, std::pair{11, 50}, std::pair{11, 121}, std::pair{11, 134}}) {
    CAPTURE(nodes, seed);
    auto opt = per_peer("severity", nodes);
    opt.bad_nodes = 0, opt.bad_links = 0, opt.leaf_size = -1, opt.noise = 0.2;
    const auto r = kiln::analysis::simulate_trial(opt, static_cast<std::uint64_t>(seed), false);
    CHECK(r.false_findings == 0);
  }
  // 8 and 9 nodes in leaves of 2, 20% noise: healthy leaves were declared beside the congested one
  // (seed 2 at 9 nodes: leaf0 and leaf1 too). A spread from all edges held the congested uplink's
  // own crossing edges, and with two sightings required it hid them (seed 1 at 8 nodes: no finding).
  for (const auto& [nodes, seed, leaf] : {std::tuple{8, 1, "leaf2"}, std::tuple{9, 2, "leaf2"}}) {
    CAPTURE(nodes, seed);
    auto opt = per_peer("congestion", nodes);
    opt.noise = 0.2;
    const auto r = kiln::analysis::simulate_trial(opt, static_cast<std::uint64_t>(seed), true);
    CHECK(r.false_findings == 0);
    REQUIRE(r.detail["findings"].size() == 1);
    CHECK(r.detail["findings"][0]["code"] == "switch.slow");
    CHECK(r.detail["findings"][0]["entity"]["id"] == leaf);
  }
}

TEST_CASE("congestion: an uplink congested in 30% of rounds is declared from one decisive group", "[analysis][switch]") {
  // A leaf of 6 at 24 nodes, 20% noise, congested in 30% of rounds: with a second sighting always
  // required, it was found in 70 campaigns of 100 (seeds 2, 3 and 7 among those missed). Three
  // members or more in the group, 3 of 4 crossing edges slow, declare it at once: 93 of 100.
  for (std::uint64_t seed : {2, 3, 7}) {
    CAPTURE(seed);
    auto opt = per_peer("congestion", 24);
    opt.noise = 0.2, opt.congestion_rate = 0.3;
    const auto r = kiln::analysis::simulate_trial(opt, seed, true);
    CHECK(r.false_findings == 0);
    CHECK(r.switch_findings == 1);
    CHECK(r.accounted);
  }
}

TEST_CASE("per-edge figures: a 1.25x node in a cluster of 8 is named from its slow rows", "[analysis][edges]") {
  // A row of 7 peers is one vote per slow peer (it was one vote per row below 15 peers): the node,
  // slow in every all-to-all but at the pair tests' cutoff, was named in 3 of 20 seeds, now 10.
  int named = 0, false_findings = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    auto opt = per_peer("diluted", 8);
    const auto r = kiln::analysis::simulate_trial(opt, seed, true);
    false_findings += r.false_findings;
    std::string node;
    for (const auto& t : r.detail["truth"])
      if (t.get<std::string>().rfind("node:", 0) == 0) node = t.get<std::string>().substr(5);
    for (const auto& f : r.detail["findings"])
      if (f["code"] == "node.slow" && f["entity"]["id"] == node) ++named;
  }
  INFO(named << " of 20 trials named the 1.25x node, " << false_findings << " false findings");
  CHECK(named >= 18);
  CHECK(false_findings == 0);
}

TEST_CASE("per-edge figures: suspects are retested as rows, so a 1.25x node and a 1.25x link at N=8 are both found",
          "[analysis][edges]") {
  // Pair retests time one edge, whose figure spreads like one: the 1.25x node read as noise one time
  // in three and ended unresolved, and the link, retested in groups of 6 beside it, was cleared.
  // Rows of 7 known-good peers see the node every time: 16 of 40 faults found before, 36 with rows,
  // 40 once an undecided link suspicion is retested as an edge up to 6 times instead of 3 then pairs.
  int found = 0, truth = 0, false_findings = 0, row_rounds = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    auto opt = per_peer("diluted", 8);
    opt.story = true;
    const auto r = kiln::analysis::simulate_trial(opt, seed, true);
    found += r.true_positives;
    truth += r.truth;
    false_findings += r.false_findings;
    for (const auto& round : r.detail["story"]["rounds"])
      if (round["reason"].get<std::string>().find("timed against known-good peers inside all-to-all groups") != std::string::npos)
        ++row_rounds;
  }
  INFO(found << " of " << truth << " faults found, " << false_findings << " false findings, " << row_rounds << " row-retest rounds");
  CHECK(row_rounds >= 20);
  CHECK(found >= 38);
  CHECK(false_findings == 0);
}

TEST_CASE("per-edge figures: a link the opening all-to-all missed is opened by its slow readings in later groups (N=12, seed 10)",
          "[analysis][edges]") {
  // The 1.25x link read z 2.36 in the only group that opens suspicions (2.5 opens), then z 3-5 in
  // four certification and look-again groups, which open none: it was never retested, never found.
  const auto r = finds_all("diluted", 12, 10);
  CHECK(concluded(r.detail, "groups that time it again: link suspicion") >= 1);
}

TEST_CASE("per-edge figures: a node with one 2x link is not a slow row, nor a slow node (topology, N=8, 100 seeds)",
          "[analysis][edges]") {
  // A row of 6 holding the 2x link edge had that edge as one of its middle two: the row read slow,
  // its node was watched, and the link's pair retests made it "intermittently slow". A row's level
  // now leaves its slowest edge out.
  const auto t = tally(per_peer("topology", 8), 100);
  INFO(t.found << " of " << t.truth << " faults found, " << t.false_findings << " false findings");
  CHECK(t.false_findings == 0);
  CHECK(t.found >= t.truth * 95 / 100);
}

TEST_CASE("hot node: slow readings that come in clumps in two groups do not name a healthy node (N=100, noise 10%, seed 139)",
          "[analysis][noise]") {
  // node30 read slow with 5 of 83 peers in one group and 4 of 36 in another, where the campaign's
  // rate predicts 1 in all: the Poisson rule alone named it. A hot node needs 12 slow partners.
  auto opt = healthy(100, 0.10);
  const auto r = kiln::analysis::simulate_trial(opt, 139, false);
  CHECK(r.findings == 0);
  CHECK(r.false_findings == 0);
}

TEST_CASE("per-edge figures: a retest group that is slow because of the links it retests keeps their readings (many, N=256, seed 1)",
          "[analysis][edges]") {
  // A retest group of 8 holding a 1.6x and a 3.4x link was slow, no row or new suspicion explained
  // it (retest groups open none), and it was dropped as uniformly slow: three edge retests without
  // one reading, and the pair retests' votes needed grew faster than they came. Both links missed.
  const auto r = finds_all("many", 256, 1);
  CHECK(concluded(r.detail, "stands out among its group's edges") == 2);
}

TEST_CASE("per-edge figures: a small retest group's own spread cannot make a healthy edge a link (N=256, noise 10%, seed 246)",
          "[analysis][edges]") {
  // The edge read z 2.8 in the first all-to-all and 3 more times slow in retest groups of 193, 27
  // and 8 whose spread was their own MAD alone: link.slow in a healthy cluster. With the pooled edge
  // spread as the floor of every group's spread, its first retest clears it.
  auto opt = healthy(256, 0.10);
  const auto r = kiln::analysis::simulate_trial(opt, 246, false);
  CHECK(r.findings == 0);
}

TEST_CASE("edge readings needed: at 1,024 nodes noise's thousands of suspicions ask a fourth slow reading (healthy, seed 11)",
          "[analysis][noise]") {
  // About 8,000 suspicions opened by 5% noise; at alpha 1% per campaign three slow readings were
  // enough, and node711<->node926 read slow on three (one false link in 100 healthy campaigns).
  auto opt = healthy(1024, 0.05);
  opt.story = true;
  const auto r = kiln::analysis::simulate_trial(opt, 11, true);
  CHECK(r.findings == 0);
  CHECK(r.detail["story"]["noise"]["edge_readings_needed"].get<int>() >= 4);
}

TEST_CASE("20% noise: a healthy small cluster names no node unresolved from 2 slow pair tests when other pairs were as slow",
          "[analysis][intermittent]") {
  // Each ended with "nodeX is intermittently slow (2 of 8 tests)" (unresolved, a warning) before the
  // others' slow pair tests counted as the campaign's noise: 22, 26, 18 and 6 of 1,000 campaigns at
  // N=8, 12, 16 and 32. The round-one "fast cluster" of 2 of 4 pair figures was also no spread.
  expect_clean({{8, 106}, {8, 167}, {8, 206}, {8, 266}, {8, 309}, {16, 90}, {16, 106}, {32, 486}, {32, 514}});
}

TEST_CASE("20% noise: a pair spread from a few figures is floored by the edges', so a 16-node healthy cluster names nothing",
          "[analysis][intermittent]") {
  // Seed 495 named a false node.slow (pair tests 1.28-1.35x at z 4.4-5.4 against a history of 8
  // pair figures spread 0.056) and seed 494 a node unresolved; 178 edges had been read at 0.2. The
  // pair spread is now floored at half the edges'.
  expect_clean({{16, 494}, {16, 495}});
}

TEST_CASE("where the other pairs were clean, 2 slow pair tests still name a node unresolved (1.1x, N=8)",
          "[analysis][intermittent]") {
  // Where the others' pair tests give no rate (kPairPrior then, evidence_noise.cpp), a 1.1x node
  // slow with two partners is reported, not dropped (seed 24). Seeds 8 and 15, reported so before, are now found
  // outright: the node's rows lean in most rounds (the leaning-row rule, evidence_noise.cpp).
  auto opt = per_peer("severity", 8);
  opt.slow_factor = 1.1;
  const auto r = kiln::analysis::simulate_trial(opt, 24, true);
  INFO(r.detail["findings"].dump());
  CHECK(r.false_findings == 0);
  CHECK(r.unresolved == 1);
  CHECK(r.accounted);
  for (std::uint64_t seed : {8, 15}) {
    const auto found = kiln::analysis::simulate_trial(opt, seed, false);
    INFO("seed " << seed);
    CHECK(found.false_findings == 0);
    CHECK(found.true_positives == 1);
    CHECK(found.unresolved == 0);
  }
}

TEST_CASE("where the other pairs were clean, one slow pair test after the screen is no evidence (healthy, 20% noise)",
          "[analysis][intermittent]") {
  // Each ended with "nodeX is intermittently slow (2 of 13 tests)", unresolved: a screen pair at
  // 1.32x (z 2.5) and one more at 2.06x, then fine 11 times (N=9, seed 155). The others' pair tests
  // were all fine, too few for a rate, and the fixed rule took any slow test past the screen as
  // beyond noise: 3 and 4 of 1,000 healthy campaigns at N=9 and 13. Such a rate is now kPairPrior.
  expect_clean({{9, 155}, {9, 263}, {9, 775}, {13, 233}, {13, 389}, {13, 622}, {13, 942}});
}

TEST_CASE("past 256 nodes, a link candidate whose pair retests stay slow is reported, not dropped (300 nodes, seed 15)",
          "[analysis][intermittent]") {
  // node73, slow in half the rounds, read slow with its screen partner node151 in 4 retests of 6
  // while it was busy with them; the retests ran out, the rest certified, and the campaign ended
  // with no finding at all. The candidate is now localize.unresolved, naming both ends.
  const auto r = kiln::analysis::simulate_trial(per_peer("intermittent", 300), 15, true);
  INFO(r.detail["findings"].dump());
  CHECK(r.false_findings == 0);
  CHECK(r.accounted);
  bool link = false;
  for (const auto& f : r.detail["findings"])
    link = link || (f["code"] == "localize.unresolved" && f["entity"]["kind"] == "link" &&
                    f["entity"]["id"].get<std::string>().find("node73") != std::string::npos);
  CHECK(link);
}

TEST_CASE("a link candidate slow in as many pair retests as fast, at the rate of pair tests without its ends, is reported (512 nodes, seeds 29, 90)",
          "[analysis][intermittent]") {
  // node235 (seed 29), slow in half the rounds, was fine with another partner once, then read slow
  // with its screen partner node134 in 3 retests of 6 and fast in 3. At the campaign's pair rate (1.9%,
  // four of it the link's own slow tests) that was within noise, and at "more slow than fast" it
  // was not asked: the campaign ended with no finding. The other pair tests read 0.4% slow.
  check_unresolved_link(512, 29, "node134<->node235", false);
  check_unresolved_link(512, 90, "node260<->node451", false);
}

TEST_CASE("a confirmed link clearly fast in a retest after it read slow is undecided, not link.slow (400 nodes, seeds 109, 132)",
          "[analysis][intermittent]") {
  // node360 (seed 109), slow in half the rounds, was fine with another partner in round 2 (its fault
  // off), and its link with its screen partner node346 then read about 3x in 5 of 6 retests and
  // 1.0x in one (round 4): confirmed as a slow link "while both ends are fine with other partners", a
  // false finding whose next step says not to drain. A steady 3x link never reads 1x at 5% noise.
  check_unresolved_link(400, 109, "node346<->node360", true);
  check_unresolved_link(400, 132, "node29<->node383", true);
}

TEST_CASE("the intermittent rule leaves out the test that made a node a suspect (healthy, N=1,000, noise 10%, seed 257)",
          "[analysis][intermittent]") {
  // node503 was slow in pair tests of rounds 1, 2, 4 and 10 at a campaign pair rate of 1.34%: "4 of
  // 10 tests", a tail of 6.4e-6, within 0.01 over the nodes tested, so node.slow in a healthy
  // cluster. The screen test of round 1 is what made it a suspect; 3 of 9 (1.9e-4) is not within
  // 1e-4 over the nodes tested.
  const auto r = kiln::analysis::simulate_trial(healthy(1000, 0.10), 257, false);
  CHECK(r.findings == 0);
  CHECK(r.unresolved == 0);
}
