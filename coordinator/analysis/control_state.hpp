// The state of control pairs (strategy_control.cpp), kept by the planner (planner_impl.hpp).
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "coordinator/analysis/planner.hpp"

namespace kiln::analysis {

// Pair tests that read slow only against a shallow history, in a round whose pairs were nearly all
// slow against it (history(all-slow), fewer than History::kOwnSpread pair figures), held until a
// control pair of two known-good nodes shows whether that history is the level healthy pairs reach
// (strategy_control.cpp). Without a reference a small cluster's history is its screen's fast
// cluster: two or three pairs that may be the fast tail of the noise, against which every later
// pair reads slow.
struct HeldPair {
  std::vector<int> group;
  std::int64_t round;
  GroupOutcome outcome;
  Judgement judgement;
};
enum class ControlRead { Vouched, Again, Refuted };
struct ControlState {
  std::vector<HeldPair> held;
  bool vouched = false;     // a control read the held tests' level: it is the healthy pairs', hold no more
  // How much slower than that level the vouching control read (log, >= 0): the held tests and those
  // of its round are judged against the level raised by it (Impl::at_control_level).
  double shift = 0.0;
  int slow_controls = 0;    // controls read slower than the history allows: kSlowControls refute it
  static constexpr int kSlowControls = 2;
  std::vector<double> slow_costs;      // their figures (as costs): the history once they refute it
  // Levels (log cost) of retest groups dropped as uniformly slow against that shallow history, which
  // ask for a control too: a row test's suspects were never read (8 healthy nodes at 20% noise,
  // seed 101894: the screen's pairs at 0.7x of typical, six row tests of all 8 nodes at 1.6x, two
  // nodes left unresolved).
  std::vector<double> asked;
  std::set<int> used;       // nodes of the control pairs planned
  // A fast core in an all-to-all (fast_core, evidence_core.cpp) says the pair history may be the
  // slow nodes' level: the next round times control pairs of core nodes alone, whose median replaces
  // that history where it reads faster (Impl::want_level, Impl::observe_level).
  bool level_wanted = false;
  bool level_read = false;
};

}  // namespace kiln::analysis
