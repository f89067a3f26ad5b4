// Summaries of a run for the history database, and the regression rule (history.hpp).
#include "coordinator/history.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <tuple>
#include <stdexcept>

#include "common/channel.hpp"
#include "common/checks.hpp"
#include "common/findings.hpp"
#include "common/hostlist.hpp"
#include "common/stats.hpp"

namespace kiln::coord {

namespace fs = std::filesystem;
using nlohmann::json;

std::pair<std::string, std::string> link_hosts(const std::string& id) {
  const auto arrow = id.find("<->");
  if (arrow == std::string::npos) return {};
  std::string a = id.substr(0, arrow), b = id.substr(arrow + 3);
  if (auto slash = b.find('/'); slash != std::string::npos) b.resize(slash);  // a rail
  if (a.empty() || b.empty()) return {};
  return std::minmax(a, b);
}

void FigureSummarizer::add(const Result& r, const std::set<std::string>* only_hosts) {
  const auto* spec = find_check(r.test);
  if (r.status != Status::Pass || !spec || !spec->figure || r.metric != spec->figure->metric) return;
  const std::int64_t size = spec->figure->per_size && r.size_bytes ? *r.size_bytes : -1;
  const auto put = [&](const std::string& host, const std::string& peer) {
    if (only_hosts && !only_hosts->count(host)) return;
    auto& a = acc_[{host, peer, r.test}];
    if (size < a.size) return;
    if (size > a.size) a.values.clear();
    a.size = size;
    a.values.push_back(r.value);
    a.metric = r.metric;
    a.unit = r.unit;
    a.higher_is_better = spec->figure->higher_is_better;
  };
  if (r.entity.kind != "link") {
    if (!r.host.empty()) put(r.host, "");
    return;
  }
  // A link's figure is the link's, and each end's too: a node's figure in a pair test is the
  // median of its links, which one slow peer does not move but a slow node does.
  const auto [a, b] = link_hosts(r.entity.id);
  if (a.empty()) return;
  put(a, b);
  put(a, "");
  if (b != a) put(b, "");
}

std::vector<HistFigure> FigureSummarizer::figures() const {
  std::vector<HistFigure> out;
  for (const auto& [key, a] : acc_) {
    if (a.values.empty()) continue;
    const auto& [host, peer, test] = key;
    out.push_back({host, peer, test, a.metric, a.unit, stats::median(a.values), a.higher_is_better,
                   static_cast<int>(a.values.size()), a.size >= 0 ? "size=" + std::to_string(a.size) : ""});
  }
  return out;
}

namespace {

template <class Fn>
void each_result(const fs::path& results, Fn&& fn) {
  std::ifstream in(results);
  for (std::string line; std::getline(in, line);) {
    try {
      const auto rec = proto::parse_body(line).get<Record>();
      if (const auto* r = std::get_if<Result>(&rec)) fn(*r);
    } catch (const std::exception&) {  // a torn or malformed line: kiln report counts those
    }
  }
}

}  // namespace

std::vector<HistFigure> figures_of(const fs::path& results, const std::set<std::string>& slow_nodes) {
  // The groups (test, round, group) that held a slow node: a first pass, only when there is one.
  using GroupKey = std::tuple<std::string, std::int64_t, int>;
  std::set<GroupKey> with_slow;
  if (!slow_nodes.empty())
    each_result(results, [&](const Result& r) {
      if (r.group_id >= 0 && slow_nodes.count(r.host)) with_slow.insert({r.test, r.round_id, r.group_id});
    });
  FigureSummarizer s;
  each_result(results, [&](const Result& r) {
    const bool shared = r.group_id >= 0 && with_slow.count({r.test, r.round_id, r.group_id});
    s.add(r, shared ? &slow_nodes : nullptr);
  });
  return s.figures();
}

std::set<std::string> slow_nodes_of(const json& report) {
  std::set<std::string> out;
  for (const auto& f : report.value("findings", json::array())) {
    if (!f.is_object() || f.value("code", "") != to_string(Code::NodeSlow)) continue;
    const auto e = f.value("entity", json::object());
    if (e.is_object() && e.value("kind", "") == "node" && !e.value("id", "").empty()) out.insert(e.value("id", ""));
  }
  return out;
}

RunSummary summarize(const json& report, std::vector<HistFigure> figures, const std::string& plan,
                     const std::string& run_dir) {
  RunSummary s;
  s.run_id = report.value("run_id", "");
  if (s.run_id.empty()) throw std::runtime_error("the report names no run_id");
  s.verdict = report.value("verdict", "");
  s.hostlist = report.value("hostlist", "");
  s.started = report.value("started", 0.0);
  s.duration_s = report.value("duration_s", 0.0);
  s.plan = plan;
  s.run_dir = run_dir;
  for (const auto& n : report.value("nodes", json::array()))
    if (n.is_object() && n.value("host", "") != "") s.hosts.push_back(n.value("host", ""));
  for (const auto& f : report.value("findings", json::array())) {
    if (!f.is_object()) continue;
    const auto e = f.value("entity", json::object());
    s.findings.push_back({f.value("code", ""), e.is_object() ? e.value("kind", "") : "",
                          e.is_object() ? e.value("id", "") : "", f.value("severity", ""),
                          f.value("confidence", 0.0), f.value("summary", "")});
  }
  s.figures = std::move(figures);
  return s;
}

namespace {

json read_json_file(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return nullptr;
  return json::parse(in, nullptr, false);
}

}  // namespace

void add_params_basis(std::vector<HistFigure>& figures, const fs::path& campaign_json) {
  const json campaign = read_json_file(campaign_json);
  if (!campaign.is_object() || !campaign.contains("config") || !campaign["config"].is_object()) return;
  const auto text = campaign["config"].value("params", std::string{});
  const json params = text.empty() ? json::object() : json::parse(text, nullptr, false);
  if (!params.is_object()) return;
  for (auto& f : figures) {
    const auto it = params.find(f.test);
    if (it == params.end() || it->empty()) continue;
    f.basis += (f.basis.empty() ? "" : " ") + std::string("params=") + it->dump();
  }
}

RunSummary summarize_run_dir(const fs::path& dir) {
  const json report = read_json_file(dir / "report.json");
  if (!report.is_object())
    throw std::runtime_error((dir / "report.json").string() + " is missing or unreadable (kiln report " +
                             dir.string() + " rebuilds it)");
  const json campaign = read_json_file(dir / "campaign.json");
  std::string plan;
  if (campaign.is_object() && campaign.contains("config") && campaign["config"].is_object())
    plan = campaign["config"].value("tests", "");
  auto figures = figures_of(dir / "results.jsonl", slow_nodes_of(report));
  add_params_basis(figures, dir / "campaign.json");
  return summarize(report, std::move(figures), plan, fs::absolute(dir).lexically_normal().string());
}

namespace {

// A figure that fell on every node reporting it (two or more) is not one node's regression: a
// collective's figure is the group's on every rank (one slow port made 8 of 8 nodes "regressed" on
// the 8-node testbed), and a change every node shares (driver, firmware, the fabric) moves them all.
// It is one node.regressed finding for the group, whose next step points at the run's own findings.
// Per figure (test, metric, basis): the nodes that report it now, and its node.regressed findings.
using FigureKey = std::tuple<std::string, std::string, std::string>;
struct FigureNodes {
  std::vector<std::string> hosts;
  std::vector<std::size_t> regressed;  // indexes into the findings
};

std::vector<Finding> merge_shared_regressions(std::vector<Finding> found, const std::map<FigureKey, FigureNodes>& figures) {
  std::vector<char> merged(found.size(), 0);
  std::vector<Finding> groups;
  for (const auto& [key, fig] : figures) {
    const auto& hosts = fig.hosts;
    const auto& idx = fig.regressed;
    if (hosts.size() < 2 || idx.size() < hosts.size()) continue;
    const auto& [test, metric, basis] = key;
    json evidence = json::array();
    double lo = 1.0, hi = 0.0, confidence = 0.0;
    for (auto i : idx) {
      merged[i] = 1;
      auto e = found[i].evidence[0];
      e["node"] = found[i].entity.id;
      const double fr = e.value("fraction", 0.0);
      lo = std::min(lo, fr), hi = std::max(hi, fr);
      confidence = std::max(confidence, found[i].confidence);
      evidence.push_back(std::move(e));
    }
    char range[64], text[320];
    if (std::lround(lo * 100) == std::lround(hi * 100)) std::snprintf(range, sizeof range, "%.0f%%", hi * 100);
    else std::snprintf(range, sizeof range, "%.0f-%.0f%%", lo * 100, hi * 100);
    std::snprintf(text, sizeof text,
                  "%s %s is %s worse than its median over earlier runs on every one of the %zu nodes that report "
                  "it: a figure they share, not one node's",
                  test.c_str(), metric.c_str(), range, hosts.size());
    auto f = make_finding(Code::NodeRegressed, {"group", kiln::hostlist::compress(hosts)}, text, std::move(evidence),
                          confidence);
    f.next_step = "this run's node.slow, link.slow or switch.slow findings name the cause where one was found; with "
                  "none, the whole group got slower since the earlier runs (fabric, driver, firmware or load): "
                  "compare with one of them (kiln diff), then run again to confirm";
    groups.push_back(std::move(f));
  }
  std::vector<Finding> out;
  for (std::size_t i = 0; i < found.size(); ++i)
    if (!merged[i]) out.push_back(std::move(found[i]));
  for (auto& g : groups) out.push_back(std::move(g));
  return out;
}

}  // namespace

std::vector<Finding> regression_findings(const std::vector<HistFigure>& now, const NodePast& past,
                                         const RegressionConfig& cfg) {
  std::vector<Finding> out;
  std::map<FigureKey, FigureNodes> figures;
  for (const auto& f : now) {
    if (!f.peer.empty()) continue;
    auto& fig = figures[{f.test, f.metric, f.basis}];
    fig.hosts.push_back(f.host);
    const auto it = past.find({f.host, f.test, f.metric, f.basis});
    if (it == past.end()) continue;
    const std::size_t n = std::min<std::size_t>(it->second.size(), static_cast<std::size_t>(std::max(cfg.runs, 0)));
    if (n < 2) continue;
    const std::vector<double> last(it->second.begin(), it->second.begin() + static_cast<std::ptrdiff_t>(n));
    const double before = stats::median(last);
    if (!(before > 0)) continue;
    // The fraction by which the figure got worse: less throughput, or more time.
    const double worse = f.higher_is_better ? (before - f.value) / before : (f.value - before) / before;
    if (!(worse > cfg.threshold)) continue;
    char text[256];
    std::snprintf(text, sizeof text, "%s %s %.4g %s is %.0f%% worse than its median %.4g over its last %zu runs",
                  f.test.c_str(), f.metric.c_str(), f.value, f.unit.c_str(), worse * 100, before, n);
    const double confidence = std::min(0.9, 0.5 + 0.1 * static_cast<double>(n));
    fig.regressed.push_back(out.size());
    out.push_back(make_finding(Code::NodeRegressed, {"node", f.host}, text,
                               json::array({{{"figure", f.test + " " + f.metric}, {"unit", f.unit}, {"now", f.value},
                                             {"median_before", before}, {"runs", n}, {"fraction", worse},
                                             {"threshold", cfg.threshold}}}),
                               confidence));
  }
  return merge_shared_regressions(std::move(out), figures);
}

fs::path history_path(const std::string& option) {
  if (option == "off") return {};
  if (!option.empty()) return option;
  if (const char* env = std::getenv("KILN_HISTORY"); env && *env) return history_path(env);
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : ".") / ".local" / "share" / "kiln" / "history.sqlite";
}

}  // namespace kiln::coord
