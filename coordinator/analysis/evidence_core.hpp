// A fast core in a group's per-edge figures (planner item 12, docs/localization.md): the members
// whose edges among themselves read fast while every edge of the others reads slow, so that the
// others are judged against it (Impl::read_edges, evidence_edges.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "coordinator/analysis/outliers.hpp"
#include "coordinator/analysis/planner.hpp"

namespace kiln::analysis {

// A fast core read from a group's edges (fast_core).
struct FastCore {
  std::vector<int> members;  // sorted
  bool sure = false;         // read apart by z_cutoff spreads, not half that only
  double spread = 0.0;       // the MAD spread of the edges that touch the members outside
};

// The members of a fast core, at least min_members of them, or nothing. An edge is fast when it
// reads the relative cutoff or more below the group's median edge; at least a tenth of the edges and less than half are (the median
// edge is a slow one). The core is what is left after peeling, one at a time, the member with the
// fewest fast edges to those left while that is under three quarters of them; the members outside it must
// be fast with little of each other, and the edges that touch them must read slower than the core's
// own (median against median) by the relative cutoff and by z_cutoff times their spread (sure), or
// half that (a core that counts once the same members make one again: Impl::weak_cores). Those
// members are slow with every peer, as a slow node is (a good node's edge to a slow one is slow), and
// hold the median edge: half the nodes of a small cluster 2x slow, whose screen held no pair of two
// good nodes, so the pair history is the slow level; every edge then read within the group's median
// but the good nodes' edges among themselves, which read fast, and nothing was found (16 nodes, 8 of
// them 2x, 5% noise, no reference: 14 campaigns in 40 found none). Which of them is slow, each row
// against the core says (read_edges). Noise makes no core: at 20% the fastest tenth of the edges
// holds dense little cliques, but the edges around them read only a selection's distance slower,
// short of z_cutoff spreads, and a weak one never repeats. Congestion makes none either: the edges
// inside each leaf read fast, so the members outside one core are fast with each other. On the
// 12-node testbed with 6 ports at half rate, the edges spread so wide (the order peers are served in)
// that the core read apart by 2.2-2.9 spreads, the same 6 members in each all-to-all.
// row_of: each node's place in g, -1 for others.
std::optional<FastCore> fast_core(const std::vector<int>& g, const GroupOutcome& o, const OutlierConfig& rules,
                              const std::vector<int>& row_of, std::size_t min_members);

// A fast core read from the members' rows, where fast_core reads none: the members whose row median
// (the median of their edges) falls in the fast cluster of the row medians (fast_cluster, outliers.hpp),
// at least min_members of them, every row of at least 8 edges, the members outside slow with each
// other (at most a quarter of their edges among themselves within the relative cutoff of the core's
// median edge). Always sure; its spread is that of the edges touching the members outside. At 20%
// noise a third of a cluster 2x slow holds the median edge, a good node's edges to the other good
// nodes are fast by the relative cutoff only three times in four, and peeling left no core, while the
// row medians of 63 edges fall into two clusters 0.5 apart and 0.03 wide.
std::optional<FastCore> row_core(const std::vector<int>& g, const GroupOutcome& o, const OutlierConfig& rules,
                                 const std::vector<int>& row_of, std::size_t min_members);

}  // namespace kiln::analysis
