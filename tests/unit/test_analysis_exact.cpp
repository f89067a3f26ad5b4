// Small clusters (fewer than 8 nodes): every pair, repeated, judged exactly (strategy_exact.cpp).
// The model answers each pair with lognormal noise from a fixed seed, so a test sees what a live
// campaign would: repeats that disagree a little, and faults of a given size.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>

#include "common/findings.hpp"
#include "coordinator/analysis/planner.hpp"

using kiln::analysis::GroupOutcome;
using kiln::analysis::Planner;
using kiln::analysis::PlannerConfig;

namespace {

using Pair = std::pair<int, int>;

struct Small {
  int n = 6;
  std::set<int> bad;
  std::set<Pair> links;  // (low, high)
  double factor = 2.0;
  double noise = 0.05;
  int down = -1;  // node that stops answering from round 2
  std::uint64_t seed = 1;
  std::vector<std::vector<int>> leaves;  // topology: leaf<i> and its nodes
  int slow_leaf = -1;                    // pairs with exactly one end in this leaf are slow
  double rel_cutoff = 0.8;               // the operator's --slow-cutoff
  double link_rate = 1.0;                // the slow links are slow in this share of their tests
};

bool crosses_slow_leaf(const Small& m, int a, int b) {
  if (m.slow_leaf < 0) return false;
  const auto& l = m.leaves[static_cast<std::size_t>(m.slow_leaf)];
  const bool ia = std::count(l.begin(), l.end(), a) > 0, ib = std::count(l.begin(), l.end(), b) > 0;
  return ia != ib;
}

struct Result {
  std::set<std::pair<std::string, std::string>> found;  // (code, entity id)
  std::vector<kiln::Finding> findings;
  std::map<Pair, int> tests;  // pair tests per pair
  std::int64_t rounds = 0;
};

Result run(const Small& m) {
  std::mt19937_64 rng(m.seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::mt19937_64 flap(m.seed * 7919 + 1);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  PlannerConfig cfg;
  cfg.seed = m.seed;
  cfg.outliers.rel_cutoff = m.rel_cutoff;
  std::vector<kiln::analysis::Switch> topo;
  for (std::size_t i = 0; i < m.leaves.size(); ++i) topo.push_back({"leaf" + std::to_string(i + 1), m.leaves[i]});
  Planner p(m.n, cfg, topo);
  Result r;
  while (auto plan = p.next()) {
    std::vector<GroupOutcome> out;
    for (const auto& g : plan->groups) {
      REQUIRE(g.size() == 2);
      const Pair key = std::minmax(g[0], g[1]);
      ++r.tests[key];
      GroupOutcome o;
      o.members = g;
      const bool link_on = m.links.count(key) && u01(flap) < m.link_rate;
      const bool slow = m.bad.count(g[0]) || m.bad.count(g[1]) || link_on || crosses_slow_leaf(m, g[0], g[1]);
      if (m.down >= 0 && plan->id >= 2 && (g[0] == m.down || g[1] == m.down)) o.missing = {m.down};
      else o.value = 2.0 * (slow ? m.factor : 1.0) * std::exp(m.noise * z(rng));
      out.push_back(std::move(o));
    }
    p.observe(*plan, std::move(out));
  }
  r.findings = p.findings();
  for (const auto& f : r.findings) r.found.insert({kiln::to_string(f.code), f.entity.id});
  r.rounds = p.rounds();
  return r;
}

std::set<std::pair<std::string, std::string>> expect(std::initializer_list<std::pair<std::string, std::string>> l) {
  return {l};
}

}  // namespace

TEST_CASE("exact: every pair is tested at least three times", "[analysis][exact]") {
  for (int n : {3, 4, 5, 6, 7}) {
    INFO("n=" << n);
    const auto r = run({n, {}, {}, 2.0, 0.05, -1, 7});
    CHECK(r.tests.size() == static_cast<std::size_t>(n * (n - 1) / 2));
    for (const auto& [pair, k] : r.tests) CHECK(k >= 3);
    CHECK(r.found.empty());
  }
}

TEST_CASE("exact: a mild (1.25x) slow node is node.slow, not link.slow", "[analysis][exact]") {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    INFO("seed " << seed);
    const auto r = run({6, {2}, {}, 1.25, 0.05, -1, seed});
    CHECK(r.found == expect({{"node.slow", "node2"}}));
  }
}

TEST_CASE("exact: two slow nodes of five are both found, the rest are fine", "[analysis][exact]") {
  const auto r = run({5, {0, 3}, {}, 2.0, 0.05, -1, 3});
  CHECK(r.found == expect({{"node.slow", "node0"}, {"node.slow", "node3"}}));
}

TEST_CASE("exact: a slow link is link.slow, with the pair's repeats as evidence", "[analysis][exact]") {
  const auto r = run({5, {}, {{1, 4}}, 1.5, 0.05, -1, 2});
  REQUIRE(r.found == expect({{"link.slow", "node1<->node4"}}));
  const auto& ev = r.findings.front().evidence;
  CHECK(ev["pairs"][0]["tests"].get<int>() >= 3);
  CHECK(ev["pairs"][0]["slowness"].get<double>() > 1.3);
}

TEST_CASE("exact: with three nodes the slow one is slow with both partners", "[analysis][exact]") {
  const auto r = run({3, {1}, {}, 2.0, 0.05, -1, 4});
  CHECK(r.found == expect({{"node.slow", "node1"}}));
}

TEST_CASE("exact: two nodes cannot tell which end is slow: unresolved, naming both", "[analysis][exact]") {
  const auto r = run({2, {0}, {}, 3.0, 0.05, -1, 1});
  REQUIRE(r.findings.size() == 1);
  const auto& f = r.findings.front();
  CHECK(f.code == kiln::Code::LocalizeUnresolved);
  CHECK(f.entity.id == "node0<->node1");
  CHECK(f.summary.find("third") != std::string::npos);
}

TEST_CASE("exact: a node that stops answering is lost, the rest are judged", "[analysis][exact]") {
  const auto r = run({6, {4}, {}, 2.0, 0.05, 1, 5});
  CHECK(r.found == expect({{"node.lost", "node1"}, {"node.slow", "node4"}}));
}

TEST_CASE("exact: turned off with exact_below = 0", "[analysis][exact]") {
  PlannerConfig cfg;
  cfg.exact_below = 0;
  Planner p(6, cfg);
  const auto plan = p.next();
  REQUIRE(plan);
  CHECK(plan->reason.rfind("screen", 0) == 0);
}

TEST_CASE("exact: two leaves of three with a slow uplink are one switch finding on the path", "[analysis][exact]") {
  for (std::uint64_t seed : {1, 2, 3}) {
    Small m;
    m.seed = seed;
    m.leaves = {{0, 1, 2}, {3, 4, 5}};
    m.slow_leaf = 1;
    const auto r = run(m);
    CHECK(r.found == expect({{"switch.slow", "leaf1<->leaf2"}}));
    REQUIRE(r.findings.size() == 1);
    CHECK(r.findings[0].evidence["crossing"]["slow"] == 9);
    CHECK(r.findings[0].evidence["inside"]["slow"] == 0);
  }
}

TEST_CASE("exact: three leaves, one uplink slow: the switch is named, its nodes are not", "[analysis][exact]") {
  Small m;
  m.n = 7;
  m.leaves = {{0, 1}, {2, 3}, {4, 5, 6}};
  m.slow_leaf = 2;
  CHECK(run(m).found == expect({{"switch.slow", "leaf3"}}));
  m.slow_leaf = -1;
  m.bad = {4};  // a slow node under a leaf is still a node: pairs inside its leaf are slow too
  CHECK(run(m).found == expect({{"node.slow", "node4"}}));
}

TEST_CASE("exact: a --slow-cutoff looser than the default raises the least slowdown a pair must show", "[analysis][exact]") {
  Small m;
  m.links = {{1, 4}};
  m.factor = 1.5;
  m.noise = 0.02;
  const auto by_default = run(m);
  CHECK(by_default.found.count({"link.slow", "node1<->node4"}) == 1);
  m.rel_cutoff = 0.5;  // slow only at 2x and worse
  const auto loose = run(m);
  for (const auto& [code, id] : loose.found) CHECK((code != "link.slow" && code != "node.slow"));
  m.factor = 2.5;
  const auto severe = run(m);
  CHECK(severe.found.count({"link.slow", "node1<->node4"}) == 1);
}

TEST_CASE("exact: a link slow in some of its tests is tested again and named, never dropped", "[analysis][exact]") {
  int named = 0, intermittent = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    INFO("seed " << seed);
    Small m{6, {}, {{1, 4}}, 2.0, 0.02, -1, seed};
    m.link_rate = 0.4;
    const auto r = run(m);
    // Whatever its readings, the pair is the only thing named: as a link, or unresolved.
    for (const auto& [code, id] : r.found) CHECK(id == "node1<->node4");
    if (r.found.empty()) continue;
    ++named;
    for (const auto& f : r.findings)
      if (f.evidence.value("intermittent", false)) ++intermittent;
  }
  // A link slow in 40% of tests is seen in none of its first three in about 1 run of 5 (0.6^3), and
  // one far reading alone is taken for a straggler: those runs cannot name it. Measured: 14 of 20
  // (4 as intermittently slow); by the median of three tests alone, as before, about 7.
  WARN("named in " << named << " of 20 runs, " << intermittent << " as intermittently slow");
  CHECK(named >= 12);
  CHECK(intermittent >= 3);
}

TEST_CASE("exact: healthy pairs with a few percent of noise raise no intermittent suspicion", "[analysis][exact]") {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    INFO("seed " << seed);
    const auto r = run({6, {}, {}, 2.0, 0.03, -1, seed});
    CHECK(r.found.empty());
    for (const auto& [pair, k] : r.tests) CHECK(k == 3);  // no retests
  }
}
