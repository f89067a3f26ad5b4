// Round strategies: one unit per round type. A strategy reads the planner's state (Planner::Impl)
// and adds the groups it wants to the round being drafted, or nothing; Planner::next() asks them
// in priority order and Planner::observe() routes outcomes back. Not part of the API.
//
//   exact      strategy_exact.cpp      fewer than 8 nodes: every pair, repeated, judged exactly
//   all-pairs  strategy_all_pairs.cpp  Full mode: the circle method, every pair exactly once
//   screen     strategy_screen.cpp     Adaptive mode, first round: every node in one group
//   control    strategy_control.cpp    while pair tests are held against a shallow history: one pair
//                                      of known-good nodes, to show whether it is the healthy level
//   resolve    strategy_resolve.cpp    suspects meet known-good partners (as rows in all-to-all
//                                      groups with per-edge figures up to 256 nodes and past
//                                      the edge cover's reach, about 5,800, else as pairs); link
//                                      candidates short of votes are retested as pairs; waits
//                                      while the affine edge cover (past 1,024 nodes) runs
//   split      strategy_split.cpp      the group-testing search: launch it, split every slow group,
//                                      sweep the nodes it left idle; with per-edge figures past
//                                      256 nodes, an edge cover instead (circle method over 8
//                                      blocks up to 1,024 nodes, affine plane up to 5,819)
//   retest-edges strategy_resolve.cpp  link suspicions from per-edge figures, measured again inside
//                                      all-to-all groups with the nodes the search left free
//   certify    strategy_certify.cpp    once nothing else is in flight: every pair of good nodes
//                                      but the link candidates, in a few all-to-all groups
//   uplink     strategy_uplink.cpp     with leaves and no slow switch, before the end: all-to-alls
//                                      over every good node, for congestion that comes and goes
//
// The order is the priority: a node taken by one strategy is busy for the rest of the round. So a
// search whose split needs a node that resolve paired with a suspect waits a round, never the
// suspect; certify, last, plans only a round nobody else wanted, since it must see the candidates
// and good set that the others leave behind.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "coordinator/analysis/planner_impl.hpp"

namespace kiln::analysis {

// The round being drafted. Groups of a round run at the same time, so a node already in a group is
// busy for every strategy asked after the one that placed it.
struct RoundDraft {
  std::vector<std::vector<int>> groups;
  std::vector<Tag> tags;    // one per group
  std::vector<char> busy;   // by node
  std::string reason;       // for the story: what each strategy planned, joined by "; "

  explicit RoundDraft(int n) : busy(static_cast<std::size_t>(n), 0) {}
  bool empty() const { return groups.empty(); }
  bool free(const std::vector<int>& g) const {
    for (int u : g)
      if (busy[u]) return false;
    return true;
  }
  void add(std::vector<int> g, Tag t) {
    for (int u : g) busy[u] = 1;
    groups.push_back(std::move(g));
    tags.push_back(t);
  }
  void explain(const std::string& part) {
    if (!reason.empty()) reason += "; ";
    reason += part;
  }
};

namespace strategy {

void exact(Planner::Impl& s, RoundDraft& round);
void all_pairs(Planner::Impl& s, RoundDraft& round);
void screen(Planner::Impl& s, RoundDraft& round);
void control(Planner::Impl& s, RoundDraft& round);
void resolve(Planner::Impl& s, RoundDraft& round);
void split(Planner::Impl& s, RoundDraft& round);
void retest_edges(Planner::Impl& s, RoundDraft& round);
void certify(Planner::Impl& s, RoundDraft& round);
void uplink_check(Planner::Impl& s, RoundDraft& round);

// Round r of the circle method over `order` (even length; -1 is the sit-out placeholder).
std::vector<std::pair<int, int>> circle_pairs(const std::vector<int>& order, int r);
// Rounds of groups of at most 256 that together hold every pair of v: an affine plane's parallel
// classes over blocks of v (strategy_split.cpp).
std::vector<std::vector<std::vector<int>>> affine_cover(const std::vector<int>& v);
// Whether a cluster of n (more than 256) active nodes gets an edge cover (circle method or affine).
bool edge_cover_fits(std::size_t n);
// Whether the affine edge cover is planned or under way: suspects wait for it (strategy_resolve.cpp).
bool affine_cover_ahead(const Planner::Impl& s);

// Outcomes routed back to a strategy. Resolve and all-pairs groups need none: their pair results
// are evidence (evidence.cpp), which is all those strategies read.
void observe_split(Planner::Impl& s, int item,
                   const std::vector<std::pair<Tag, Verdict>>& results);
void certification_group_slow(Planner::Impl& s, std::size_t size);

}  // namespace strategy
}  // namespace kiln::analysis
