// The history database (SQLite): runs, their nodes, summarized figures and findings. Every write
// is one transaction and the journal is WAL, so a kiln killed mid-write leaves the database as it
// was before that run. Schema in history_db.cpp; docs/operator-guide.md describes the commands.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/history.hpp"

struct sqlite3;

namespace kiln::coord {

class HistoryDb {
 public:
  // create: make the file (and its directory) when missing; without it a missing file throws.
  HistoryDb(const std::filesystem::path& path, bool create);
  ~HistoryDb();
  HistoryDb(const HistoryDb&) = delete;
  HistoryDb& operator=(const HistoryDb&) = delete;

  // Records a run, replacing what an earlier record of the same run_id held (import is idempotent).
  void record(const RunSummary& s);
  // Runs that name host (or, with peer, the link host<->peer), newest first, at most `last`
  // (0: all), each with only that node's (link's) figures and findings.
  std::vector<RunSummary> node_runs(const std::string& host, int last) const;
  std::vector<RunSummary> link_runs(const std::string& a, const std::string& b, int last) const;
  std::optional<RunSummary> run(const std::string& run_id) const;
  // Each node figure's values in the last `runs` runs before `before_run` (newest first).
  NodePast node_past(const std::vector<std::string>& hosts, const std::string& before_run, int runs) const;
  int count_runs() const;

 private:
  void exec(const char* sql) const;
  std::vector<RunSummary> runs_where(const std::string& where, const std::vector<std::string>& args, int last) const;
  void fill(RunSummary& s, const std::string& host, const std::string& peer) const;
  sqlite3* db_ = nullptr;
};

}  // namespace kiln::coord

namespace kiln::coord {

struct Report;

// At a live run's end, before report.json is written: adds node.regressed findings (against the
// runs the database holds) to rep and settles its verdict again. Returns the run's summary, to
// record once report.json is in place. A database that cannot be used is a warning on stderr
// (nullopt), never an error of the run.
std::optional<RunSummary> compare_with_history(Report& rep, const std::filesystem::path& db_path,
                                               const RegressionConfig& cfg, const std::filesystem::path& run_dir,
                                               const std::string& plan);
// Records s; a failure is a warning on stderr.
void record_history(const std::filesystem::path& db_path, const RunSummary& s);

}  // namespace kiln::coord
