// A live run and the history database: the regression findings before report.json, the record
// after it (history_db.hpp).
#include <iostream>

#include "coordinator/analysis/expect.hpp"
#include "coordinator/history_db.hpp"
#include "coordinator/report.hpp"

namespace kiln::coord {

namespace fs = std::filesystem;

std::optional<RunSummary> compare_with_history(Report& rep, const fs::path& db_path, const RegressionConfig& cfg,
                                               const fs::path& run_dir, const std::string& plan) {
  try {
    const nlohmann::json j = rep;
    auto figures = figures_of(run_dir / "results.jsonl", slow_nodes_of(j));
    add_params_basis(figures, run_dir / "campaign.json");
    RunSummary s = summarize(j, std::move(figures), plan, fs::absolute(run_dir).lexically_normal().string());
    HistoryDb db(db_path, /*create=*/true);
    const auto found = regression_findings(s.figures, db.node_past(s.hosts, s.run_id, cfg.runs), cfg);
    if (found.empty()) return s;
    for (const auto& f : found) add_or_merge(rep.findings, f);
    // A warning turns a pass into a fail, as any finding does; an unfinished run stays as it was.
    if (rep.verdict == "pass" || rep.verdict == "incomplete") rep.verdict = analysis::verdict_of(rep.findings);
    return summarize(nlohmann::json(rep), std::move(s.figures), plan, s.run_dir);
  } catch (const std::exception& e) {
    std::cerr << "kiln: warning: history " << db_path.string() << ": " << e.what()
              << " (the run is not compared with earlier runs nor recorded)" << std::endl;
    return std::nullopt;
  }
}

void record_history(const fs::path& db_path, const RunSummary& s) {
  try {
    HistoryDb(db_path, /*create=*/true).record(s);
  } catch (const std::exception& e) {
    std::cerr << "kiln: warning: could not record the run in " << db_path.string() << ": " << e.what() << std::endl;
  }
}

}  // namespace kiln::coord
