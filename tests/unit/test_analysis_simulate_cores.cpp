// `kiln simulate` with a third to half of a cluster slow: the fast core of an all-to-all's edges and
// the row core, a common end of confirmed links, a link at an undecided node, slow by repetition,
// control pairs, and healthy clusters that make no core (docs/localization.md, items 10, 12, 13).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <tuple>

#include "coordinator/analysis/simulate.hpp"
#include "simulate_fixtures.hpp"

using kiln::analysis::simulate_trial;
using simulate_fixtures::story_says;

TEST_CASE("simulate: without a reference, an all-to-all's fast core names the half of a small cluster that is slow", "[analysis][simulate]") {
  using kiln::analysis::parse_simulate_options;
  // 16 nodes, 8 of them 2x, 5% noise, no reference. The screen held no pair of two good nodes, so
  // every pair read the slow level and the pair history is that level. The all-to-all of all 16 then
  // read every edge within the group's median but the 28 among the 8 good nodes, which read 0.5x:
  // nothing was found (these seeds and 11 more of 40). Those 28 edges are a fast core; the other 8
  // rows, judged on their edges to it, are slow with all 8 core peers, and the 8 nodes are named.
  // 8 nodes, 4 of them 2x: the core is the 6 edges among the 4 good nodes, but a core needed 5
  // members, so nothing was found (recall 0.08 over 100 seeds, no unresolved finding). A core of 4,
  // each slow row judged on its 4 edges to it, names the four (recall 0.998).
  struct Case {
    const char* nodes;
    const char* bad;
    std::vector<std::uint64_t> seeds;
  };
  for (const auto& c : {Case{"16", "8", {3, 5, 8}}, Case{"8", "4", {1, 2, 3}}})
    for (const std::uint64_t seed : c.seeds) {
      auto o = parse_simulate_options({{"model", "severity"}, {"bad-nodes", c.bad}, {"per-peer", "on"}, {"nodes", c.nodes}});
      o.story = true;
      const auto r = simulate_trial(o, seed, true);
      INFO(c.nodes << " nodes, seed " << seed << ": " << r.detail["findings"].dump());
      CHECK(r.false_findings == 0);
      CHECK(r.true_positives == std::stoi(c.bad));
      CHECK(r.unresolved == 0);
      std::size_t core = 0;
      for (const auto& round : r.detail["story"]["rounds"])
        for (const auto& e : round.value("slow", nlohmann::json::array()))
          if (e.contains("edges") && e["edges"].contains("fast_core")) core = e["edges"]["fast_core"].size();
      CHECK(core == static_cast<std::size_t>(std::stoi(c.bad)));
    }
}

TEST_CASE("simulate: a node at one end of three confirmed slow links is the slow node, not three links",
          "[analysis][simulate]") {
  using kiln::analysis::parse_simulate_options;
  // 8 nodes, 4 of them 2x, 5% noise, no reference, seeds 105 and 691: once three slow nodes were
  // named, the fourth was left among 5 good-looking nodes, whose groups of 5 give rows of 4 edges,
  // too short to judge; each of its 4 edges was retested and confirmed as a slow link (4 false
  // link.slow findings, the node unnamed). Links to 3 or more distinct partners that are fine with
  // others name their common end instead. (Seed 691's fourth node is now named before that: its one
  // slow row beside 3 slow pair tests is weighed at a row's rate, not a pair test's.)
  for (const std::uint64_t seed : {105u}) {
    auto o = parse_simulate_options({{"model", "severity"}, {"bad-nodes", "4"}, {"per-peer", "on"}, {"nodes", "8"}});
    const auto r = simulate_trial(o, seed, true);
    INFO("seed " << seed << ": " << r.detail["findings"].dump());
    CHECK(r.false_findings == 0);
    CHECK(r.true_positives == 4);
    int hubs = 0;
    for (const auto& f : r.detail["findings"])
      if (f["code"] == "node.slow" && f["evidence"].contains("slow_links_to")) {
        ++hubs;
        CHECK(f["evidence"]["slow_links_to"].size() >= 3);
      }
    CHECK(hubs == 1);
  }
}

TEST_CASE("simulate: a confirmed link at an undecided node is that node's evidence, not a link.slow",
          "[analysis][simulate]") {
  using kiln::analysis::parse_simulate_options;
  // 10 nodes, 3 of them 2x, 20% noise, seed 190: node0 is intermittently slow (3 of 6 tests) and its
  // edge to node2 was confirmed; 12 nodes, 6 of them 2x, 20% noise, seed 863: node6 is undecided (its
  // row slow against a fast core) and its edge to node7 was confirmed. Each link is its end's evidence.
  for (const auto& [nodes, bad, seed] : {std::tuple{"10", "3", 190u}, std::tuple{"12", "6", 863u}}) {
    auto o = parse_simulate_options({{"model", "severity"}, {"bad-nodes", bad}, {"noise", "0.20"},
                                     {"per-peer", "on"}, {"nodes", nodes}});
    const auto r = simulate_trial(o, seed, true);
    INFO("seed " << seed << ": " << r.detail["findings"].dump());
    CHECK(r.false_findings == 0);
    int folded = 0;
    for (const auto& f : r.detail["findings"]) {
      CHECK(f["code"] != "link.slow");
      if (f["code"] == "localize.unresolved" && f["evidence"].contains("slow_links")) ++folded;
    }
    CHECK(folded == 1);
  }
  // 8 nodes, 4 of them 2x, 10% noise, seeds 231, 340, 630 and 850: the fourth slow node, short of
  // known-good partners once three were named, was left undecided and one of its edges confirmed as
  // a link (a false link.slow), folded into it as above. With its all-to-all rows weighed at a row's
  // rate (a slow row is far rarer than a slow pair test), it is named: four node.slow, nothing else.
  auto e = parse_simulate_options({{"model", "severity"}, {"bad-nodes", "4"}, {"noise", "0.10"}, {"per-peer", "on"},
                                   {"nodes", "8"}});
  for (const std::uint64_t seed : {231u, 340u, 630u, 850u}) {
    const auto r = simulate_trial(e, seed, true);
    INFO("seed " << seed << ": " << r.detail["findings"].dump());
    CHECK(r.false_findings == 0);
    CHECK(r.true_positives == 4);
    CHECK(r.detail["findings"].size() == 4);
  }
  // A true 2x link whose end read intermittently slow only with the link's other end and a slow node
  // (topology, 8 nodes, seeds 64 and 92) is still a link.slow.
  auto t = parse_simulate_options({{"model", "topology"}, {"per-peer", "on"}, {"nodes", "8"}});
  for (const std::uint64_t seed : {64u, 92u}) {
    const auto r = simulate_trial(t, seed, true);
    INFO("seed " << seed << ": " << r.detail["findings"].dump());
    CHECK(r.false_findings == 0);
    CHECK(r.true_positives == 2);
  }
}

TEST_CASE("simulate: at 10% noise a fast core still names a third of a cluster that is slow", "[analysis][simulate]") {
  using kiln::analysis::parse_simulate_options;
  // 24 nodes, 8 of them 2x, 10% noise, no reference, seeds 1 and 2: the edges among the 16 good
  // nodes are 120 of 276, so the median edge is a slow one, and nothing was found. At 10% noise the
  // two levels overlap at their tails, so no gap splits the edges; the core is peeled from the edges
  // that read the relative cutoff below the median instead, and the 8 others are named.
  for (const std::uint64_t seed : {1u, 2u}) {
    auto o = parse_simulate_options(
        {{"model", "severity"}, {"bad-nodes", "8"}, {"noise", "0.10"}, {"per-peer", "on"}, {"nodes", "24"}});
    o.story = true;
    const auto r = simulate_trial(o, seed, true);
    INFO("seed " << seed << ": " << r.detail["findings"].dump());
    CHECK(r.false_findings == 0);
    CHECK(r.true_positives == 8);
    CHECK(r.unresolved == 0);
  }
}

TEST_CASE("simulate: at 20% noise a row core names a third of a cluster that is slow", "[analysis][simulate]") {
  using kiln::analysis::parse_simulate_options;
  // 64 nodes, 20 of them 2x, 20% noise, no reference, seeds 1-3: the screen's pairs read no gap, the
  // 64-node all-to-all's median edge is a slow one, and the peeled fast core was never sure: nothing
  // was found (recall 0.045 in 100 campaigns). The members' row medians split into two clusters, and
  // the good ones are the core the others are judged against (row_core).
  auto o = parse_simulate_options(
      {{"model", "severity"}, {"bad-nodes", "20"}, {"noise", "0.20"}, {"per-peer", "on"}, {"nodes", "64"}});
  for (const std::uint64_t seed : {1u, 2u, 3u}) {
    const auto r = simulate_trial(o, seed, true);
    INFO("seed " << seed << ": " << r.detail["findings"].dump());
    CHECK(r.false_findings == 0);
    CHECK(r.true_positives == 20);
  }
}

TEST_CASE("simulate: with a reference, a suspect whose pair tests all read in between is slow by repetition",
          "[analysis][simulate]") {
  using kiln::analysis::parse_simulate_options;
  // 64 nodes, 20 of them 2x, 20% noise, reference: a 2x node read 1.74-2.14x of the reference with six
  // known-good partners, each z 2.7-3.9 (not slow, not clearly fine), and was left unresolved when its
  // resolution tests ran out (seeds 2 and 6: recall 0.85 and 0.75). Together the readings are far
  // past the cutoff.
  auto o = parse_simulate_options({{"model", "severity"}, {"bad-nodes", "20"}, {"noise", "0.20"}, {"per-peer", "on"},
                                   {"nodes", "64"}, {"reference", "1"}});
  for (const std::uint64_t seed : {2u, 6u}) {
    const auto r = simulate_trial(o, seed, true);
    INFO("seed " << seed << ": " << r.detail["findings"].dump());
    CHECK(r.false_findings == 0);
    CHECK(r.true_positives >= 19);
    int repeated = 0;
    for (const auto& f : r.detail["findings"])
      if (f["code"] == "node.slow" && f["evidence"].contains("combined_z")) {
        ++repeated;
        CHECK(f["evidence"]["readings"].size() >= 3);
        CHECK(f["evidence"]["combined_z"].get<double>() >= 5.5);
      }
    CHECK(repeated >= 2);
  }
}

TEST_CASE("simulate: a fast core's control pairs replace a pair history that was the slow nodes' level", "[analysis][simulate]") {
  using kiln::analysis::parse_simulate_options;
  // 8 nodes, 3 of them 2x, 5% noise, no reference, seed 2: every screen pair held a slow node, so the
  // pair history was the slow level, and the slow nodes' pair tests with good partners read fine
  // against it. The all-to-all's fast core (the 5 good nodes) makes their rows slow, one vote each;
  // two control pairs of core nodes read about 0.5x of that history, which is replaced by their
  // figures, and the pair tests that follow name all three (before: all three unresolved).
  auto o = parse_simulate_options({{"model", "severity"}, {"bad-nodes", "3"}, {"per-peer", "on"}, {"nodes", "8"}});
  o.story = true;
  const auto r = simulate_trial(o, 2, true);
  INFO(r.detail["findings"].dump());
  CHECK(r.false_findings == 0);
  CHECK(r.true_positives == 3);
  CHECK(r.unresolved == 0);
  CHECK(story_says(r.detail, "that history was slow pairs"));
}

TEST_CASE("simulate: a node slow against a fast core is never dropped silently", "[analysis][simulate]") {
  using kiln::analysis::parse_simulate_options;
  // 12 nodes, 6 of them 2x, 10% noise, no reference, seed 58: every all-to-all found the fast core
  // and read the six slow rows against it (5-7 groups each), but their pair tests never confirmed
  // them, and the campaign ended with no finding at all. Each is named now (all six node.slow since
  // a core may have 4 members). 8 nodes, 4 of them 2x, 10% noise, seed 3: the core of 4 read three
  // slow rows against it three times each, and their pair tests (some with another slow node as
  // the partner) confirmed only one; the other three are localize.unresolved, naming them. 12 nodes,
  // 6 of them 2x, 20% noise, seed 9: a core showed in one all-to-all only, and the pair tests that
  // followed read the 2x pairs at z 2-3; one row against a core is enough for the six to be named.
  // (Seeds 3 and 9 now name every slow node outright, their all-to-all rows weighed at a row's rate;
  // 12 nodes, 6 of them 2x, 20% noise, seed 863 leaves all six undecided against the core.)
  struct Case {
    const char* nodes;
    const char* bad;
    const char* noise;
    std::uint64_t seed;
    int unresolved_at_least;
  };
  for (const Case c : {Case{"12", "6", "0.10", 58, 0}, Case{"8", "4", "0.10", 3, 0}, Case{"12", "6", "0.20", 9, 0},
                       Case{"12", "6", "0.20", 863, 6}}) {
    auto o = parse_simulate_options({{"model", "severity"}, {"bad-nodes", c.bad}, {"noise", c.noise}, {"per-peer", "on"},
                                     {"nodes", c.nodes}});
    const auto r = simulate_trial(o, c.seed, true);
    INFO(c.nodes << " nodes, noise " << c.noise << ", seed " << c.seed << ": " << r.detail["findings"].dump());
    CHECK(r.false_findings == 0);
    CHECK(r.true_positives + r.unresolved == std::stoi(c.bad));
    CHECK(r.unresolved >= c.unresolved_at_least);
    int core_rows = 0;
    for (const auto& f : r.detail["findings"])
      core_rows += f["evidence"].contains("slow_rows_against_fast_core") ? 1 : 0;
    CHECK(core_rows == r.unresolved);
  }
}

TEST_CASE("simulate: healthy small clusters at 20% noise make no fast core", "[analysis][simulate]") {
  using kiln::analysis::parse_simulate_options;
  // Noise alone makes no fast core: at 20% the fastest edges hold dense little cliques, but the
  // edges around them read only a selection's distance slower. 200 healthy campaigns of 24 nodes at
  // 20% noise, none of whose stories holds a fast core or a level control.
  auto o = parse_simulate_options({{"model", "diluted"}, {"bad-nodes", "0"}, {"bad-links", "0"}, {"noise", "0.20"},
                                   {"per-peer", "on"}, {"nodes", "24"}});
  o.story = true;
  int cores = 0, false_findings = 0;
  for (std::uint64_t seed = 200001; seed <= 200200; ++seed) {
    const auto r = simulate_trial(o, seed, true);
    false_findings += r.false_findings;
    for (const auto& round : r.detail["story"]["rounds"]) {
      for (const auto& e : round.value("slow", nlohmann::json::array()))
        cores += e.contains("edges") && e["edges"].contains("fast_core") ? 1 : 0;
      for (const auto& c : round["concluded"])
        cores += c.get<std::string>().find("control pairs of core nodes") != std::string::npos ? 1 : 0;
    }
  }
  CHECK(cores == 0);
  CHECK(false_findings == 0);
}
