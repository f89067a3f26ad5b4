// `kiln simulate` core: the model cluster, precision/recall accounting and the circle baseline.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/analysis/planner.hpp"
#include "coordinator/analysis/simulate.hpp"
#include "simulate_fixtures.hpp"

using kiln::analysis::run_simulate;
using kiln::analysis::SimulateOptions;
using kiln::analysis::simulate_trial;

namespace {
using simulate_fixtures::story_says;

// A healthy 8-node campaign at 20% noise without a reference, with its story.
auto healthy_eight_at_twenty_percent(std::uint64_t seed) {
  auto o = kiln::analysis::parse_simulate_options({{"model", "diluted"}, {"bad-nodes", "0"}, {"bad-links", "0"},
                                                   {"noise", "0.20"}, {"per-peer", "on"}, {"nodes", "8"}});
  o.story = true;
  return simulate_trial(o, seed, true);
}
}  // namespace

TEST_CASE("simulate finds one bad node in 1024 nodes within log2(N)+4 rounds", "[analysis][simulate]") {
  SimulateOptions opt;
  opt.nodes = 1024;
  opt.bad_nodes = 1;
  opt.noise = 0.10;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const auto r = simulate_trial(opt, seed, true);
    CHECK(r.true_positives == 1);
    CHECK(r.findings == 1);
    CHECK(r.rounds <= 10 + 4);
  }
}

TEST_CASE("simulate finds one bad link in 1024 nodes within 2*log2(N)+6 rounds", "[analysis][simulate]") {
  SimulateOptions opt;
  opt.nodes = 1024;
  opt.bad_nodes = 0;
  opt.bad_links = 1;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const auto r = simulate_trial(opt, seed, true);
    CHECK(r.true_positives == 1);
    CHECK(r.findings == 1);
    CHECK(r.rounds <= 2 * 10 + 6);
    CHECK(r.detail["findings"][0]["code"] == "link.slow");
  }
}

TEST_CASE("simulate JSON reports the circle baseline and precision/recall", "[analysis][simulate]") {
  SimulateOptions opt;
  opt.nodes = 64;
  opt.bad_nodes = 2;
  opt.bad_links = 1;
  opt.trials = 3;
  opt.json = true;
  std::ostringstream out;
  REQUIRE(run_simulate(opt, out) == 0);
  const auto j = nlohmann::json::parse(out.str());
  CHECK(j["circle_rounds"] == 63);
  CHECK(j["precision"] == 1.0);
  CHECK(j["recall"] == 1.0);
  CHECK(j["rounds_max"].get<int>() < 63);
  CHECK(j["modelled_seconds_mean"].get<double>() < j["circle_modelled_seconds"].get<double>());
}

TEST_CASE("simulate full mode runs the circle method", "[analysis][simulate]") {
  SimulateOptions opt;
  opt.nodes = 16;
  opt.bad_nodes = 0;
  opt.bad_links = 1;
  opt.mode = "full";
  const auto r = simulate_trial(opt, 3, true);
  CHECK(r.rounds >= 15);
  CHECK(r.true_positives == 1);
  CHECK(r.findings == 1);
}

TEST_CASE("simulate rejects impossible options", "[analysis][simulate]") {
  SimulateOptions opt;
  opt.nodes = 1;
  std::ostringstream out;
  CHECK(run_simulate(opt, out) == 2);
  CHECK(out.str().find("--nodes") != std::string::npos);
}

TEST_CASE("simulate rejects zero votes with exit code 2", "[analysis][simulate]") {
  SimulateOptions opt;
  opt.votes = 0;
  std::ostringstream out;
  CHECK(run_simulate(opt, out) == 2);
  CHECK(out.str().find("--votes must be between 1 and 100") != std::string::npos);
  opt.votes = -3;
  std::ostringstream out2;
  CHECK(run_simulate(opt, out2) == 2);
}

TEST_CASE("simulate: a node slow in most of its edges on a noisy fabric gets a distinct partner per slow row", "[analysis][simulate]") {
  using kiln::analysis::one_fault_round_bound;
  using kiln::analysis::parse_simulate_options;
  // A port capped at half a pair test's rate, the all-to-all at 0.75 of it (1.5x in rows), noise
  // 20%, 8 nodes: its rows are slow with a few of their peers, and a row with fewer than 7 slow
  // edges votes once. The vote went to the first slow edge's peer, or to nobody when no edge was
  // past the cutoff alone, so these seeds ended with no finding (the live 8-node testbed: a 2x port
  // "intermittently slow (7 of 7 tests)", unresolved). Each row now votes with a peer it has no
  // vote with yet.
  auto o = parse_simulate_options({{"model", "rate-cap"}, {"a2a-demand", "0.75"}, {"bad-links", "0"},
                                   {"noise", "0.20"}, {"per-peer", "on"}, {"nodes", "8"}});
  for (std::uint64_t seed : {6, 8, 9, 16}) {
    const auto r = simulate_trial(o, seed, true);
    INFO("seed " << seed << ": " << r.detail["findings"].dump());
    CHECK(r.true_positives == 1);
    CHECK(r.false_findings == 0);
    CHECK(r.rounds <= one_fault_round_bound(8));
  }
}

TEST_CASE("simulate: a node whose rows lean slow far more often than the others' is found", "[analysis][simulate]") {
  using kiln::analysis::one_fault_round_bound;
  using kiln::analysis::parse_simulate_options;
  // The port above at 20% noise: its rows read 1.5x, a level of 1.1-1.7 where a slow row needs 2, so
  // with 4-6 rows a campaign no row of it was slow often enough to vote, and these seeds passed with
  // no finding (node found in 25 of 100 campaigns at 8 and at 12 nodes). Its rows lean in most rounds,
  // the others' in 0.1-0.3%: the leaning-row rule names it.
  const std::vector<std::pair<int, std::vector<std::uint64_t>>> cases = {{8, {1, 10, 12}}, {12, {3, 9, 10}}};
  for (const auto& [n, seeds] : cases) {
    auto o = parse_simulate_options({{"model", "rate-cap"}, {"a2a-demand", "0.75"}, {"bad-links", "0"},
                                     {"noise", "0.20"}, {"per-peer", "on"}, {"nodes", std::to_string(n)}});
    for (std::uint64_t seed : seeds) {
      const auto r = simulate_trial(o, seed, true);
      INFO("N=" << n << " seed " << seed << ": " << r.detail["findings"].dump());
      CHECK(r.true_positives == 1);
      CHECK(r.false_findings == 0);
      CHECK(r.rounds <= one_fault_round_bound(n));
      REQUIRE(r.detail["findings"].size() == 1u);
      CHECK(r.detail["findings"][0]["summary"].get<std::string>().find("leans slow in") != std::string::npos);
    }
  }
}

namespace {
// A port capped at half a pair test's rate, the all-to-all at 0.4 of it (`rate-cap --a2a-demand 0.4`,
// the node alone), on seeds 1..seeds: named node.slow "in pair tests" within the one-fault bound,
// with nothing else.
void check_capped_port_found_in_pair_tests(int n, std::uint64_t seeds) {
  const auto o = kiln::analysis::parse_simulate_options({{"model", "rate-cap"}, {"a2a-demand", "0.4"}, {"bad-links", "0"},
                                                         {"per-peer", "on"}, {"nodes", std::to_string(n)}});
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    const auto r = simulate_trial(o, seed, true);
    INFO("N=" << n << " seed " << seed << ": " << r.detail["findings"].dump());
    CHECK(r.true_positives == 1);
    CHECK(r.false_findings == 0);
    CHECK(r.rounds <= kiln::analysis::one_fault_round_bound(n));
    REQUIRE(r.detail["findings"].size() == 1u);
    CHECK(r.detail["findings"][0]["code"] == "node.slow");
    CHECK(r.detail["findings"][0]["summary"].get<std::string>().find("in pair tests") != std::string::npos);
  }
}
}  // namespace

TEST_CASE("simulate: a rate cap that only pair tests reach is found, not cleared by fine all-to-all groups", "[analysis][simulate]") {
  using kiln::analysis::one_fault_round_bound;
  using kiln::analysis::parse_simulate_options;
  // A port capped at half a pair test's rate while the all-to-all pushes 0.4 of it per rank (eight
  // ranks on two cores): the node's rows are fine, its pair tests slow. The planner before pair-only
  // links cleared its slow screen pair on the fine row and passed the cluster (recall 0 in 100).
  check_capped_port_found_in_pair_tests(12, 6);
  // A path capped at half a pair test's rate shows in no group of three or more. When the screen
  // pairs its ends (seed 3 of 8 nodes), pair retests confirm it and its ends are fine in pairs with
  // other partners: link.slow, not a node.
  auto link = parse_simulate_options({{"model", "rate-cap"}, {"bad-nodes", "0"}, {"per-peer", "on"}, {"nodes", "8"}});
  const auto r = simulate_trial(link, 3, true);
  INFO(r.detail["findings"].dump());
  CHECK(r.true_positives == 1);
  CHECK(r.findings == 1);
  CHECK(r.rounds <= one_fault_round_bound(8));
  CHECK(r.detail["findings"][0]["summary"].get<std::string>().find("rate cap") != std::string::npos);
  // Healthy at 20% noise: a slow screen pair read fine in its row is retested as a pair, and a
  // pair-only link needs three slow retests (seed 43 of 12 nodes had a false link.slow on two).
  auto healthy = parse_simulate_options({{"model", "diluted"}, {"bad-nodes", "0"}, {"bad-links", "0"},
                                         {"noise", "0.20"}, {"per-peer", "on"}, {"nodes", "12"}});
  CHECK(simulate_trial(healthy, 43, true).findings == 0);
}

TEST_CASE("simulate: past 256 nodes a port capped below a pair test's rate is still found in pair tests", "[analysis][simulate]") {
  // Above 256 nodes a slow screen pair's link was retested only inside the cover's groups, read fine
  // there and cleared, and its ends were known-good from their rows: none of 50 campaigns at 4,096
  // nodes found the port, and these seeds passed silently at 1,100. Its screen pair is now retested
  // as a pair, and its ends checked in pair tests, at every size.
  check_capped_port_found_in_pair_tests(1100, 4);
}

// Half of a 16-node cluster 2x (`--model severity --bad-nodes 8`): seeds 3 and 5 passed with no
// finding at all without a reference (the screen held no pair of two good nodes); the all-to-all's
// fast core names all 8 now (below), and a reference (a spec's figure for the check) does too. A healthy 16 nodes at 20% noise, seed 1213: with
// no reference it had a false node.slow until control pairs (strategy_control.cpp) showed the
// screen's fast pairs to be the noise's fast tail; with one, nothing either.
TEST_CASE("simulate: a reference finds half of a small cluster slow, and keeps wide noise healthy", "[analysis][simulate]") {
  auto o = kiln::analysis::parse_simulate_options({{"model", "severity"}, {"bad-nodes", "8"}, {"nodes", "16"}, {"per-peer", "on"}});
  for (std::uint64_t seed : {3, 5}) {
    INFO("seed " << seed);
    o.reference = 1.0;
    const auto r = simulate_trial(o, seed, true);
    CHECK(r.true_positives == 8);
    CHECK(r.false_findings == 0);
    CHECK(r.unresolved == 0);
  }
  auto h = kiln::analysis::parse_simulate_options(
      {{"model", "diluted"}, {"bad-nodes", "0"}, {"bad-links", "0"}, {"noise", "0.2"}, {"nodes", "16"}, {"per-peer", "on"}});
  CHECK(simulate_trial(h, 1213, true).false_findings == 0);
  h.reference = 1.0;
  const auto r = simulate_trial(h, 1213, true);
  CHECK(r.false_findings == 0);
  CHECK(r.findings == 0);
}

// A port capped 1.25x, the all-to-all at 0.4 of a pair test's rate (so only pair tests see it), at
// 1,024 nodes, seed 5: its pair retests with node355 confirmed "link node76<->node355" before the
// edge cover read that edge, since node76 had read fine once with another partner (z 3). The ends
// of a link a slow pair opened must now be fine in pair tests by the pair-only rule's measure, and
// node76 is named.
TEST_CASE("simulate: a mildly capped port at 1,024 nodes is named as the node, not as one of its links", "[analysis][simulate]") {
  const auto o = kiln::analysis::parse_simulate_options(
      {{"model", "rate-cap"}, {"slow-factor", "1.25"}, {"a2a-demand", "0.4"}, {"nodes", "1024"}, {"per-peer", "on"}});
  const auto r = simulate_trial(o, 5, true);
  CHECK(r.false_findings == 0);
  bool node = false;
  for (const auto& f : r.detail["findings"]) {
    CHECK(f["entity"]["kind"] != "link");
    node = node || (f["code"] == "node.slow" && f["entity"]["id"] == "node76");
  }
  CHECK(node);
}

TEST_CASE("simulate: half of 12 nodes at 1.5x, 5-10% noise, with a reference: an in-between pair test clears no suspect",
          "[analysis][simulate]") {
  using kiln::analysis::parse_simulate_options;
  // In these campaigns slow nodes read together (or with a healthy partner) 1.19-1.25x of a round whose
  // median sat between the two levels, at z 1.5-3.0: fast, and known-good from then on. A healthy node
  // slow with three of them was named (seeds 38 and 94, which also left 3 of the 6 unfound), or no
  // slow node was found at all (seed 40). A pair test of a suspect clears it only below z 2 against
  // the faster of its baseline and the reference (evidence_edges.cpp, pair_in_between).
  struct Case {
    const char* model;
    const char* noise;
    std::uint64_t seed;
  };
  for (const auto& c : {Case{"rate-cap", "0.10", 38}, Case{"severity", "0.05", 40}, Case{"severity", "0.05", 94}}) {
    auto o = parse_simulate_options({{"model", c.model}, {"a2a-demand", "0.4"}, {"bad-nodes", "6"}, {"bad-links", "0"},
                                     {"slow-factor", "1.5"}, {"noise", c.noise}, {"per-peer", "on"}, {"nodes", "12"},
                                     {"reference", "1"}});
    const auto r = simulate_trial(o, c.seed, true);
    INFO(c.model << " noise " << c.noise << " seed " << c.seed << ": " << r.detail["findings"].dump());
    CHECK(r.false_findings == 0);
    CHECK(r.true_positives == 6);
  }
}

TEST_CASE("simulate: a healthy node held by an in-between pair test meets its next partners in pairs", "[analysis][simulate]") {
  using kiln::analysis::parse_simulate_options;
  // 16 healthy nodes at 20% noise with a reference: node9's screen pair read 1.58x, its next pair
  // 1.18x at z 2.2 (in between). Timed as a row instead, it sat in five all-to-all groups judged
  // uniformly slow (1.3-1.4x a shallow history), which decide nothing, and ended unresolved.
  auto o = parse_simulate_options({{"model", "diluted"}, {"bad-nodes", "0"}, {"bad-links", "0"}, {"noise", "0.20"},
                                   {"per-peer", "on"}, {"nodes", "16"}, {"reference", "1"}});
  o.story = true;
  const auto r = simulate_trial(o, 101646, true);
  INFO(r.detail["findings"].dump());
  CHECK(r.false_findings == 0);
  CHECK(r.unresolved == 0);
  bool held = false;
  for (const auto& round : r.detail["story"]["rounds"])
    for (const auto& c : round["concluded"]) held = held || c.get<std::string>().find("not clearly fine") != std::string::npos;
  CHECK(held);
}

TEST_CASE("simulate: with a reference, a pair round's own narrow spread does not name a healthy node", "[analysis][simulate]") {
  using kiln::analysis::parse_simulate_options;
  // 24 healthy nodes at 20% noise: the 12 pairs of round 2 spread 0.058 (log MAD) among themselves,
  // and node12 read 1.26x and 1.34x at z 4.0 and 5.4: a false node.slow. With a reference the pair
  // spread is at least the reference's (a third of the relative cutoff).
  auto o = parse_simulate_options({{"model", "diluted"}, {"bad-nodes", "0"}, {"bad-links", "0"}, {"noise", "0.20"},
                                   {"per-peer", "on"}, {"nodes", "24"}, {"reference", "1"}});
  const auto r = simulate_trial(o, 101463, true);
  INFO(r.detail["findings"].dump());
  CHECK(r.false_findings == 0);
}

TEST_CASE("simulate: with a reference, a small cluster's pair tests take the pair history's own wider spread", "[analysis][simulate]") {
  using kiln::analysis::parse_simulate_options;
  // 8 healthy nodes at 20% noise: pair tests judged against the reference's third of the cutoff
  // (0.074) read 1.4-1.9x at z 4.4-8 and named a healthy node (seeds 736, 2323, 2499, 2744: 6 false
  // findings in 3,000 campaigns, 1 after). The pair history's own spread (about 0.2) judges them.
  auto o = parse_simulate_options({{"model", "diluted"}, {"bad-nodes", "0"}, {"bad-links", "0"}, {"noise", "0.20"},
                                   {"per-peer", "on"}, {"nodes", "8"}, {"reference", "1"}});
  for (std::uint64_t seed : {736, 2323, 2499, 2744}) {
    const auto r = simulate_trial(o, seed, true);
    INFO("seed " << seed << ": " << r.detail["findings"].dump());
    CHECK(r.false_findings == 0);
  }
}

TEST_CASE("simulate: held pair tests are judged again against the level a vouching control read", "[analysis][simulate]") {
  // 8 healthy nodes at 20% noise, no reference, seed 1152: node2 read 1.64x twice (z 4.4) against two
  // fast screen pairs, the control read 1.15x of them and vouched, and the two held votes named
  // node2. Against the level the control read they are 1.43x (z 3.2): dropped, and node2 meets
  // other partners.
  const auto r = healthy_eight_at_twenty_percent(1152);
  INFO(r.detail["findings"].dump());
  CHECK(r.false_findings == 0);
  CHECK(r.unresolved == 0);
  CHECK(story_says(r.detail, "is not slow against the level the control read"));
}

TEST_CASE("simulate: without a reference, a control pair refutes a history that was the noise's fast tail", "[analysis][simulate]") {
  using kiln::analysis::parse_simulate_options;
  // 12 healthy nodes at 20% noise, no reference: the screen's fast cluster (2 pairs at about 0.6x of
  // the rest) was the pair history, every later pair read 1.6-2.6x against it (history(all-slow)),
  // and 7 healthy nodes (seed 101828) or 2 (seed 101959) were named. The slow pair tests are held.
  // Seed 101828: two control pairs of known-good nodes read 1.76x and 1.85x of that history, which
  // is dropped with them. Seed 101959: the first read 1.39x, the second 1.03x; the held tests count,
  // and name nobody.
  for (const std::uint64_t seed : {101828u, 101959u}) {
    auto o = parse_simulate_options({{"model", "diluted"}, {"bad-nodes", "0"}, {"bad-links", "0"}, {"noise", "0.20"},
                                     {"per-peer", "on"}, {"nodes", "12"}});
    o.story = true;
    const auto r = simulate_trial(o, seed, true);
    INFO("seed " << seed << ": " << r.detail["findings"].dump());
    CHECK(r.false_findings == 0);
    CHECK(r.unresolved == 0);
    int controls = 0;
    bool refuted = false;
    for (const auto& round : r.detail["story"]["rounds"])
      for (const auto& c : round["concluded"]) {
        const auto text = c.get<std::string>();
        controls += text.rfind("control pair", 0) == 0 ? 1 : 0;
        refuted = refuted || text.find("the fast tail of the noise") != std::string::npos;
      }
    CHECK(controls == (seed == 101828u ? 2 : 1));
    CHECK(refuted == (seed == 101828u));
  }
}

TEST_CASE("simulate: without a reference, a control pair vouches for the healthy level of a half-slow cluster", "[analysis][simulate]") {
  using kiln::analysis::parse_simulate_options;
  // 16 nodes, 8 of them 2x, 5% noise, no reference: the screen's fast pairs are the healthy ones, the
  // next round of suspects with known-good partners is all slow against them and is held, and the
  // control pair (two known-good nodes) reads the history's level: the held tests count, and all 8
  // slow nodes are named.
  for (const std::uint64_t seed : {1u, 2u}) {
    auto o = parse_simulate_options({{"model", "severity"}, {"bad-nodes", "8"}, {"per-peer", "on"}, {"nodes", "16"}});
    o.story = true;
    const auto r = simulate_trial(o, seed, true);
    INFO("seed " << seed << ": " << r.detail["findings"].dump());
    CHECK(r.false_findings == 0);
    CHECK(r.true_positives == 8);
    CHECK(story_says(r.detail, "the level healthy pairs reach"));
  }
}

TEST_CASE("simulate: a row test read uniformly slow against a lucky pair history asks for a control", "[analysis][simulate]") {
  // 8 healthy nodes at 20% noise, no reference, seed 101894: three of the screen's four pairs read
  // 0.7x of typical and were the history; the two suspects' six row tests (all 8 nodes in one
  // all-to-all) read 1.6x of it, uniformly slow, and were dropped, and both ended unresolved. The
  // dropped row test asks for control pairs, which read 1.41x and 1.74x of that level: the history
  // is theirs from then on, and both suspects are fine.
  const auto r = healthy_eight_at_twenty_percent(101894);
  INFO(r.detail["findings"].dump());
  CHECK(r.false_findings == 0);
  CHECK(r.unresolved == 0);
  CHECK(story_says(r.detail, "a retest group read uniformly slow"));
  CHECK(story_says(r.detail, "the history is the controls' figures"));
}
