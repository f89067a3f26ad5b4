// The localization planner: a state machine that chooses the next round of group tests from
// everything seen so far, and turns what it saw into findings (slow nodes, slow links, slow
// switches, lost nodes). Pure: no I/O, no clocks; the caller runs the rounds.
//
// How a live campaign drives it:
//
//   kiln::analysis::Planner planner(n_nodes, cfg, topology, host_names);
//   while (auto plan = planner.next()) {
//     // Run plan->groups at the same time, each group on its own sub-communicator, all with the
//     // same all-to-all test (a 2-member group is a pair exchange). One figure per group.
//     std::vector<GroupOutcome> outcomes = run_round(*plan);   // same order as plan->groups
//     planner.observe(*plan, std::move(outcomes));
//   }
//   report(planner.findings(), planner.story());
//
// The algorithm is described in docs/localization.md; how the code is laid out (state, round
// strategies) at the top of planner_impl.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/types.hpp"
#include "coordinator/analysis/outliers.hpp"

namespace kiln::analysis {

// One link's figure inside a group whose test timed each peer on its own (per-peer completion in
// an all-to-all): the worse of the two directions between members a and b (node indices), in the
// same convention and units as GroupOutcome::value, so a healthy edge reads like a healthy group.
struct EdgeFigure {
  int a = -1;
  int b = -1;
  double value = 0.0;
};

// What one group of a round produced.
struct GroupOutcome {
  std::vector<int> members;     // node indices, as planned
  // The group's figure in the convention of PlannerConfig::outliers.direction: seconds per op
  // (LowerIsBetter, the default) or a bandwidth such as busbw (HigherIsBetter).
  std::optional<double> value;
  bool timed_out = false;       // missed its deadline: a positive (slow) result, not a hang
  std::vector<int> missing;     // members that never reported (dead node, lost rank)
  // Per-edge figures, when the test timed every peer (empty otherwise): a slow link shows in its
  // own edge instead of being diluted by the group's other g-2 peers.
  std::vector<EdgeFigure> edges;
};

struct RoundPlan {
  std::int64_t id = 0;
  std::string kind;                       // "pairs" when every group has two members, else "all_to_all"
  std::vector<std::vector<int>> groups;   // disjoint groups of node indices, run at the same time
  std::string reason;                     // why this round, for the report
};

// Switches from `scontrol show topology`: a switch and the nodes directly under it.
struct Switch {
  std::string name;
  std::vector<int> nodes;
};

enum class Mode { Adaptive, Full };

struct PlannerConfig {
  // The planner compares groups of different sizes (the whole cluster, halves, pairs), so by default
  // the figure must be comparable across group sizes: busbw, or seconds per op normalised the way
  // nccl-tests turns algbw into busbw. Set size_invariant = false only with a spec, or groups of a
  // size never seen before cannot be judged (they are then treated as slow, which costs rounds).
  OutlierConfig outliers = [] {
    OutlierConfig c;
    c.size_invariant = true;
    return c;
  }();
  // Independent slow observations needed before a node or link finding is declared.
  int votes = 2;
  // z cutoff for the screening round only. Suspects from the screen are re-paired in parallel one
  // round later, so a lower bar there costs no rounds and catches slow nodes whose z came out low
  // against a spread estimated from few groups.
  double screen_z_cutoff = 2.5;
  // Adaptive: screen, bisect, re-pair and certify (O(log N) rounds).
  // Full: every pair by the circle method (N-1 rounds of N/2 pairs), then retests.
  Mode mode = Mode::Adaptive;
  // Size of the groups of the first (screening) round. 2 screens every node at once with pairs;
  // larger groups are bisected in parallel down to pairs when slow.
  int screen_group_size = 2;
  // Clusters of fewer nodes than this are tested exactly: every pair by the circle method, each
  // at least 3 times (more when near the cutoff), judged once against a robust spread. 0 turns it
  // off, so the adaptive search (or Full mode's single circle) runs at any size.
  int exact_below = 8;
  // A slow result of the screening round raises a suspicion but is no vote (evidence.cpp): a
  // finding needs votes from retests. True counts it as a vote, as the planner did before; only
  // to replay runs recorded with that planner.
  bool screen_votes = false;
  // Give up after this many rounds (0: 4*ceil(log2 N) + 24). What is still undecided then is
  // reported as localize.unresolved findings.
  int max_rounds = 0;
  // Resolution tests of one suspect node before it is reported inconclusive.
  int max_tests_per_node = 6;
  // Times the certification sweep may be restarted by a newly found fault.
  int max_cert_attempts = 8;
  // Message size the figures are measured at (for spec lookups).
  std::int64_t size_bytes = 0;
  // Seed for the screening permutation; a fixed seed makes the campaign reproducible.
  std::uint64_t seed = 1;
};

// The rounds one fault may take to localize, 2 log2(N) + 10 (issue 13's target): the look-again
// rounds stay within it (strategy_certify.cpp), and `kiln simulate` reports trials against it.
double one_fault_round_bound(int nodes);

// The most members a group may have and still have every edge timed, for a cluster of n nodes: 256,
// or where an edge cover of 256-member groups no longer fits the rounds one fault may take, the least
// of 512 and 1,024 whose cover does: 512 from 5,820 nodes, 1,024 from 11,639 (16,384: 17 rounds of 16
// groups), and 256 again from 23,277, where none fits and the group search stays. The live check
// times a peer's block of at least 64 KiB at any group size (mpi.alltoall's peer_block_min), so a
// group of 1,024 times blocks as large as one of 256 does at the default 16 MiB; the simulator gives
// per-edge figures to groups of up to this many (strategy_split.cpp).
std::size_t timed_group_size(std::size_t n);

class Planner {
 public:
  // n: number of nodes (indices 0..n-1). names: host names for entity ids (default "node<i>").
  explicit Planner(int n, PlannerConfig cfg = {}, std::vector<Switch> topology = {},
                   std::vector<std::string> names = {});
  ~Planner();
  Planner(Planner&&) noexcept;
  Planner& operator=(Planner&&) noexcept;

  // The next round to run, or nullopt when nothing is left to localize.
  std::optional<RoundPlan> next();
  // Outcomes of a round returned by next(), one per group (matched by members; order free).
  // Throws std::invalid_argument when a group of the plan has no outcome.
  void observe(const RoundPlan& plan, std::vector<GroupOutcome> outcomes);

  // Findings so far: node.slow, link.slow, switch.slow, node.lost, and localize.unresolved for
  // suspects the planner gave up on. Complete once next() is nullopt.
  std::vector<kiln::Finding> findings() const;
  // Round-by-round story: what each round tested, what was slow, what was concluded.
  nlohmann::json story() const;

  std::int64_t rounds() const;   // rounds observed
  std::int64_t tests() const;    // group tests observed
  bool done() const;
  std::string node_name(int node) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::analysis
