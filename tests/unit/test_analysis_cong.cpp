// Leaf congestion with per-edge figures: a leaf whose members are fast with each other and slow
// across its uplink is one switch.slow finding, and its members get no node, link or unresolved
// finding; a slow node inside a leaf is still a node, not its switch.
#include "common/findings.hpp"
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/analysis/planner.hpp"

using kiln::analysis::GroupOutcome;
using kiln::analysis::Planner;
using kiln::analysis::PlannerConfig;
using kiln::analysis::RoundPlan;
using kiln::analysis::Switch;

namespace {

constexpr int kLeafSize = 8;

struct LeafModel {
  int congested = -1;     // leaf whose uplink is slow, -1 none
  std::set<int> bad;      // every edge of these nodes is slow
  double factor = 2.0;
};

int leaf_of(int u) { return u / kLeafSize; }

// Deterministic jitter of up to +-3% per (round, edge), so the edges have a spread.
double jitter(std::int64_t round, int a, int b) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(round) * 1000003u + static_cast<std::uint64_t>(a) * 1009u +
                      static_cast<std::uint64_t>(b));
  return std::uniform_real_distribution<double>(0.97, 1.03)(rng);
}

double edge(const LeafModel& m, std::int64_t round, int a, int b) {
  const bool crosses = m.congested >= 0 && (leaf_of(a) == m.congested) != (leaf_of(b) == m.congested);
  const bool slow = crosses || m.bad.count(a) || m.bad.count(b);
  return (slow ? m.factor : 1.0) * jitter(round, std::min(a, b), std::max(a, b));
}

// The group's figure is its slowest edge (an all-to-all waits for its slowest peer); every edge is
// reported for groups of more than two, as the live check does.
GroupOutcome answer(const LeafModel& m, const RoundPlan& plan, const std::vector<int>& g) {
  GroupOutcome o;
  o.members = g;
  double worst = 0.0;
  for (std::size_t i = 0; i < g.size(); ++i)
    for (std::size_t j = i + 1; j < g.size(); ++j) {
      const double e = edge(m, plan.id, g[i], g[j]);
      worst = std::max(worst, e);
      if (g.size() > 2) o.edges.push_back({g[i], g[j], e});
    }
  o.value = worst;
  return o;
}

struct Result {
  std::vector<kiln::Finding> findings;
  std::int64_t rounds = 0;
  int count(const std::string& code) const {
    int k = 0;
    for (const auto& f : findings) k += kiln::to_string(f.code) == code ? 1 : 0;
    return k;
  }
};

Result campaign(const LeafModel& m, int n = 32) {
  std::vector<Switch> leaves;
  for (int l = 0; l * kLeafSize < n; ++l) {
    Switch s{"leaf" + std::to_string(l), {}};
    for (int u = l * kLeafSize; u < std::min(n, (l + 1) * kLeafSize); ++u) s.nodes.push_back(u);
    leaves.push_back(std::move(s));
  }
  PlannerConfig cfg;
  cfg.screen_group_size = 16;
  Planner planner(n, cfg, leaves);
  while (auto plan = planner.next()) {
    std::vector<GroupOutcome> out;
    for (const auto& g : plan->groups) out.push_back(answer(m, *plan, g));
    planner.observe(*plan, std::move(out));
  }
  return {planner.findings(), planner.rounds()};
}

}  // namespace

TEST_CASE("cong: a congested leaf is one switch finding and none for its nodes", "[analysis][cong]") {
  LeafModel m;
  m.congested = 2;
  const auto r = campaign(m);
  REQUIRE(r.count("switch.slow") == 1);
  for (const auto& f : r.findings)
    if (kiln::to_string(f.code) == "switch.slow") CHECK(f.entity.id == "leaf2");
  CHECK(r.count("node.slow") == 0);
  CHECK(r.count("link.slow") == 0);
  CHECK(r.count("localize.unresolved") == 0);
  CHECK(r.rounds <= 2 * 5 + 10);  // 2 log2 N + 10 at N = 32
}

TEST_CASE("cong: a slow node inside a leaf is a node, not its switch", "[analysis][cong]") {
  LeafModel m;
  m.bad = {19};
  const auto r = campaign(m);
  CHECK(r.count("switch.slow") == 0);
  CHECK(r.count("node.slow") == 1);
}

TEST_CASE("cong: two slow nodes of one leaf are slow with each other too: nodes, not the switch",
          "[analysis][cong]") {
  LeafModel m;
  m.bad = {17, 20};
  const auto r = campaign(m);
  CHECK(r.count("switch.slow") == 0);
  CHECK(r.count("node.slow") == 2);
}

TEST_CASE("cong: without congestion a cluster with leaves has no finding", "[analysis][cong]") {
  const auto r = campaign(LeafModel{});
  CHECK(r.findings.empty());
}
