// Run history: what each campaign measured, summarized per (node, test) and per (link, test), kept
// in an SQLite database across runs (history_db.cpp) so that `kiln history`, `kiln diff` and the
// node.regressed finding can compare a node with its own past. Summaries, not raw results: one
// figure per node and test (the median of its figure of merit, at a sweep's largest size).
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/types.hpp"

namespace kiln::coord {

// One summarized figure: a node's (peer empty) or a link's (host < peer).
struct HistFigure {
  std::string host, peer;
  std::string test, metric, unit;
  double value = 0;
  bool higher_is_better = true;
  int samples = 0;
  // What the figure is comparable with: the message size it was taken at ("size=N", for figures
  // per size) and the test's --params; a regression compares only figures of the same basis.
  std::string basis;
};

struct HistFinding {
  std::string code, entity_kind, entity, severity;
  double confidence = 0;
  std::string summary;
};

struct RunSummary {
  std::string run_id, verdict, hostlist, plan, run_dir;
  double started = 0, duration_s = 0;
  std::vector<std::string> hosts;
  std::vector<HistFigure> figures;
  std::vector<HistFinding> findings;
};

// Collects the passing figure-of-merit results of a run, one summary per node/link and test. A
// pair test's link figure counts for the link and for both its nodes.
class FigureSummarizer {
 public:
  // only_hosts: when given, only these hosts take the figure (a group that held a node.slow node:
  // its figure is that node's, not its healthy partners').
  void add(const Result& r, const std::set<std::string>* only_hosts = nullptr);
  std::vector<HistFigure> figures() const;

 private:
  struct Acc {
    std::int64_t size = -1;  // a sweep's largest size seen: only its values count
    std::vector<double> values;
    std::string metric, unit;
    bool higher_is_better = true;
  };
  std::map<std::tuple<std::string, std::string, std::string>, Acc> acc_;  // host, peer, test
};

// The two hosts of a link entity id ("a<->b", "a<->b/rail0"), ordered; empty when it is not one.
std::pair<std::string, std::string> link_hosts(const std::string& id);

// A summary from report.json (as written) and the run's figures. Throws on a report without run_id.
RunSummary summarize(const nlohmann::json& report, std::vector<HistFigure> figures, const std::string& plan,
                     const std::string& run_dir);
// Reads DIR/report.json, DIR/campaign.json and DIR/results.jsonl (unreadable lines are skipped).
RunSummary summarize_run_dir(const std::filesystem::path& dir);
// The figures of DIR/results.jsonl. A group's figure is every member's, so a group that held one of
// slow_nodes (the run's node.slow findings, slow_nodes_of) counts for those members only: a healthy
// node paired with slow ones in most localization rounds read "regressed" by 27% on the testbed.
std::vector<HistFigure> figures_of(const std::filesystem::path& results, const std::set<std::string>& slow_nodes = {});
// The nodes a report's node.slow findings name.
std::set<std::string> slow_nodes_of(const nlohmann::json& report);

struct RegressionConfig {
  int runs = 5;            // compare with the median of this many earlier runs
  double threshold = 0.10; // a fall of more than this fraction is a regression
};

// Earlier values of one node's figure, newest first: (host, test, metric, basis) -> values.
using NodePast = std::map<std::tuple<std::string, std::string, std::string, std::string>, std::vector<double>>;

// Adds each test's --params (campaign.json's config.params, a JSON text) to its figures' basis.
void add_params_basis(std::vector<HistFigure>& figures, const std::filesystem::path& campaign_json);

// node.regressed findings: each node figure of `now` worse than the median of its last cfg.runs
// earlier values by more than cfg.threshold (at least 2 earlier values are needed).
std::vector<Finding> regression_findings(const std::vector<HistFigure>& now, const NodePast& past,
                                         const RegressionConfig& cfg);

// The history database a --history option names: none (an empty path) for "off"; the option's
// path; with no option $KILN_HISTORY (likewise "off" for none), else ~/.local/share/kiln/history.sqlite.
std::filesystem::path history_path(const std::string& option);

}  // namespace kiln::coord
