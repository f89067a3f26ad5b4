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
#include "coordinator/analysis/fleet.hpp"
#include "coordinator/analysis/expect.hpp"
#include "coordinator/analysis/judge.hpp"
#include "coordinator/launcher.hpp"

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
  bool finished = true;  // false: cut short; its results are counted but not judged
};

struct LaunchRow {
  bool ok = false;
  std::string state;
};

struct Report {
  std::string run_id;
  std::string verdict;  // pass | fail | incomplete | error
  std::string error;    // why the campaign could not run (verdict error)
  std::string launcher;
  double started = 0, duration_s = 0;
  std::string hostlist;
  std::vector<NodeRow> nodes;
  std::vector<RankRow> ranks;
  std::uint64_t results_total = 0;       // every result in results.jsonl
  std::uint64_t results_not_judged = 0;  // of those, from rounds cut short or naming no round
  std::uint64_t unreadable_lines = 0;    // lines of results.jsonl that could not be read
  int sessions = 1;                      // coordinator sessions: 1, plus one per kiln resume
  std::map<std::string, std::uint64_t> results_by_status;
  std::map<std::string, std::map<std::string, std::uint64_t>> results_by_test;
  // How each check ended, per rank: test -> status -> ranks.
  std::map<std::string, std::map<std::string, std::uint64_t>> checks_by_test;
  std::vector<RoundRow> rounds;
  std::vector<Finding> findings;
  std::uint64_t rejected_connections = 0;
  nlohmann::json localization;  // the planner's story (null when localization did not run)
  std::optional<LaunchRow> launch;
  // What the figures were judged against: source spec | profile | none | off, the operator's
  // line, and each node's class ("spec:class").
  std::string expect_source, expect_line;
  std::vector<std::pair<std::string, std::string>> expect_classes;
  // Each time the workers were started again after a round left MPI state untrusted (journal).
  std::vector<nlohmann::json> restarts;
  // Each time no worker connected because a rank crashed at start, and the job was launched again.
  std::vector<nlohmann::json> launch_retries;
};

void to_json(nlohmann::json& j, const Report& r);

// The campaign's nodes split for an operator's next command, each a compressed SLURM hostlist
// (node[1-2,4-6]): bad are the nodes with a finding of severity error or critical about the node,
// one of its ranks, GPUs or HCAs, a lost rank, or that never connected; good are the rest. Links
// and switches make no node bad (their next steps say not to drain the nodes).
// The node a finding's entity is on: a node's own id, a GPU's or an HCA's host ("node3/gpu1" ->
// node3); "" for entities not on one node (a link, a switch, the job) and for ranks (their host is
// the report's to say).
std::string node_of(const Entity& e);

struct NodeSplit {
  std::string good, bad;
  std::size_t good_count = 0, bad_count = 0;
};
NodeSplit split_nodes(const Report& r);

// What one rank measured: counted as its results arrive (or are read back), because a live
// campaign keeps only the results judgement reads (RoundRecord::results).
struct RankCounts {
  std::uint64_t results = 0;
  std::map<std::string, std::uint64_t> by_status;
  std::string headline;  // a sweep's figure at its largest size: what an operator looks at first
  std::int64_t headline_size = -1;
  void add(const Result& r);
  void merge(const RankCounts& o);  // another session's counts
};

// What a rank did over the campaign, for the report.
struct RankSeen {
  int rank = -1;
  std::string host;
  bool joined = false;
  bool lost = false;  // lost mid-campaign (not at the campaign's own goodbye)
  std::string lost_reason;
  NodeInfo info;
  RankCounts counts;
};

// Everything a report is made of: the live campaign and `kiln report` (from a run directory)
// fill this and call build_report, so the two cannot disagree.
struct ReportInput {
  std::string run_id, launcher;
  std::string error;  // non-empty: the campaign could not run to its end (verdict error)
  double started = 0, duration_s = 0;
  int expected_ranks = 0;
  int sessions = 1;
  std::vector<RankSeen> ranks;
  std::vector<Result> unattached;  // results naming no round the campaign ran (read back from disk)
  std::uint64_t unreadable_lines = 0;
  std::vector<Finding> extra_findings;  // the localization's, unreadable lines
  nlohmann::json localization;
  std::optional<LaunchRow> launch;
  bool launch_failed = false;  // the job failed with nobody left: not a pass even without findings
  // The job failed because these ranks ended (SLURM aborts a step when one task dies): with
  // `error` set, each is a rank.lost finding and the verdict is fail, not error.
  std::vector<FirstEnd> first_ends;
  std::uint64_t rejected = 0;
  analysis::Fleet fleet;  // every node and GPU's figures and settings, to compare them
  analysis::Expectations expect;  // what the nodes are judged against (docs/spec.md)
  std::vector<nlohmann::json> restarts;  // the journal's restart events
  std::vector<nlohmann::json> launch_retries;  // start-up crashes the campaign launched again after
};

// campaign.json's "leaves" ({"leaf1": [hosts], ...}) as the fleet takes them; anything malformed is
// left out (a hand-edited file must not stop the report).
std::map<std::string, std::vector<std::string>> leaves_of(const nlohmann::json& j);

// Builds the report from the campaign's rounds (in id order, each with its counts and the records
// judgement reads). Never throws on what the records hold: a value that cannot be judged becomes
// a result.invalid finding.
Report build_report(const ReportInput& in, const std::vector<analysis::RoundRecord>& rounds);
// 0 pass, 1 fail or incomplete, 2 error.
int exit_code(const Report& r);

// The operator's summary: verdict, one line per rank, the findings with their next steps.
std::string render_summary(const Report& r, const std::string& results_path, const std::string& report_path);

// Adds f, or, when a finding of the same code and entity is there already (the fleet and the
// localization naming one switch), merges f's evidence and summary into it.
void add_or_merge(std::vector<Finding>& findings, Finding f);

}  // namespace kiln::coord
