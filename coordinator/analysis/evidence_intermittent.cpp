// Intermittent nodes: one fast result does not make a node known-good for good. Every pair test a
// node was in is counted, and a slow one counts against it when the partner was clean (slow with
// nobody else). A node slow again and again with clean partners while also fast is intermittently
// slow: node.slow with the rate observed, or, short of enough tests, localize.unresolved naming it.
// docs/localization.md, the planner, item 7.
#include <algorithm>
#include <set>

#include "coordinator/analysis/planner_impl.hpp"

namespace kiln::analysis {

namespace {

// Slow pair tests with clean partners before a node is intermittently slow; fewer (but two, with
// distinct partners: a watched node) when the tests run out is an unresolved finding. Noise makes a pair slow in
// about 1% of tests: four of a handful of tests is far beyond it. With more noise the count must also
// be beyond a binomial tail at the measured rate (significant_intermittent, evidence_noise.cpp).
constexpr int kIntermittentSlow = 4;
// Watched (tested again) only while its slow tests are unlikely from noise at the measured pair rate:
// a loose level, since watching costs a test and not a finding. Reported unresolved at the
// intermittent rule's level (intermittent_unresolved).
constexpr double kWatchLevel = 0.05;

}  // namespace

int nodes_tested(const std::vector<PairRecord>& rec) {
  return static_cast<int>(std::count_if(rec.begin(), rec.end(), [](const PairRecord& r) { return r.tests > 0; }));
}

std::vector<PairRecord> Planner::Impl::pair_records() const {
  std::vector<int> slow_tests(static_cast<std::size_t>(n), 0);
  for (const auto& t : pair_tests)
    if (t.slow) ++slow_tests[t.a], ++slow_tests[t.b];
  std::vector<PairRecord> rec(static_cast<std::size_t>(n));
  std::vector<std::set<int>> partners(static_cast<std::size_t>(n));
  std::vector<char> slow_seen(static_cast<std::size_t>(n), 0);  // a slow pair test of it met (in round order)
  for (const auto& t : pair_tests) {
    const bool first_a = t.slow && !slow_seen[t.a], first_b = t.slow && !slow_seen[t.b];
    if (t.slow) slow_seen[t.a] = slow_seen[t.b] = 1;
    // A pair-only link's retests are its own record (LinkData::pair_only): the slow test that opened
    // it counts for its ends, as any slow pair test does, its retests do not, and none once it is
    // confirmed (in Full mode its ends were then reported intermittent, 2 slow of 47).
    if (t.slow && pair_only_links > 0) {
      const auto& l = links.at(std::minmax(t.a, t.b));
      if (l.pair_only && (l.confirmed || l.pair_only_retest(t.round))) continue;
    }
    for (auto [u, v] : {std::pair{t.a, t.b}, std::pair{t.b, t.a}}) {
      auto& r = rec[u];
      if (!t.slow) {
        ++r.tests;
        continue;
      }
      // A partner slow with others as well may be the slow one: the test says nothing about u.
      // Its slow tests with u itself (an intermittent u may meet it more than once) are not others:
      // they are the pair's link record (record_slow_pair keeps every slow pair test there).
      const int others = slow_tests[v] - static_cast<int>(links.at(std::minmax(u, v)).slow_pair_tests.size());
      if (nodes[v].bad || others > 0) continue;
      ++r.tests, ++r.slow;
      r.first_slow_counted = r.first_slow_counted || (u == t.a ? first_a : first_b);
      partners[u].insert(v);
    }
  }
  // Rows: a slow row is slow with most of its peers at once, each clean unless bad itself. A
  // pair-checked node's fine rows are no tests of it: they did not load its port as a pair test does,
  // so a port cap that only pair tests reach is slow in all of its tests, not some (intermittent).
  for (int u = 0; u < n; ++u) {
    const auto& d = nodes[u];
    rec[u].row_tests = d.pair_checked ? d.slow_rows : d.rows;
    rec[u].row_slow = d.slow_rows;
    rec[u].tests += rec[u].row_tests;
    rec[u].slow += rec[u].row_slow;
    for (int v : d.row_partners)
      if (!nodes[v].bad) partners[u].insert(v);
    rec[u].distinct = static_cast<int>(partners[u].size());
  }
  return rec;
}

bool Planner::Impl::watched(int u, const PairRecord& r) const {
  const auto& d = nodes[u];
  // Slow with one partner only is a link candidate's business (its retests decide it). A node whose
  // rows lean more often than the others' (lean_tail, at the watch level over the n nodes) is timed
  // again as well: a 2x port at 20% noise leans in most rows of a cluster of 8 and has only 4-6.
  if (!active(u) || d.fast == 0 || d.resolution_tests >= cfg.max_tests_per_node) return false;
  return (r.distinct >= 2 && beyond_noise(u, r, kWatchLevel)) || lean_tail(u) < kWatchLevel / n;
}

// At the intermittent rule's own level (significant_intermittent): at noise::kAlpha per node, 2 slow
// pair tests of 15 made a healthy node of 1,024 "intermittently slow (2 of 15 tests)", unresolved, in
// 5 of 500 healthy campaigns (a warning, so a failed verdict).
bool Planner::Impl::intermittent_unresolved(int u, const PairRecord& r, int tested) const {
  return active(u) && r.slow >= 2 && r.distinct >= 2 && !watched(u, r) && significant_intermittent(u, r, tested);
}

// Slow with clean partners kIntermittentSlow times, with two or more of them, and fast as well:
// intermittently slow. Marked bad, so it leaves the search and its links are no candidates.
void Planner::Impl::mark_intermittent(std::int64_t round) {
  count_pair_rates();
  const auto rec = pair_records();
  const int tested = nodes_tested(rec);
  for (int u = 0; u < n; ++u) {
    auto& d = nodes[u];
    const auto& r = rec[u];
    if (!active(u) || r.slow < kIntermittentSlow || r.distinct < 2 || r.slow == r.tests) continue;
    if (!significant_intermittent(u, r, tested)) continue;  // within what the campaign's noise does
    d.bad = d.intermittent = true;
    d.bad_round = round;
    note(name(u) + " is slow in " + std::to_string(r.slow) + " of " + std::to_string(r.tests) +
         " pair tests with clean partners: intermittently slow node");
  }
}

}  // namespace kiln::analysis
