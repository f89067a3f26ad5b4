// `kiln simulate`: the planner against a model cluster, next to the circle method.
//
// Model: a group's figure (seconds) is test_seconds x the largest slowdown it carries (a bad member,
// or a bad link with both ends in the group: all-to-all groups carry every pair in them, pairs carry
// their one link) x lognormal noise of relative sigma `noise`. The figure is size-invariant, as a
// busbw-normalised all-to-all figure is. A round's wall time is its slowest group plus a fixed
// per-round overhead (job step launch, communicator setup).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::analysis {

struct SimulateOptions {
  int nodes = 64;
  int bad_nodes = 1;
  int bad_links = 0;
  double noise = 0.03;          // relative sigma of the multiplicative noise
  std::uint64_t seed = 1;
  bool json = false;
  int trials = 1;               // seeds seed, seed+1, ...
  std::string mode = "adaptive";  // adaptive | full
  double slow_factor = 3.0;     // how much slower a bad node or link makes a group
  double test_seconds = 2.0;    // healthy group figure (one timed test)
  double round_overhead_seconds = 1.0;
  int votes = 2;
  bool story = false;           // include the planner's story (trials == 1 only)
};

struct TrialResult {
  std::uint64_t seed = 0;
  std::int64_t rounds = 0;
  std::int64_t localized_round = 0;  // round by which every true fault was confirmed (rounds if not)
  std::int64_t tests = 0;
  double modelled_seconds = 0.0;
  int true_positives = 0;
  int findings = 0;
  int truth = 0;
  int unresolved = 0;  // localize.unresolved findings (not counted in findings)
  nlohmann::json detail;  // truth, findings (and story) for single trials
};

// One trial with the given seed. Throws std::invalid_argument on impossible options.
TrialResult simulate_trial(const SimulateOptions& opt, std::uint64_t seed, bool keep_detail);

// Circle-method baseline: N-1 rounds of N/2 pairs (N rounds for odd N) and its modelled time.
std::int64_t circle_rounds(int nodes);
double circle_modelled_seconds(const SimulateOptions& opt);

// Runs opt.trials trials and writes a table (or JSON with opt.json). Returns 0, or 2 on bad options.
int run_simulate(const SimulateOptions& opt, std::ostream& out);

}  // namespace kiln::analysis
