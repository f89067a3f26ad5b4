// `kiln simulate` model mechanics: dilution, per-peer edges, intermittent faults, leaf congestion,
// rails, topology.conf parsing, option validation, and the basic model against the original one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include "coordinator/analysis/planner.hpp"
#include "coordinator/analysis/simulate.hpp"
#include "coordinator/analysis/simulate_model.hpp"
#include "coordinator/analysis/simulate_topology.hpp"

using namespace kiln::analysis;

namespace {

SimulateOptions quiet(int nodes, int bad_nodes, int bad_links) {
  SimulateOptions o;
  o.nodes = nodes, o.bad_nodes = bad_nodes, o.bad_links = bad_links;
  o.noise = 0.0, o.stragglers = 0.0, o.dilution = true, o.slow_factor = 3.0, o.test_seconds = 1.0;
  return o;
}

std::vector<int> everyone(int n) {
  std::vector<int> g(static_cast<std::size_t>(n));
  std::iota(g.begin(), g.end(), 0);
  return g;
}

double figure(const SimulateOptions& o, int group_size, std::uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  ModelCluster c(o, {}, rng);
  c.begin_round(rng);
  return *c.evaluate(everyone(group_size), rng).value;
}

}  // namespace

TEST_CASE("simulate model dilutes a slow link by its share of a rank's peers", "[analysis][simulate]") {
  // A 3x link in a 64-member all-to-all: its two ranks spend 62 edges at 1 and one at 3.
  CHECK(figure(quiet(64, 0, 1), 64) == Approx(1.0 + 2.0 / 63.0).epsilon(1e-12));
  // Above 64 peers the healthy edges come from the CLT; without noise it must agree exactly.
  CHECK(figure(quiet(300, 0, 1), 300) == Approx(1.0 + 2.0 / 299.0).epsilon(1e-12));
  // A slow node is slow on every edge: the full factor, whatever the group size.
  CHECK(figure(quiet(64, 1, 0), 64) == Approx(3.0).epsilon(1e-12));
  CHECK(figure(quiet(300, 1, 0), 300) == Approx(3.0).epsilon(1e-12));
  // Without dilution (the basic model) the link moves the whole group.
  auto undiluted = quiet(64, 0, 1);
  undiluted.dilution = false;
  CHECK(figure(undiluted, 64) == Approx(3.0));
}

TEST_CASE("simulate model reports undiluted per-peer edges up to the size cap", "[analysis][simulate]") {
  auto o = quiet(64, 0, 1);
  o.per_peer = true;
  std::mt19937_64 rng(3);
  ModelCluster c(o, {}, rng);
  c.begin_round(rng);
  const auto out = c.evaluate(everyone(64), rng);
  REQUIRE(out.edges.size() == 64u * 63u / 2u);
  const auto slow = std::count_if(out.edges.begin(), out.edges.end(), [](const EdgeFigure& e) { return e.value > 2.9; });
  CHECK(slow == 1);
  CHECK(*out.value == Approx(1.0 + 2.0 / 63.0));
  auto big = quiet(257, 0, 0);
  big.per_peer = true;
  std::mt19937_64 rng2(3);
  ModelCluster c2(big, {}, rng2);
  CHECK(c2.evaluate(everyone(257), rng2).edges.empty());
}

TEST_CASE("timed groups grow past 256 only where a 256-member edge cover misses the round bound", "[analysis][simulate]") {
  // Up to 5,819 nodes the affine cover of 256-member groups fits 2 log2 N + 10 rounds; from 5,820 it
  // would take 30 + 10 rounds against 35, at 16,384 65 + 10 against 38.
  for (std::size_t n : {2u, 256u, 257u, 1024u, 4096u, 5819u}) CHECK(timed_group_size(n) == 256u);
  CHECK(timed_group_size(5820) == 512u);
  CHECK(timed_group_size(8192) == 512u);
  CHECK(timed_group_size(16384) == 1024u);
  // From 11,639 nodes groups of 1,024; from 23,277 no size fits, and the group search (256) stays.
  CHECK(timed_group_size(11638) == 512u);
  CHECK(timed_group_size(11639) == 1024u);
  CHECK(timed_group_size(23276) == 1024u);
  CHECK(timed_group_size(23277) == 256u);
  CHECK(timed_group_size(200000) == 256u);
}

TEST_CASE("simulate model rate caps show a link only in pairs, a node only above the all-to-all demand", "[analysis][simulate]") {
  // A 2x cap: a pair test pushes one flow at the full rate and meets the cap in full; a rank of a
  // larger all-to-all pushes a2a_demand of that rate split over its peers.
  auto link = quiet(8, 0, 1);
  link.rate_caps = true, link.slow_factor = 2.0, link.per_peer = true;
  std::mt19937_64 rng(5);
  ModelCluster c(link, {}, rng);
  c.begin_round(rng);
  const auto all = c.evaluate(everyone(8), rng);
  CHECK(*all.value == Approx(1.0));
  CHECK(std::all_of(all.edges.begin(), all.edges.end(), [](const EdgeFigure& e) { return e.value == Approx(1.0); }));
  REQUIRE(all.edges.size() == 28u);
  // The capped pair: the one pair whose own test is 2x.
  int capped = 0;
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b) {
      const double v = *c.evaluate({a, b}, rng).value;
      if (v == Approx(2.0)) ++capped;
      else CHECK(v == Approx(1.0));
    }
  CHECK(capped == 1);
  // A 10x cap shows in a group whose per-peer share exceeds a tenth of a pair's: 10 / (g - 1).
  link.slow_factor = 10.0;
  CHECK(figure(link, 8) == Approx(1.0 + (10.0 / 7.0 - 1.0) / 7.0));
  // A node capped at half a pair's rate: in full in every group when the all-to-all pushes a pair
  // test's rate per rank, not at all when it pushes 0.4 of it (two cores running eight ranks).
  auto node = quiet(8, 1, 0);
  node.rate_caps = true, node.slow_factor = 2.0;
  CHECK(figure(node, 8) == Approx(2.0));
  node.a2a_demand = 0.4;
  CHECK(figure(node, 8) == Approx(1.0));
  auto big = node;
  big.nodes = 300;
  CHECK(figure(big, 300) == Approx(1.0));  // the CLT path as well
  node.a2a_demand = 0.75;
  CHECK(figure(node, 8) == Approx(1.5));
  // Without rate caps the link is as slow in a group's edge as in a pair.
  auto plain = quiet(8, 0, 1);
  plain.per_peer = true, plain.slow_factor = 2.0;
  std::mt19937_64 rng2(5);
  ModelCluster p(plain, {}, rng2);
  p.begin_round(rng2);
  const auto e = p.evaluate(everyone(8), rng2).edges;
  CHECK(std::count_if(e.begin(), e.end(), [](const EdgeFigure& x) { return x.value > 1.9; }) == 1);
}

TEST_CASE("simulate model activates an intermittent fault in about p of the rounds", "[analysis][simulate]") {
  auto o = quiet(16, 1, 0);
  o.fault_rate = 0.3;
  std::mt19937_64 rng(11);
  ModelCluster c(o, {}, rng);
  int active = 0;
  for (int round = 0; round < 2000; ++round) {
    c.begin_round(rng);
    for (int u = 0; u < 16; ++u) active += c.node_factor(u) > 1.0 ? 1 : 0;
  }
  // 600 expected; the standard deviation is about 20.
  CHECK(active > 520);
  CHECK(active < 680);
}

TEST_CASE("simulate model congestion slows only the edges across the leaf's uplink", "[analysis][simulate]") {
  auto o = quiet(32, 0, 0);
  o.per_peer = true, o.congestion_rate = 1.0, o.congestion_factor = 2.0;
  std::mt19937_64 rng(5);
  ModelCluster c(o, block_leaves(32, 8), rng);
  c.begin_round(rng);
  REQUIRE(c.congested());
  const auto truth = c.truth([](int u) { return "n" + std::to_string(u); });
  REQUIRE(truth.size() == 1);
  const std::string leaf = truth[0].key.substr(std::string("switch:").size());
  std::set<int> inside;
  for (const auto& sw : c.leaves())
    if (sw.name == leaf) inside.insert(sw.nodes.begin(), sw.nodes.end());
  REQUIRE(inside.size() == 8);
  const auto out = c.evaluate(everyone(32), rng);
  REQUIRE(out.edges.size() == 32u * 31u / 2u);
  for (const auto& e : out.edges) {
    const bool across = inside.count(e.a) != inside.count(e.b);
    CHECK(e.value == Approx(across ? 2.0 : 1.0));
  }
  // A pair inside one leaf never crosses an uplink.
  std::vector<int> within(inside.begin(), std::next(inside.begin(), 2));
  CHECK(*c.evaluate(within, rng).value == Approx(1.0));
}

TEST_CASE("simulate model turns a slow rail into a slow node", "[analysis][simulate]") {
  auto o = quiet(16, 0, 0);
  o.rails = 8, o.bad_rails = 1;
  std::mt19937_64 rng(2);
  ModelCluster stat(o, {}, rng);
  double worst = 0.0;
  for (int u = 0; u < 16; ++u) worst = std::max(worst, stat.node_factor(u));
  CHECK(worst == Approx(3.0));  // a static split waits for the slow rail
  o.rail_balance = true;
  std::mt19937_64 rng2(2);
  ModelCluster balanced(o, {}, rng2);
  worst = 0.0;
  for (int u = 0; u < 16; ++u) worst = std::max(worst, balanced.node_factor(u));
  CHECK(worst == Approx(8.0 / (8.0 - (1.0 - 1.0 / 3.0))));
}

TEST_CASE("simulate straggler factor is heavy-tailed and capped", "[analysis][simulate]") {
  CHECK(straggler_factor(0.999999) == Approx(1.0).margin(1e-5));
  CHECK(straggler_factor(0.5) > 1.2);
  CHECK(straggler_factor(0.5) < 1.4);
  CHECK(straggler_factor(1e-12) == 10.0);
}

TEST_CASE("simulate reads leaves from a SLURM topology.conf", "[analysis][simulate]") {
  const auto t = parse_topology_conf(
      "# two leaves under one spine\n"
      "SwitchName=s0 Switches=leaf[1-2]  # spine\n"
      "SwitchName=leaf1 Nodes=gpu[01-03] LinkSpeed=100\n"
      "\n"
      "SwitchName=leaf2 Nodes=gpu[04-05],login1\n");
  REQUIRE(t.names == std::vector<std::string>{"gpu01", "gpu02", "gpu03", "gpu04", "gpu05", "login1"});
  REQUIRE(t.leaves.size() == 2);
  CHECK(t.leaves[0].name == "leaf1");
  CHECK(t.leaves[0].nodes == std::vector<int>{0, 1, 2});
  CHECK(t.leaves[1].nodes == std::vector<int>{3, 4, 5});
  CHECK_THROWS_AS(parse_topology_conf("SwitchName=a Nodes=n[1-2]\nSwitchName=b Nodes=n2\n"), std::invalid_argument);
  CHECK_THROWS_AS(parse_topology_conf("Nodes=n[1-4]\n"), std::invalid_argument);
  CHECK_THROWS_AS(parse_topology_conf("SwitchName=a Nodes=n[4-1]\n"), std::invalid_argument);
}

TEST_CASE("simulate --model presets and explicit options over them", "[analysis][simulate]") {
  const auto o = parse_simulate_options({{"slow-factor", "1.5"}, {"model", "intermittent"}});
  CHECK(o.model == "intermittent");
  CHECK(o.fault_rate == 0.5);
  CHECK(o.dilution);
  CHECK(o.slow_factor == 1.5);
  CHECK_THROWS_AS(parse_simulate_options({{"model", "gentle"}}), std::invalid_argument);
  CHECK_THROWS_AS(parse_simulate_options({{"nodes", "12x"}}), std::invalid_argument);
  CHECK_THROWS_AS(parse_simulate_options({{"dilution", "yes"}}), std::invalid_argument);
  const auto capped = parse_simulate_options({{"model", "rate-cap"}, {"a2a-demand", "0.4"}});
  CHECK(capped.rate_caps);
  CHECK(capped.a2a_demand == 0.4);
  CHECK(capped.bad_nodes == 1);
  CHECK(capped.bad_links == 1);
  for (const auto& [flag, bad, message] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"fault-rate", "0", "--fault-rate"}, {"slow-factor", "1", "--slow-factor"},
           {"congestion-rate", "0.5", "--congestion-rate needs"}, {"stragglers", "0.9", "--stragglers"},
           {"topology-conf", "/nonexistent/topology.conf", "was not read"}, {"a2a-demand", "0", "--a2a-demand"},
           {"a2a-demand", "1.5", "--a2a-demand"}, {"reference", "0.05", "--reference"}, {"reference", "-1", "--reference"},
           {"reference", "11", "--reference"}}) {
    auto opt = parse_simulate_options({{flag, bad}});
    std::ostringstream out;
    CHECK(run_simulate(opt, out) == 2);
    CHECK(out.str().find(message) != std::string::npos);
  }
}

namespace {

// The original model, written out here: any bad member or both ends of a bad link make the group
// slow_factor slower; one lognormal draw per group. The basic model must drive the planner the same way.
std::pair<std::int64_t, std::vector<std::string>> original_model(const SimulateOptions& opt, std::uint64_t seed) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + 12345);
  std::uniform_int_distribution<int> pick(0, opt.nodes - 1);
  std::set<int> bad;
  while (static_cast<int>(bad.size()) < opt.bad_nodes) bad.insert(pick(rng));
  std::set<std::pair<int, int>> links;
  while (static_cast<int>(links.size()) < opt.bad_links) {
    int a = pick(rng), b = pick(rng);
    if (a == b || bad.count(a) || bad.count(b)) continue;
    links.insert({std::min(a, b), std::max(a, b)});
  }
  std::normal_distribution<double> z(0.0, 1.0);
  PlannerConfig cfg;
  cfg.seed = seed;
  Planner planner(opt.nodes, cfg);
  while (auto plan = planner.next()) {
    std::vector<GroupOutcome> outcomes;
    for (const auto& g : plan->groups) {
      const std::set<int> in(g.begin(), g.end());
      bool slow = std::any_of(g.begin(), g.end(), [&](int u) { return bad.count(u) > 0; });
      for (auto [a, b] : links) slow = slow || (in.count(a) && in.count(b));
      outcomes.push_back({g, opt.test_seconds * (slow ? opt.slow_factor : 1.0) * std::exp(opt.noise * z(rng)), false, {}});
    }
    planner.observe(*plan, std::move(outcomes));
  }
  std::vector<std::string> found;
  for (const auto& f : planner.findings()) found.push_back(f.entity.kind + ":" + f.entity.id);
  return {planner.rounds(), found};
}

}  // namespace

TEST_CASE("simulate basic model drives the planner as the original model did", "[analysis][simulate]") {
  SimulateOptions opt;  // basic is the default
  opt.nodes = 96, opt.bad_nodes = 2, opt.bad_links = 1, opt.noise = 0.08;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const auto [rounds, found] = original_model(opt, seed);
    const auto r = simulate_trial(opt, seed, true);
    CHECK(r.rounds == rounds);
    std::vector<std::string> simulated;
    for (const auto& f : r.detail["findings"])
      simulated.push_back(f["entity"]["kind"].get<std::string>() + ":" + f["entity"]["id"].get<std::string>());
    CHECK(simulated == found);
  }
}

TEST_CASE("simulate takes node names and leaves from topology.conf text", "[analysis][simulate]") {
  auto opt = parse_simulate_options({{"model", "congestion"}, {"congestion-rate", "1"}});
  opt.topology_conf = "topology.conf";
  opt.topology_text = "SwitchName=rackA Nodes=gpu[1-4]\nSwitchName=rackB Nodes=gpu[5-8]\nSwitchName=top Switches=rack[A-B]\n";
  const auto r = simulate_trial(opt, 4, true);
  REQUIRE(r.truth == 1);
  const auto truth = r.detail["truth"][0].get<std::string>();
  CHECK((truth == "switch:rackA" || truth == "switch:rackB"));
  for (const auto& f : r.detail["findings"]) {
    const auto id = f["entity"]["id"].get<std::string>();
    CHECK((id.rfind("gpu", 0) == 0 || id.rfind("rack", 0) == 0));
  }
}
