// report.json as a typed structure: built once by the campaign (or rebuilt from a run directory),
// written once as JSON, and printed as the operator's summary from the same structure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/protocol.hpp"
#include "common/types.hpp"

namespace kiln::coord {

struct NodeRow {
  std::string host;
  std::vector<int> ranks;
  NodeInfo info;
};

struct RankRow {
  int rank = -1;
  std::string host;       // empty when the rank never connected
  std::string state;      // ok | lost | missing
  std::uint64_t results = 0;
  std::map<std::string, std::uint64_t> by_status;
  std::string headline;   // the figure an operator looks at first (a sweep's figure at its largest size)
};

struct RoundRow {
  std::int64_t id = 0;
  std::vector<proto::TestSpec> tests;
  std::vector<std::vector<int>> groups;
  std::string reason;
  std::string phase;  // plan | localize
  double duration_s = 0;
  std::vector<int> done, missing;
  std::size_t results = 0;
};

struct LaunchRow {
  bool ok = false;
  std::string state;
};

struct Report {
  std::string run_id;
  std::string verdict;  // pass | fail | error
  std::string error;    // why the campaign could not run (verdict error)
  std::string launcher;
  double started = 0, duration_s = 0;
  std::string hostlist;
  std::vector<NodeRow> nodes;
  std::vector<RankRow> ranks;
  std::uint64_t results_total = 0;
  std::map<std::string, std::uint64_t> results_by_status;
  std::map<std::string, std::map<std::string, std::uint64_t>> results_by_test;
  // How each check ended, per rank: test -> status -> ranks.
  std::map<std::string, std::map<std::string, std::uint64_t>> checks_by_test;
  std::vector<RoundRow> rounds;
  std::vector<Finding> findings;
  std::uint64_t rejected_connections = 0;
  nlohmann::json localization;  // the planner's story (null when localization did not run)
  std::optional<LaunchRow> launch;
};

void to_json(nlohmann::json& j, const Report& r);

// The operator's summary: verdict, one line per rank, the findings with their next steps.
std::string render_summary(const Report& r, const std::string& results_path, const std::string& report_path);

}  // namespace kiln::coord
