// The planner with per-edge figures on clusters larger than one timed group (256 members, as the live
// check and the simulator time peers only up to it): the edge cover times every edge in groups of at
// most 256, a mild (1.25x) link and node are found within the rounds bound, and a slow group whose
// edges are read is not bisected on its figure.
#include "common/findings.hpp"
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/analysis/planner.hpp"

using kiln::analysis::GroupOutcome;
using kiln::analysis::Planner;
using kiln::analysis::PlannerConfig;
using kiln::analysis::RoundPlan;

namespace {

using Pair = std::pair<int, int>;
constexpr std::size_t kTimedGroup = 256;

struct Model {
  std::set<int> bad;
  std::set<Pair> links;  // (low, high)
  double factor = 1.25;
  bool edges = true;     // groups of at most kTimedGroup report per-edge figures, pairs included
  // A link read with exactly these factors in turn, in the timed groups of 4 or more that hold it
  // (fine in pair tests and after the script: a path slow only under an all-to-all's load).
  Pair scripted{-1, -1};
  std::vector<double> script;
  mutable std::size_t script_at = 0;
};

// Deterministic jitter of about +-3% per (round, edge).
double jitter(std::int64_t round, int a, int b) {
  std::uint64_t h = static_cast<std::uint64_t>(round) * 0x9E3779B97F4A7C15ull ^
                    static_cast<std::uint64_t>(a) * 0xBF58476D1CE4E5B9ull ^ static_cast<std::uint64_t>(b) * 0x94D049BB133111EBull;
  h ^= h >> 31;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return 1.0 + 0.03 * (static_cast<double>(h % 2001) / 1000.0 - 1.0);
}

GroupOutcome answer(const Model& m, const RoundPlan& plan, const std::vector<int>& g) {
  GroupOutcome o;
  o.members = g;
  const bool timed = m.edges && g.size() <= kTimedGroup;
  double sum = 0.0;
  for (std::size_t i = 0; i < g.size(); ++i)
    for (std::size_t j = i + 1; j < g.size(); ++j) {
      const Pair key{std::min(g[i], g[j]), std::max(g[i], g[j])};
      const bool slow = m.bad.count(g[i]) || m.bad.count(g[j]) || m.links.count(key);
      double e = (slow ? m.factor : 1.0) * jitter(plan.id, key.first, key.second);
      if (key == m.scripted && timed && g.size() >= 4 && m.script_at < m.script.size()) e = m.script[m.script_at++];
      sum += e;
      if (timed) o.edges.push_back({g[i], g[j], e});
    }
  o.value = sum / static_cast<double>(g.size() * (g.size() - 1) / 2);
  return o;
}

struct Result {
  std::set<std::pair<std::string, std::string>> found;  // (code, entity id)
  std::vector<RoundPlan> plans;
};

Result campaign(const Model& m, int n) {
  Planner planner(n, PlannerConfig{});
  Result r;
  while (auto plan = planner.next()) {
    std::vector<GroupOutcome> out;
    for (const auto& g : plan->groups) out.push_back(answer(m, *plan, g));
    r.plans.push_back(*plan);
    planner.observe(*plan, std::move(out));
  }
  for (const auto& f : planner.findings()) r.found.insert({kiln::to_string(f.code), f.entity.id});
  return r;
}

bool holds(const std::vector<int>& g, Pair l) {
  return std::find(g.begin(), g.end(), l.first) != g.end() && std::find(g.begin(), g.end(), l.second) != g.end();
}

std::size_t largest_group(const RoundPlan& p) {
  std::size_t m = 0;
  for (const auto& g : p.groups) m = std::max(m, g.size());
  return m;
}

double rounds_bound(int n) { return 2.0 * std::log2(static_cast<double>(n)) + 10.0; }

}  // namespace

TEST_CASE("edges2: past 256 nodes the edge cover times every edge in groups of at most 256", "[analysis][edges2]") {
  const int n = 600;
  Model m;
  m.links = {{3, 420}};
  m.bad = {77};
  const auto r = campaign(m, n);
  CHECK(r.found.count({"link.slow", "node3<->node420"}) == 1);
  CHECK(r.found.count({"node.slow", "node77"}) == 1);
  CHECK(r.found.size() == 2);
  CHECK(static_cast<double>(r.plans.size()) <= rounds_bound(n));
  REQUIRE(r.plans.size() >= 2);
  // The round after the screen is the cover's first: every group timed edge by edge.
  CHECK(largest_group(r.plans[1]) <= kTimedGroup);
  CHECK(r.plans[1].groups.size() >= 2);
  // Every pair of two healthy nodes shares a cover group at least once (here: the two link ends
  // and two nodes far apart in index).
  for (Pair p : {Pair{3, 420}, Pair{0, 599}, Pair{150, 451}}) {
    bool met = false;
    for (const auto& plan : r.plans)
      for (const auto& g : plan.groups) met = met || (g.size() > 2 && g.size() <= kTimedGroup && holds(g, p));
    CHECK(met);
  }
}

TEST_CASE("edges2: without per-edge figures the search keeps its one all-to-all over the cluster", "[analysis][edges2]") {
  const int n = 600;
  Model m;
  m.edges = false;
  const auto r = campaign(m, n);
  CHECK(r.found.empty());
  REQUIRE(r.plans.size() >= 2);
  CHECK(largest_group(r.plans[1]) > kTimedGroup);
}

TEST_CASE("edges2: a slow group whose edges were read is not bisected", "[analysis][edges2]") {
  const int n = 48;
  Model m;
  m.bad = {9};
  m.factor = 2.0;
  const auto r = campaign(m, n);
  CHECK(r.found.count({"node.slow", "node9"}) == 1);
  CHECK(r.found.size() == 1);
  CHECK(static_cast<double>(r.plans.size()) <= rounds_bound(n));
  // Bisection would test halves of the all-to-all (24 and 23 members) next.
  for (const auto& plan : r.plans)
    for (const auto& g : plan.groups) CHECK((g.size() != 24 && g.size() != 23));
}

// The confirm rule counts decisive retests (slow, or within the healthy spread); one that reads in
// between says nothing, and buys one more retest. Before, a 1.25x link that read slow on 2 of its 3
// edge retests and in between once was dropped when its retests ran out, neither confirmed nor
// reported (8 of the 11 links missed in 100 diluted campaigns at 4,096 nodes).
TEST_CASE("edges2: an edge retest that reads in between buys one more retest", "[analysis][edges2]") {
  const int n = 1100;
  Model m;
  m.scripted = {3, 1000};
  // Opened in the cover; retests: slow, in between (z about 2 of a 2.2% spread), slow, slow.
  m.script = {1.25, 1.25, 1.045, 1.25, 1.25};
  const auto r = campaign(m, n);
  CHECK(m.script_at >= 5);
  CHECK(r.found.count({"link.slow", "node3<->node1000"}) == 1);
  CHECK(r.found.size() == 1);
  CHECK(static_cast<double>(r.plans.size()) <= rounds_bound(n));
}

// A suspicion whose retests ran out short of the slow readings that confirm a link, none of them
// within the healthy spread, is reported undecided; it was dropped without a word.
TEST_CASE("edges2: a link suspicion left undecided when its retests run out is reported", "[analysis][edges2]") {
  const int n = 1100;
  Model m;
  m.scripted = {3, 1000};
  // Opened in the cover; retests: slow, in between three times, slow (5 retests: 3 and 2 spare).
  m.script = {1.25, 1.25, 1.045, 1.045, 1.045, 1.25};
  const auto r = campaign(m, n);
  CHECK(m.script_at == 6);
  CHECK(r.found.count({"localize.unresolved", "node3<->node1000"}) == 1);
  CHECK(r.found.count({"link.slow", "node3<->node1000"}) == 0);
}
