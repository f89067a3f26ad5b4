// `kiln history NODE`, `kiln history --link A B`, `kiln history import RUN_DIR` and `kiln diff RUN1
// RUN2`: reading the history database (history_db.hpp) for an operator.
#include <boost/program_options.hpp>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <set>

#include "coordinator/cli.hpp"
#include "coordinator/history_db.hpp"

namespace kiln::cli {

namespace po = boost::program_options;
namespace fs = std::filesystem;
using coord::HistFigure;
using coord::HistFinding;
using coord::RunSummary;
using nlohmann::json;

namespace {

constexpr const char* kExitCodes = "Exit codes: 0 done, 2 bad input, no database, or nothing recorded for what was asked.";

struct HistoryArgs {
  std::vector<std::string> words;
  std::string db;
  int last = 0;
  bool json = false, link = false, help = false;
  double threshold = 0.10;
};

// Parses the words and options of `kiln history` or `kiln diff`; returns the error, or "".
constexpr const char* kNoDb =
    "history is off (--history off, or KILN_HISTORY=off): no history database to read; name one with --history PATH";

std::string parse_history_args(const std::vector<std::string>& args, po::options_description& desc, HistoryArgs& a) {
  desc.add_options()("help,h", "show this help")(
      "history", po::value(&a.db), "history database (default: $KILN_HISTORY, else ~/.local/share/kiln/history.sqlite)")(
      "json", po::bool_switch(&a.json), "JSON output");
  po::variables_map vm;
  try {
    vm = parse_with_words(args, desc, a.words, -1);
  } catch (const po::error& e) {
    return e.what();
  }
  a.help = vm.count("help") > 0;
  a.db = coord::history_path(a.db).string();
  if (a.last < 0) return "--last must be 0 or more";
  return "";
}

std::string date_of(double t) {
  const std::time_t s = static_cast<std::time_t>(t);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", std::gmtime(&s));
  return buf;
}

json figure_json(const HistFigure& f) {
  json j = {{"test", f.test}, {"metric", f.metric}, {"value", f.value}, {"unit", f.unit},
            {"higher_is_better", f.higher_is_better}, {"samples", f.samples}, {"host", f.host}};
  if (!f.peer.empty()) j["peer"] = f.peer;
  return j;
}

json run_json(const RunSummary& s) {
  json j = {{"run_id", s.run_id}, {"started", s.started}, {"duration_s", s.duration_s}, {"verdict", s.verdict},
            {"hostlist", s.hostlist}, {"plan", s.plan}, {"run_dir", s.run_dir}, {"figures", json::array()},
            {"findings", json::array()}};
  for (const auto& f : s.figures) j["figures"].push_back(figure_json(f));
  for (const auto& f : s.findings)
    j["findings"].push_back({{"code", f.code}, {"entity", {{"kind", f.entity_kind}, {"id", f.entity}}},
                             {"severity", f.severity}, {"confidence", f.confidence}, {"summary", f.summary}});
  return j;
}

void print_runs(const std::vector<RunSummary>& runs) {
  for (const auto& s : runs) {
    std::printf("%s  %s  %s\n", date_of(s.started).c_str(), s.run_id.c_str(), s.verdict.c_str());
    for (const auto& f : s.figures)
      std::printf("    %-20s %-12s %12.4g %-8s (%d)\n", f.test.c_str(), f.metric.c_str(), f.value, f.unit.c_str(),
                  f.samples);
    for (const auto& f : s.findings)
      std::printf("    finding %s %s %s: %s\n", f.code.c_str(), f.severity.c_str(), f.entity.c_str(), f.summary.c_str());
  }
}

int history_import(const HistoryArgs& a) {
  if (a.words.size() != 2) return fail("kiln history import takes one RUN_DIR (see kiln history --help)");
  try {
    const auto s = coord::summarize_run_dir(a.words[1]);
    coord::HistoryDb(a.db, /*create=*/true).record(s);
    std::cout << "recorded " << s.run_id << " (" << s.figures.size() << " figures, " << s.findings.size()
              << " findings) in " << a.db << "\n";
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}

constexpr const char* kHistoryUsage =
    "usage: kiln history NODE [options]\n"
    "       kiln history --link A B [options]\n"
    "       kiln history import RUN_DIR [--history PATH]\n\n"
    "Prints the runs the history database holds for a node (or the link between A and B), newest\n"
    "first: date, run id, verdict, its figures per test (the median of the figure of merit, at a\n"
    "sweep's largest size, and how many readings) and the findings naming it. `import` records an\n"
    "existing run directory (again: it replaces that run's record). kiln run records every run.\n\noptions";

}  // namespace

int cmd_history(const std::vector<std::string>& args) {
  HistoryArgs a;
  po::options_description desc(kHistoryUsage);
  desc.add_options()("last", po::value(&a.last), "only the newest K runs")(
      "link", po::bool_switch(&a.link), "the link between the two hosts named");
  if (auto e = parse_history_args(args, desc, a); !e.empty()) return fail(e + " (see kiln history --help)");
  if (a.db.empty() && !a.help) return fail(std::string(kNoDb) + " (see kiln history --help)");
  if (a.help) {
    std::cout << desc << "\n" << kExitCodes << "\n";
    return 0;
  }
  if (!a.words.empty() && a.words[0] == "import") return history_import(a);
  if (a.words.size() != (a.link ? 2u : 1u))
    return fail(a.link ? "--link needs two hosts: kiln history --link A B" : "name one node: kiln history NODE");
  try {
    const coord::HistoryDb db(a.db, /*create=*/false);
    const auto runs = a.link ? db.link_runs(a.words[0], a.words[1], a.last) : db.node_runs(a.words[0], a.last);
    const std::string what = a.link ? "link " + a.words[0] + "<->" + a.words[1] : a.words[0];
    if (runs.empty()) return fail("no runs recorded for " + what + " in " + a.db);
    if (a.json) {
      json j = json::array();
      for (const auto& s : runs) j.push_back(run_json(s));
      std::cout << j.dump(2) << "\n";
    } else {
      print_runs(runs);
    }
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}

namespace {

// A run named by its directory (read from it) or its id (read from the database).
RunSummary load_named_run(const std::string& name, const std::string& db_path) {
  if (fs::is_directory(name)) return coord::summarize_run_dir(name);
  if (db_path.empty()) throw std::runtime_error(kNoDb);
  const auto s = coord::HistoryDb(db_path, /*create=*/false).run(name);
  if (!s) throw std::runtime_error("no run " + name + " in " + db_path + " (name a run directory or a recorded run id)");
  return *s;
}

using FigureKey = std::tuple<std::string, std::string, std::string, std::string>;  // host, peer, test, metric

std::map<FigureKey, HistFigure> by_key(const RunSummary& s) {
  std::map<FigureKey, HistFigure> m;
  for (const auto& f : s.figures) m[{f.host, f.peer, f.test, f.metric}] = f;
  return m;
}

// "worse" or "better" when b differs from a by more than the threshold, else "".
std::string change_of(const HistFigure& a, const HistFigure& b, double threshold) {
  if (!(a.value > 0)) return "";
  const double ratio = b.value / a.value;
  if (std::fabs(ratio - 1) <= threshold) return "";
  return (ratio > 1) == a.higher_is_better ? "better" : "worse";
}

std::set<std::pair<std::string, std::string>> finding_keys(const RunSummary& s) {
  std::set<std::pair<std::string, std::string>> k;
  for (const auto& f : s.findings) k.insert({f.code, f.entity});
  return k;
}

json diff_json(const RunSummary& r1, const RunSummary& r2, double threshold) {
  json j = {{"run1", r1.run_id}, {"run2", r2.run_id}, {"threshold", threshold}, {"figures", json::array()},
            {"findings_only_in_run1", json::array()}, {"findings_only_in_run2", json::array()}};
  const auto m1 = by_key(r1), m2 = by_key(r2);
  for (const auto& [k, a] : m1) {
    const auto it = m2.find(k);
    json row = figure_json(a);
    row.erase("value");
    row["run1"] = a.value;
    row["run2"] = it == m2.end() ? json(nullptr) : json(it->second.value);
    row["ratio"] = it == m2.end() || !(a.value > 0) ? json(nullptr) : json(it->second.value / a.value);
    row["change"] = it == m2.end() ? "" : change_of(a, it->second, threshold);
    j["figures"].push_back(row);
  }
  const auto k1 = finding_keys(r1), k2 = finding_keys(r2);
  for (const auto& k : k1)
    if (!k2.count(k)) j["findings_only_in_run1"].push_back({{"code", k.first}, {"entity", k.second}});
  for (const auto& k : k2)
    if (!k1.count(k)) j["findings_only_in_run2"].push_back({{"code", k.first}, {"entity", k.second}});
  return j;
}

// A figure as the tables print it, "-" when the run has none.
std::string figure_text(const json& v, const char* format) {
  if (v.is_null()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v.get<double>());
  return buf;
}

void print_diff(const json& d) {
  std::printf("%-24s %-20s %-12s %12s %12s %7s\n", "node/link", "test", "metric", "run1", "run2", "ratio");
  for (const auto& r : d["figures"]) {
    const std::string who = r.contains("peer") ? r["host"].get<std::string>() + "<->" + r["peer"].get<std::string>()
                                               : r["host"].get<std::string>();
    const std::string change = r["change"].get<std::string>();
    std::printf("%-24s %-20s %-12s %12s %12s %7s %s\n", who.c_str(), r["test"].get<std::string>().c_str(),
                r["metric"].get<std::string>().c_str(), figure_text(r["run1"], "%.4g").c_str(),
                figure_text(r["run2"], "%.4g").c_str(), figure_text(r["ratio"], "%.3f").c_str(),
                change.empty() ? "" : ("<- " + change).c_str());
  }
  for (const char* side : {"findings_only_in_run1", "findings_only_in_run2"})
    for (const auto& f : d[side])
      std::printf("%s: %s %s\n", side, f["code"].get<std::string>().c_str(), f["entity"].get<std::string>().c_str());
}

}  // namespace

int cmd_diff(const std::vector<std::string>& args) {
  HistoryArgs a;
  po::options_description desc(
      "usage: kiln diff RUN1 RUN2 [options]\n\nCompares two runs (run directories, or run ids the history database "
      "holds): each node's\nand link's figures side by side with their ratio (RUN2/RUN1), marking a change beyond the\n"
      "threshold as better or worse, and the findings only one of the runs has.\n\noptions");
  desc.add_options()("threshold", po::value(&a.threshold)->default_value(a.threshold),
                     "mark ratios further than this fraction from 1");
  if (auto e = parse_history_args(args, desc, a); !e.empty()) return fail(e + " (see kiln diff --help)");
  if (a.help) {
    std::cout << desc << "\n" << kExitCodes << "\n";
    return 0;
  }
  if (a.words.size() != 2) return fail("kiln diff takes two runs: kiln diff RUN1 RUN2");
  if (!(a.threshold > 0 && a.threshold < 1)) return fail("--threshold must be a fraction between 0 and 1");
  try {
    const auto d = diff_json(load_named_run(a.words[0], a.db), load_named_run(a.words[1], a.db), a.threshold);
    if (a.json)
      std::cout << d.dump(2) << "\n";
    else
      print_diff(d);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return 0;
}

}  // namespace kiln::cli
