// Pair suspects (NodeData::row_cleared, NodeData::pair_suspect, NodeData::pair_between()): a node slow
// in a pair test whose rows read fine is judged on its pair tests, since a port capped below what one
// pair test pushes reads fine in every all-to-all row. docs/localization.md, the planner, item 10.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <optional>
#include <sstream>

#include "coordinator/analysis/planner_impl.hpp"

namespace kiln::analysis {

namespace {
// A pair test of a suspect is fine for it only below this z (pair_in_between).
constexpr double kPairClearZ = 2.0;
}  // namespace

// A suspect from a slow pair test whose first fine test is a row is row-cleared (NodeData::row_cleared):
// a port capped below what one pair test pushes and above a rank's share of an all-to-all is slow in
// every pair test and fine in every row, so that row does not clear it (mark_pair_suspects).
void Planner::Impl::mark_row_cleared(const std::vector<int>& fine) {
  if (n > kSmallEdgeCluster) return;
  for (int u : fine) {
    auto& d = nodes[u];
    if (d.fast == 0 && d.slow_in_pair_test()) d.row_cleared = true;
  }
}

// A row-cleared node whose slow pair tests speak against it (one with a known-good partner after the
// screen, a vote, not a pair-only link's retest; or one with a partner since found slow, which
// explains it and so leaves the node never tested with a healthy partner) becomes a pair suspect:
// tested in pairs with known-good partners and judged on them (NodeData::pair_suspect), as the ends
// of a pair-only link are. A screen pair whose partner is known-good now is left to the pair-only
// link it opened. On the 12-node testbed with 6 ports at half rate, two slow nodes with one
// known-good vote each were timed as rows in one all-to-all of 8, read 1.1-1.4x the group's median
// edge, and were known-good from then on: 4 of the 6 found in 5 of 15 runs. A slow node whose slow
// pairs were all with other slow nodes passed the same way (tests/unit/test_analysis_half_rate.cpp).
// It is released once its fast pair tests outnumber its slow ones (strategy_resolve.cpp). Up to 256
// nodes, where suspects are timed as rows after pair tests.
void Planner::Impl::mark_pair_suspects() {
  if (n > kSmallEdgeCluster) return;
  for (int u = 0; u < n; ++u) {
    auto& d = nodes[u];
    if (!d.row_cleared || d.pair_suspect || !active(u) || !pair_tests_against(u)) continue;
    d.pair_suspect = d.pair_checked = true;
    note(name(u) + " is within its group's edges but was slow in a pair test: tested in pairs with known-good "
         "partners, since a rate cap shows only at a pair test's rate");
  }
}

// With a reference, a pair test judged fast but not clearly (z from kPairClearZ, pair_clear_z) proves
// neither member fine where one was slow in a pair test and has been fine in none: it is left out,
// as an unknown verdict is, and the suspect meets another partner, in a pair test (NodeData::pair_between()).
// With half of 12 nodes capped at 1.5x under 10% noise, two capped nodes read 1.25x together at
// z 3.0 in a round whose other pairs were mostly slow, both were known-good from then on, and a
// healthy node slow with three of them was named (seed 38).
bool Planner::Impl::pair_in_between(const std::vector<int>& g, const Judgement& j) {
  if (n > kSmallEdgeCluster || g.size() != 2 || j.verdict != Verdict::Fast) return false;
  const auto z = pair_clear_z(j);
  if (!z || *z < kPairClearZ) return false;
  for (int u : g) {
    const auto& d = nodes[u];
    // Not for a pair suspect (judged on its pair tests though its row was fine): holding its in-between
    // pair tests too left 54 unresolved findings in 100 campaigns of 12 nodes with 6 capped at 10%
    // noise (7 without), for one false link fewer.
    if (d.fast > 0 || d.bad) continue;
    if (!d.slow_in_pair_test()) continue;
    std::ostringstream t;
    t << std::fixed << std::setprecision(2) << name(g[0]) << "<->" << name(g[1]) << " read " << j.slowness
      << "x at z " << std::setprecision(1) << j.z << " (" << *z << " against the reference)"
      << ": not slow, not clearly fine; " << name(u)
      << " was slow in a pair test and meets another partner";
    note(t.str());
    nodes[u].between_z.emplace_back(g[0] == u ? g[1] : g[0], *z);
    return true;
  }
  return false;
}

// A fast pair's z against the faster of its baseline and the reference; none without a reference (a
// spec's figure). A round of pairs half of which hold a slow node has its median between the two
// levels, and two capped nodes together read 1.19x of it at z 1.5, 1.55x of the reference (12
// nodes, 6 at 1.5x, 5% noise, seed 40). Without a reference the rule held healthy suspects in more
// pair tests, and at 20% noise those made false node.slow findings: 34 in 8,000 campaigns at 8-24
// nodes, against 10 without it.
std::optional<double> Planner::Impl::pair_clear_z(const Judgement& j) const {
  const auto ref = reference_figure(cfg.outliers, cfg.size_bytes);
  if (!ref) return std::nullopt;
  if (!(j.sigma > 0.0) || !(j.expected > 0.0)) return j.z;
  const auto dir = cfg.outliers.direction;
  const double d = std::log(to_cost(j.expected, dir)) + std::log(j.slowness) - std::log(to_cost(*ref, dir));
  return std::max(j.z, d / j.sigma);
}

bool Planner::Impl::pair_tests_against(int u) const {
  const auto& d = nodes[u];
  // A retest of a pair-only link is that link's evidence, which its own rule weighs (an intermittent
  // node's link retests fell in its slow rounds, its pair checks in its quiet ones, and the link was
  // named: N=8, seed 5).
  auto retest = [&](const SlowPair& p) {
    const auto it = links.find({std::min(u, p.partner), std::max(u, p.partner)});
    return it != links.end() && it->second.pair_only_retest(p.round);
  };
  // Only the tests that made it a suspect, before its row: a slow pair test after a fine one is the
  // intermittent rules' (a node 3x slow in half the rounds, fine in its row and then slow with a
  // known-good partner, was pair-checked in its quiet rounds and found in round 22 of a bound of 18).
  return std::any_of(d.slow_pairs.begin(), d.slow_pairs.end(), [&](const SlowPair& p) {
    return p.slowness > 0.0 && p.round < d.first_fast_round &&
           ((good(p.partner) && is_vote(p.round)) || nodes[p.partner].bad) && !retest(p);
  });
}

}  // namespace kiln::analysis
