// The run history (coordinator/history.hpp, history_db.hpp): summaries of a run's figures, the
// SQLite database on a temporary file, and the node.regressed rule.
#include <catch2/catch.hpp>

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/findings.hpp"
#include "coordinator/drain.hpp"
#include "coordinator/history_db.hpp"

using namespace kiln;
using namespace kiln::coord;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct TempDb {
  fs::path path = fs::temp_directory_path() / ("kiln-hist-" + std::to_string(::getpid()) + "-" +
                                               std::to_string(reinterpret_cast<std::uintptr_t>(this)) + ".sqlite");
  ~TempDb() {
    std::error_code ec;
    for (const char* s : {"", "-wal", "-shm"}) fs::remove(path.string() + s, ec);
  }
};

HistFigure node_fig(const std::string& host, double value, bool higher = true) {
  return {host, "", "gpu.copy_bw", "h2d_bw", "GB/s", value, higher, 4};
}

RunSummary run_of(const std::string& id, double started, std::vector<HistFigure> figures) {
  RunSummary s;
  s.run_id = id, s.started = started, s.verdict = "pass", s.plan = "gpu.copy_bw";
  s.hosts = {"n1", "n2"};
  s.figures = std::move(figures);
  return s;
}

int count_rows(const fs::path& path, const std::string& table) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, ("SELECT COUNT(*) FROM " + table).c_str(), -1, &st, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  const int n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

NodePast past_of(std::vector<double> values) { return {{{"n1", "gpu.copy_bw", "h2d_bw", ""}, std::move(values)}}; }

}  // namespace

TEST_CASE("history database: created with its schema version, and a missing one is an error", "[history]") {
  TempDb t;
  REQUIRE_THROWS_WITH(HistoryDb(t.path, false), Catch::Contains("no history database"));
  { HistoryDb db(t.path, true); CHECK(db.count_runs() == 0); }
  CHECK(count_rows(t.path, "schema_version") == 1);
  HistoryDb again(t.path, false);  // opening it again adds no second version row
  CHECK(count_rows(t.path, "schema_version") == 1);
}

TEST_CASE("history import is idempotent by run_id", "[history]") {
  TempDb t;
  HistoryDb db(t.path, true);
  auto s = run_of("r1", 100, {node_fig("n1", 20), node_fig("n2", 21), {"n1", "n2", "net.pair_bw", "bw", "GB/s", 9, true, 2}});
  s.findings.push_back({"link.slow", "link", "n1<->n2", "error", 0.9, "slow"});
  db.record(s);
  db.record(s);
  CHECK(db.count_runs() == 1);
  CHECK(count_rows(t.path, "results") == 3);
  CHECK(count_rows(t.path, "findings") == 1);
  CHECK(count_rows(t.path, "nodes") == 2);
  const auto runs = db.node_runs("n1", 0);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].figures.size() == 1);
  CHECK(runs[0].findings.size() == 1);  // the link finding names n1
  const auto link = db.link_runs("n2", "n1", 0);
  REQUIRE(link.size() == 1);
  REQUIRE(link[0].figures.size() == 1);
  CHECK(link[0].figures[0].value == 9);
  CHECK(db.node_runs("n9", 0).empty());
}

TEST_CASE("history lists a node's runs newest first, --last K of them, and its past per figure", "[history]") {
  TempDb t;
  HistoryDb db(t.path, true);
  db.record(run_of("r1", 100, {node_fig("n1", 20)}));
  db.record(run_of("r3", 300, {node_fig("n1", 18)}));
  db.record(run_of("r2", 200, {node_fig("n1", 19)}));
  const auto runs = db.node_runs("n1", 2);
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].run_id == "r3");
  CHECK(runs[1].run_id == "r2");
  const auto past = db.node_past({"n1"}, "r3", 5);
  CHECK(past.at({"n1", "gpu.copy_bw", "h2d_bw", ""}) == std::vector<double>{19, 20});
}

TEST_CASE("regression: 30% slower than two earlier runs is node.regressed, a warning that does not drain", "[history]") {
  const auto found = regression_findings({node_fig("n1", 14)}, past_of({20, 20}), {});
  REQUIRE(found.size() == 1);
  CHECK(found[0].code == Code::NodeRegressed);
  CHECK(found[0].severity == Severity::Warning);
  CHECK(found[0].entity.id == "n1");
  CHECK(found[0].evidence[0]["median_before"] == 20);
  CHECK(found[0].evidence[0]["runs"] == 2);
  CHECK(found[0].evidence[0]["fraction"].get<double>() == Approx(0.3));
  CHECK_FALSE(isolates(found[0].code));
  const auto plan = plan_drain({{"run_id", "r3"}, {"findings", json::array({found[0]})}});
  CHECK(plan.targets.empty());
}

TEST_CASE("regression: a figure that fell on every node reporting it is one finding for the group", "[history]") {
  // An all-to-all's figure is the group's on every rank: one slow port made it fall on all 8 nodes.
  NodePast past;
  std::vector<HistFigure> now;
  for (const std::string h : {"n1", "n2", "n3"}) {
    past[{h, "gpu.copy_bw", "h2d_bw", ""}] = {20, 20};
    now.push_back(node_fig(h, 15));
  }
  auto found = regression_findings(now, past, {});
  REQUIRE(found.size() == 1);
  CHECK(found[0].code == Code::NodeRegressed);
  CHECK(found[0].entity.kind == "group");
  CHECK(found[0].entity.id == "n[1-3]");
  CHECK(found[0].evidence.size() == 3);
  CHECK(found[0].evidence[1]["node"] == "n2");
  CHECK(found[0].summary.find("every one of the 3 nodes") != std::string::npos);
  CHECK(found[0].next_step.find("node.slow") != std::string::npos);
  // One node that did not fall keeps the others' findings per node.
  now[2] = node_fig("n3", 20);
  found = regression_findings(now, past, {});
  REQUIRE(found.size() == 2);
  CHECK(found[0].entity.kind == "node");
  CHECK(found[1].entity.id == "n2");
  // A node that reports the figure alone is that node's.
  found = regression_findings({node_fig("n1", 15)}, past, {});
  REQUIRE(found.size() == 1);
  CHECK(found[0].entity.id == "n1");
}

TEST_CASE("regression: 5% slower, or fewer than 2 earlier runs, is no finding", "[history]") {
  CHECK(regression_findings({node_fig("n1", 19)}, past_of({20, 20}), {}).empty());
  CHECK(regression_findings({node_fig("n1", 10)}, past_of({20}), {}).empty());
  CHECK(regression_findings({node_fig("n2", 10)}, past_of({20, 20}), {}).empty());  // another node's past
}

TEST_CASE("regression: figures taken at another size or with other --params are not compared", "[history]") {
  auto now = node_fig("n1", 10);
  now.basis = "size=1048576";
  CHECK(regression_findings({now}, past_of({20, 20}), {}).empty());  // the past has basis ""
  NodePast past{{{"n1", "gpu.copy_bw", "h2d_bw", "size=1048576"}, {20, 20}}};
  CHECK(regression_findings({now}, past, {}).size() == 1);
  // The basis goes through the database: a run at another size does not count as the node's past.
  TempDb t;
  {
    HistoryDb db(t.path, true);
    for (const auto& [id, basis] : std::vector<std::pair<std::string, std::string>>{{"a", "size=1"}, {"b", "size=2"}}) {
      auto f = node_fig("n1", 20);
      f.basis = basis;
      auto s = run_of(id, id == "a" ? 1 : 2, {f});
      db.record(s);
    }
    const auto p = db.node_past({"n1"}, "c", 5);
    CHECK(p.at({"n1", "gpu.copy_bw", "h2d_bw", "size=1"}).size() == 1);
    CHECK(p.at({"n1", "gpu.copy_bw", "h2d_bw", "size=2"}).size() == 1);
  }
}

TEST_CASE("regression: only the last K runs count, and a time is worse when it grows", "[history]") {
  // The two newest are 10, older runs were 20: with K=2 a figure of 9.5 is within 10%.
  CHECK(regression_findings({node_fig("n1", 9.5)}, past_of({10, 10, 20, 20, 20}), {2, 0.10}).empty());
  CHECK(regression_findings({node_fig("n1", 9.5)}, past_of({10, 10, 20, 20, 20}), {5, 0.10}).size() == 1);
  CHECK(regression_findings({node_fig("n1", 14, false)}, past_of({20, 20}), {}).empty());  // faster
  CHECK(regression_findings({node_fig("n1", 26, false)}, past_of({20, 20}), {}).size() == 1);
}

TEST_CASE("history summary: a node's median at a sweep's largest size, and links by their two hosts", "[history]") {
  FigureSummarizer s;
  auto r = [](const std::string& test, const std::string& metric, double v, std::optional<std::int64_t> size) {
    Result x;
    x.test = test, x.host = "n1", x.metric = metric, x.value = v, x.unit = "GB/s", x.size_bytes = size;
    return x;
  };
  s.add(r("mpi.all_reduce", "busbw", 100, 1024));
  s.add(r("mpi.all_reduce", "busbw", 5, 1 << 20));
  s.add(r("mpi.all_reduce", "busbw", 7, 1 << 20));
  s.add(r("mpi.all_reduce", "busbw", 9, 1 << 20));
  auto failed = r("mpi.all_reduce", "busbw", 1, 1 << 20);
  failed.status = Status::Fail;
  s.add(failed);
  const auto figs = s.figures();
  REQUIRE(figs.size() == 1);
  CHECK(figs[0].value == 7);
  CHECK(figs[0].samples == 3);
  FigureSummarizer pairs;
  for (const auto& [id, v] : std::vector<std::pair<std::string, double>>{{"n1<->n2", 10}, {"n1<->n3", 1}, {"n2<->n3", 1}}) {
    Result x = r("net.pair_bw", "bw", v, std::nullopt);
    x.entity = {"link", id};
    pairs.add(x);
  }
  std::map<std::pair<std::string, std::string>, double> got;
  for (const auto& f : pairs.figures()) got[{f.host, f.peer}] = f.value;
  CHECK(got.size() == 6);  // three links, three nodes
  CHECK(got.at({"n1", "n2"}) == 10);
  CHECK(got.at({"n3", ""}) == 1);  // both its links slow
  CHECK(got.at({"n1", ""}) == Approx(5.5));
  CHECK(link_hosts("b<->a/rail1") == std::pair<std::string, std::string>("a", "b"));
  CHECK(link_hosts("node3").first.empty());
}

TEST_CASE("history summary: a group that held a slow node is that node's figure, not its partners'", "[history]") {
  // The 12-node testbed with 6 nodes behind half-rate ports: node10, healthy, was paired with slow
  // nodes in most localization rounds, and its all-to-all figure read 27% below its earlier runs.
  const fs::path file = fs::temp_directory_path() / ("kiln-figs-" + std::to_string(::getpid()) + ".jsonl");
  {
    std::ofstream out(file);
    auto line = [&](const std::string& host, std::int64_t round, int group, double v) {
      Result x;
      x.test = "mpi.alltoall", x.host = host, x.metric = "busbw", x.value = v, x.unit = "GB/s";
      x.round_id = round, x.group_id = group, x.size_bytes = 4 << 20;
      json j = x;
      j["record"] = "result";
      out << j.dump() << "\n";
    };
    line("n1", 1, 0, 6.0), line("n2", 1, 0, 6.0);    // n1 (slow) with n2
    line("n3", 1, 1, 12.0), line("n4", 1, 1, 12.0);  // healthy
    line("n2", 2, 0, 6.5), line("n1", 2, 0, 6.5);    // n1 with n2 again: n2's figure is n1's
    line("n2", 2, 1, 12.5), line("n3", 2, 1, 12.5);  // group 1 of round 2 has no slow node
    line("n1", 3, 0, 5.0), line("n4", 3, 0, 5.0);    // n4 with n1 in round 3
    out << "{torn\n";
  }
  auto by_host = [](const std::vector<HistFigure>& figs) {
    std::map<std::string, double> m;
    for (const auto& f : figs) m[f.host] = f.value;
    return m;
  };
  const auto all = by_host(figures_of(file));
  CHECK(all.at("n2") == Approx(6.5));  // median of 6, 6.5, 12.5
  const auto kept = by_host(figures_of(file, {"n1"}));
  CHECK(kept.at("n2") == Approx(12.5));
  CHECK(kept.at("n1") == Approx(6.0));  // its own figure: median of 6, 6.5, 5
  CHECK(kept.at("n3") == Approx(12.25));
  CHECK(kept.at("n4") == Approx(12.0));  // round 3 held n1
  CHECK(slow_nodes_of(json::parse(R"({"findings": [
      {"code": "node.slow", "entity": {"kind": "node", "id": "n1"}},
      {"code": "link.slow", "entity": {"kind": "link", "id": "n2<->n3"}},
      {"code": "node.regressed", "entity": {"kind": "node", "id": "n4"}}, 7]})")) == std::set<std::string>{"n1"});
  fs::remove(file);
}
