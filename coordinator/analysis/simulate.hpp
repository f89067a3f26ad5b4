// `kiln simulate`: the planner against a model cluster, next to the circle method.
//
// The cluster model (simulate_model.hpp) and its presets (--model) are described in
// docs/localization.md. `basic` is the original model: a group's figure is test_seconds x the largest
// slowdown it carries x lognormal noise. The other models dilute faults as a real all-to-all does,
// add heavy-tailed stragglers, intermittent faults, leaf congestion, topologies and per-rail faults.
// A round's wall time is its slowest group plus a fixed per-round overhead.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
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

  // Cluster model (see docs/localization.md). The defaults are the `basic` model's.
  std::string model = "basic";
  bool dilution = false;        // a rank's time is the mean of its edges; the group's is its slowest rank's
  bool per_peer = false;        // fill GroupOutcome::edges for groups of at most timed_group_size(nodes) members (planner.hpp); larger ones give their figure only
  double stragglers = 0.0;      // probability that an edge draw is a heavy-tailed straggler
  double fault_rate = 1.0;      // probability that a fault is active in a round (per fault, per round)
  bool severity_spread = false; // each fault's factor drawn log-uniformly from [slow_factor, 10]
  int leaf_size = 0;            // nodes per leaf switch (0: no leaves, unless a model or topology sets them)
  std::string topology_conf;    // path of a SLURM topology.conf with the leaves (and node names)
  std::string topology_text;    // its contents, read by the caller (the analysis core does no I/O)
  double congestion_rate = 0.0; // probability per round that the congested leaf's uplink is slow
  double congestion_factor = 3.0;
  int rails = 1;                // GPUs and NICs per node, one rail each
  int bad_rails = 0;            // slow NICs (one rail of one node each)
  bool rail_balance = false;    // traffic moves off a slow rail (else a static split waits for it)
  // Rate caps (--rate-caps on): a fault caps a port (node, rail) or a path (link) at 1/factor of
  // what a pair test pushes, rather than slowing every byte. In a group of three or more, a rank
  // pushes a2a_demand of a pair test's rate in all (an all-to-all bound by the CPU, the PCIe or the
  // fabric pushes less than one flow), split over its g-1 peers: a node shows only as
  // max(1, factor x demand), a link only as max(1, factor x demand / (g-1)).
  bool rate_caps = false;
  double a2a_demand = 1.0;
  // The planner's reference (OutlierConfig::reference, a spec's figure on a live run): a healthy
  // group's figure as a multiple of test_seconds (1: exact; 1.1: a spec 10% slower than healthy);
  // 0 gives it none, as a run without a spec figure for the check.
  double reference = 0.0;
};

// The presets of --model: name and one line for --help.
const std::vector<std::pair<std::string, std::string>>& simulate_models();
// Sets the knobs of the named preset on opt (knobs given explicitly are applied after it by the
// caller). Throws std::invalid_argument on an unknown name.
void apply_model(SimulateOptions& opt, const std::string& name);
// Options from (flag without "--", value) pairs: --model's preset first, then every other flag over
// it, whatever the order given. Flags: the option names of `kiln simulate --help` that take a value.
// Throws std::invalid_argument on an unknown flag, a malformed number, or an unknown model.
SimulateOptions parse_simulate_options(const std::vector<std::pair<std::string, std::string>>& given);

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
  int false_findings = 0;   // findings naming nothing in the truth
  bool accounted = false;   // every true fault found, or named by an unresolved or intermittent finding
  int switch_findings = 0;  // switch.slow findings naming a true (congested) leaf
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
