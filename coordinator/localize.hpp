// The localization phase: drives the analysis planner's rounds on the live campaign, one unit
// (node or rank) per planner index, and turns its conclusions into findings with the story.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/types.hpp"
#include "coordinator/analysis/expect.hpp"
#include "coordinator/analysis/planner.hpp"
#include "coordinator/campaign.hpp"

namespace kiln::coord {

struct LocalizeOptions {
  std::string by = "auto";             // node | rank | off | auto (node when there are 2+ nodes)
  std::string test = "mpi.alltoall";   // a group test that loads every link of its group
  std::int64_t size_bytes = 4 << 20;   // bytes each rank sends per operation
  double deadline_s = 60;              // a group slower than this counts as slow, not as a hang
  int votes = 2;
  double rel_cutoff = 0.8;             // slow when below this fraction of the expected busbw
  std::string mode = "adaptive";       // adaptive | full
  std::vector<analysis::Switch> topology;  // given as planner indices; when empty, built from leaves
  // SLURM's leaf switches and the hosts under each ({"leaf1": [hosts], ...}, CampaignOptions::leaves).
  // Localizing by node, each leaf becomes a planner Switch over the units of its hosts.
  std::map<std::string, std::vector<std::string>> leaves;
};

struct LocalizeOutcome {
  bool ran = false;
  std::string skipped_because;
  std::vector<Finding> findings;
  nlohmann::json story = nlohmann::json::array();
  std::int64_t rounds = 0;
  std::vector<std::string> units;
  std::vector<int> unit_ranks;  // the rank that ran each unit's tests
  // The spec's figure for the test across nodes at its size, when every unit's class gives one:
  // a round slow as a whole is judged against it (analysis::OutlierConfig::reference).
  std::optional<analysis::GroupReference> reference;
};

// Units: the hosts (one representative rank each) or the ranks themselves.
struct Units {
  std::string kind;                 // "node" or "rank"
  std::vector<std::string> names;
  std::vector<int> rank_of;         // the rank that runs the tests for each unit
};
Units choose_units(const std::map<int, RankState>& ranks, const std::string& by);
// The planner's switches: opts.topology when set; else, by node, each leaf over its hosts' units
// (hosts not among the units are left out, and so is a leaf with none); by rank, none.
std::vector<analysis::Switch> unit_switches(const Units& units, const LocalizeOptions& opts);

LocalizeOutcome localize(Campaign& campaign, const LocalizeOptions& opts);

}  // namespace kiln::coord
