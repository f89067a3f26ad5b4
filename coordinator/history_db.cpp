// The history database (history_db.hpp) on SQLite's C API.
#include "coordinator/history_db.hpp"

#include <sqlite3.h>

#include <set>
#include <stdexcept>

namespace kiln::coord {

namespace fs = std::filesystem;

namespace {

constexpr int kSchemaVersion = 2;  // 2: results.basis

constexpr const char* kSchema = R"(
CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS runs(run_id TEXT PRIMARY KEY, started REAL, duration_s REAL, verdict TEXT,
  hostlist TEXT, plan TEXT, run_dir TEXT);
CREATE TABLE IF NOT EXISTS nodes(run_id TEXT NOT NULL, host TEXT NOT NULL, PRIMARY KEY(run_id, host));
CREATE TABLE IF NOT EXISTS results(run_id TEXT NOT NULL, host TEXT NOT NULL, peer TEXT NOT NULL, test TEXT NOT NULL,
  metric TEXT NOT NULL, unit TEXT, value REAL, higher_is_better INTEGER, samples INTEGER,
  basis TEXT NOT NULL DEFAULT '', PRIMARY KEY(run_id, host, peer, test, metric));
CREATE INDEX IF NOT EXISTS results_by_host ON results(host, peer, test);
CREATE TABLE IF NOT EXISTS findings(run_id TEXT NOT NULL, code TEXT, entity_kind TEXT, entity TEXT, severity TEXT,
  confidence REAL, summary TEXT);
CREATE INDEX IF NOT EXISTS findings_by_run ON findings(run_id);
)";

// One prepared statement, finalized when it goes out of scope.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st_, nullptr) != SQLITE_OK)
      throw std::runtime_error(std::string("history database: ") + sqlite3_errmsg(db));
  }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& bind(int i, const std::string& v) { return check(sqlite3_bind_text(st_, i, v.c_str(), -1, SQLITE_TRANSIENT)); }
  Stmt& bind(int i, double v) { return check(sqlite3_bind_double(st_, i, v)); }
  Stmt& bind(int i, int v) { return check(sqlite3_bind_int(st_, i, v)); }
  // True while there is a row.
  bool step() {
    const int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) throw std::runtime_error(std::string("history database: ") + sqlite3_errmsg(db_));
    return false;
  }
  void run() {
    step();
    sqlite3_reset(st_);
  }
  std::string text(int i) const {
    const auto* t = sqlite3_column_text(st_, i);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  double real(int i) const { return sqlite3_column_double(st_, i); }
  int integer(int i) const { return sqlite3_column_int(st_, i); }

 private:
  Stmt& check(int rc) {
    if (rc != SQLITE_OK) throw std::runtime_error(std::string("history database: ") + sqlite3_errmsg(db_));
    return *this;
  }
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
};

// Whether a finding's entity is about host: the node, one of its GPUs or HCAs, or a link it ends.
bool names_host(const HistFinding& f, const std::string& host) {
  if (f.entity == host || f.entity.rfind(host + "/", 0) == 0) return true;
  const auto [a, b] = link_hosts(f.entity);
  return a == host || b == host;
}

}  // namespace

HistoryDb::HistoryDb(const fs::path& path, bool create) {
  std::error_code ec;
  if (!create && !fs::exists(path, ec))
    throw std::runtime_error("no history database at " + path.string() + " (kiln run records one; see --history)");
  if (create && path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw std::runtime_error("cannot open history database " + path.string() + ": " + why);
  }
  sqlite3_busy_timeout(db_, 10000);  // another kiln recording its run
  try {
    exec("PRAGMA journal_mode=WAL");
    exec("BEGIN IMMEDIATE");
    exec(kSchema);
    int rows = 0, version = 0;
    {
      Stmt v(db_, "SELECT COUNT(*), MAX(version) FROM schema_version");
      v.step();
      rows = v.integer(0), version = v.integer(1);
    }
    if (rows == 0) Stmt(db_, "INSERT INTO schema_version(version) VALUES (?)").bind(1, kSchemaVersion).run();
    if (version > kSchemaVersion)
      throw std::runtime_error(path.string() + " has schema version " + std::to_string(version) +
                               ", newer than this kiln's " + std::to_string(kSchemaVersion));
    if (rows > 0 && version < 2) {  // version 1 had no basis: its figures compare with no other
      exec("ALTER TABLE results ADD COLUMN basis TEXT NOT NULL DEFAULT 'v1'");
      exec("UPDATE schema_version SET version = 2");
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
    throw;
  }
}

HistoryDb::~HistoryDb() { sqlite3_close(db_); }

void HistoryDb::exec(const char* sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string why = err ? err : "unknown error";
    sqlite3_free(err);
    throw std::runtime_error("history database: " + why);
  }
}

void HistoryDb::record(const RunSummary& s) {
  exec("BEGIN IMMEDIATE");
  try {
    for (const char* table : {"runs", "nodes", "results", "findings"})
      Stmt(db_, std::string("DELETE FROM ") + table + " WHERE run_id = ?").bind(1, s.run_id).run();
    Stmt(db_, "INSERT INTO runs VALUES (?,?,?,?,?,?,?)")
        .bind(1, s.run_id).bind(2, s.started).bind(3, s.duration_s).bind(4, s.verdict)
        .bind(5, s.hostlist).bind(6, s.plan).bind(7, s.run_dir).run();
    Stmt node(db_, "INSERT OR IGNORE INTO nodes VALUES (?,?)");
    for (const auto& h : s.hosts) node.bind(1, s.run_id).bind(2, h).run();
    Stmt fig(db_, "INSERT OR REPLACE INTO results(run_id, host, peer, test, metric, unit, value, higher_is_better, "
                  "samples, basis) VALUES (?,?,?,?,?,?,?,?,?,?)");
    for (const auto& f : s.figures)
      fig.bind(1, s.run_id).bind(2, f.host).bind(3, f.peer).bind(4, f.test).bind(5, f.metric).bind(6, f.unit)
          .bind(7, f.value).bind(8, f.higher_is_better ? 1 : 0).bind(9, f.samples).bind(10, f.basis).run();
    Stmt fnd(db_, "INSERT INTO findings VALUES (?,?,?,?,?,?,?)");
    for (const auto& f : s.findings)
      fnd.bind(1, s.run_id).bind(2, f.code).bind(3, f.entity_kind).bind(4, f.entity).bind(5, f.severity)
          .bind(6, f.confidence).bind(7, f.summary).run();
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::vector<RunSummary> HistoryDb::runs_where(const std::string& where, const std::vector<std::string>& args,
                                              int last) const {
  Stmt q(db_, "SELECT run_id, started, duration_s, verdict, hostlist, plan, run_dir FROM runs WHERE " + where +
                  " ORDER BY started DESC, run_id DESC" + (last > 0 ? " LIMIT " + std::to_string(last) : ""));
  for (std::size_t i = 0; i < args.size(); ++i) q.bind(static_cast<int>(i + 1), args[i]);
  std::vector<RunSummary> out;
  while (q.step()) {
    RunSummary s;
    s.run_id = q.text(0), s.started = q.real(1), s.duration_s = q.real(2), s.verdict = q.text(3);
    s.hostlist = q.text(4), s.plan = q.text(5), s.run_dir = q.text(6);
    out.push_back(std::move(s));
  }
  return out;
}

// Fills a run's hosts, figures and findings: all of them (host empty), a node's, or a link's.
void HistoryDb::fill(RunSummary& s, const std::string& host, const std::string& peer) const {
  Stmt n(db_, "SELECT host FROM nodes WHERE run_id = ? ORDER BY host");
  n.bind(1, s.run_id);
  while (n.step()) s.hosts.push_back(n.text(0));
  Stmt r(db_, "SELECT host, peer, test, metric, unit, value, higher_is_better, samples, basis FROM results WHERE run_id = ? "
              "ORDER BY host, peer, test, metric");
  r.bind(1, s.run_id);
  while (r.step()) {
    HistFigure f{r.text(0), r.text(1), r.text(2), r.text(3), r.text(4), r.real(5), r.integer(6) != 0, r.integer(7), r.text(8)};
    if (host.empty() || (f.host == host && f.peer == peer)) s.figures.push_back(std::move(f));
  }
  Stmt q(db_, "SELECT code, entity_kind, entity, severity, confidence, summary FROM findings WHERE run_id = ?");
  q.bind(1, s.run_id);
  while (q.step()) {
    HistFinding f{q.text(0), q.text(1), q.text(2), q.text(3), q.real(4), q.text(5)};
    const bool keep = host.empty() || (peer.empty() ? names_host(f, host) : link_hosts(f.entity) == std::pair(host, peer));
    if (keep) s.findings.push_back(std::move(f));
  }
}

std::vector<RunSummary> HistoryDb::node_runs(const std::string& host, int last) const {
  auto runs = runs_where("run_id IN (SELECT run_id FROM nodes WHERE host = ?)", {host}, last);
  for (auto& s : runs) fill(s, host, "");
  return runs;
}

std::vector<RunSummary> HistoryDb::link_runs(const std::string& a, const std::string& b, int last) const {
  const auto [x, y] = std::minmax(a, b);
  auto runs = runs_where("run_id IN (SELECT run_id FROM results WHERE host = ? AND peer = ?)", {x, y}, last);
  for (auto& s : runs) fill(s, x, y);
  return runs;
}

std::optional<RunSummary> HistoryDb::run(const std::string& run_id) const {
  auto runs = runs_where("run_id = ?", {run_id}, 1);
  if (runs.empty()) return std::nullopt;
  fill(runs[0], "", "");
  return runs[0];
}

NodePast HistoryDb::node_past(const std::vector<std::string>& hosts, const std::string& before_run, int runs) const {
  NodePast past;
  const std::set<std::string> wanted(hosts.begin(), hosts.end());
  Stmt q(db_, "SELECT r.host, r.test, r.metric, r.value, r.basis FROM results r JOIN runs u ON u.run_id = r.run_id "
              "WHERE r.peer = '' AND r.run_id != ? ORDER BY u.started DESC, u.run_id DESC");
  q.bind(1, before_run);
  while (q.step()) {
    if (!wanted.count(q.text(0))) continue;
    auto& values = past[{q.text(0), q.text(1), q.text(2), q.text(4)}];
    if (static_cast<int>(values.size()) < runs) values.push_back(q.real(3));
  }
  return past;
}

int HistoryDb::count_runs() const {
  Stmt q(db_, "SELECT COUNT(*) FROM runs");
  q.step();
  return q.integer(0);
}

}  // namespace kiln::coord
