// report.html from a Report: one section per part, each with a stable id (and classes on its rows and
// cells) that tests and scripts can find. The grid, the bars and the timeline are plain HTML and
// inline SVG; the page runs no script.
#include "coordinator/report_html.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "common/findings.hpp"
#include "common/text.hpp"
#include "coordinator/store.hpp"

namespace kiln::coord {

namespace {

std::string num(double v) {
  char b[48];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A background from red (half the median or less) to green (the median or better).
std::string shade(double value, double med) {
  const double ratio = med > 0 ? value / med : 1;
  const double h = std::clamp((ratio - 0.5) / 0.5, 0.0, 1.0) * 120;
  return "hsl(" + num(h) + ",70%,78%)";
}

std::string none(const std::string& what) { return "<p class=\"none\">" + html_escape(what) + "</p>\n"; }

// A finding's key figures: the scalars of its evidence, nested ones named by their path
// ("extra.peer_deficit: 0.41"), at most a dozen.
void flatten(const std::string& path, const nlohmann::json& v, int depth, std::vector<std::string>& out) {
  if (out.size() >= 12) return;
  if (v.is_number()) return out.push_back(path + ": " + num(v.get<double>()));
  if (v.is_string()) return out.push_back(path + ": " + printable(v.get<std::string>(), 80));
  if (!v.is_structured() || depth > 3) return out.push_back(path + ": " + printable(v.dump(), 60));
  std::size_t i = 0;
  for (const auto& [k, e] : v.items()) {
    if (v.is_array() && ++i > 3) break;
    const std::string key = v.is_array() ? path + "[" + k + "]" : (path.empty() ? k : path + "." + k);
    flatten(key, e, depth + 1, out);
  }
}

std::string evidence_text(const nlohmann::json& e) {
  std::vector<std::string> items;
  flatten("", e.is_array() && e.size() == 1 ? e[0] : e, 0, items);  // one item: no "[0]." on every line
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : "; ") + s;
  return out;
}

// The host a finding is about: its node, or the host of the rank it names.
std::string finding_host(const Finding& f, const Report& r) {
  if (f.entity.kind != "rank") return node_of(f.entity);
  for (const auto& k : r.ranks)
    if (std::to_string(k.rank) == f.entity.id) return k.host;
  return "";
}

bool touches(const Finding& f, const Report& r, const std::string& host) {
  if (finding_host(f, r) == host) return true;
  const auto sep = f.entity.id.find("<->");
  if (f.entity.kind != "link" || sep == std::string::npos) return false;
  const std::string b = f.entity.id.substr(sep + 3);
  return f.entity.id.substr(0, sep) == host || b.substr(0, b.find('/')) == host;
}

void header(std::ostringstream& os, const Report& r) {
  const auto split = split_nodes(r);
  os << "<header id=\"summary\" data-verdict=\"" << html_escape(r.verdict) << "\">\n<h1>kiln run "
     << html_escape(r.run_id) << " <span class=\"verdict verdict-" << html_escape(r.verdict) << "\">"
     << html_escape(r.verdict) << "</span></h1>\n<dl>";
  const auto row = [&os](const std::string& k, const std::string& v) {
    os << "<dt>" << k << "</dt><dd>" << html_escape(v.empty() ? "-" : v) << "</dd>";
  };
  row("duration", num(r.duration_s) + " s");
  row("launcher", r.launcher);
  row("hostlist", r.hostlist);
  row("good nodes", split.good + " (" + std::to_string(split.good_count) + ")");
  row("bad nodes", split.bad + " (" + std::to_string(split.bad_count) + ")");
  row("results", std::to_string(r.results_total));
  if (!r.error.empty()) row("error", r.error);
  os << "</dl>\n</header>\n";
}

void findings(std::ostringstream& os, const Report& r) {
  os << "<section id=\"findings\">\n<h2>Findings (" << r.findings.size() << ")</h2>\n";
  if (r.findings.empty()) {
    os << none("no findings in this run");
  } else {
    os << "<table><tr><th>severity</th><th>code</th><th>entity</th><th>summary</th><th>evidence</th><th>next "
          "step</th></tr>\n";
    for (const auto& f : r.findings) {
      const std::string sev = to_string(f.severity);
      os << "<tr class=\"finding\" data-code=\"" << html_escape(to_string(f.code)) << "\" data-entity=\""
         << html_escape(f.entity.id) << "\"><td class=\"sev sev-" << sev << "\">" << sev << "</td><td>"
         << html_escape(to_string(f.code)) << "</td><td>" << html_escape(f.entity.kind + " " + f.entity.id)
         << "</td><td>" << html_escape(f.summary) << "</td><td class=\"evidence\">"
         << html_escape(evidence_text(f.evidence)) << "</td><td>" << html_escape(f.next_step) << "</td></tr>\n";
    }
    os << "</table>\n";
  }
  os << "</section>\n";
}

std::string node_status(const Report& r, const NodeRow& n) {
  for (const auto& k : r.ranks)
    if (k.host == n.host && k.state != "ok") return "lost";
  for (const auto& f : r.findings)
    if (f.severity >= Severity::Error && finding_host(f, r) == n.host) return "bad";
  return "ok";
}

void nodes(std::ostringstream& os, const Report& r) {
  os << "<section id=\"nodes\">\n<h2>Nodes (" << r.nodes.size() << ")</h2>\n";
  if (r.nodes.empty()) return void(os << none("no node reported in this run") << "</section>\n");
  os << "<table><tr><th>host</th><th>ranks</th><th>GPUs</th><th>status</th><th>headline</th><th>findings</th></tr>\n";
  for (const auto& n : r.nodes) {
    std::string ranks, heads;
    for (int k : n.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(k);
    for (const auto& k : r.ranks)
      if (k.host == n.host && !k.headline.empty()) heads += (heads.empty() ? "" : "\n") + k.headline;
    std::string gpus = std::to_string(n.info.gpu_count);
    if (!n.info.gpu_models.empty()) gpus += " × " + n.info.gpu_models.front();
    const auto count = std::count_if(r.findings.begin(), r.findings.end(),
                                     [&](const Finding& f) { return touches(f, r, n.host); });
    const std::string st = node_status(r, n);
    os << "<tr class=\"node status-" << st << "\" data-host=\"" << html_escape(n.host) << "\"><td>"
       << html_escape(n.host) << "</td><td>" << ranks << "</td><td>" << html_escape(gpus) << "</td><td>" << st
       << "</td><td class=\"evidence\">" << html_escape(heads) << "</td><td class=\"num\">" << count << "</td></tr>\n";
  }
  os << "</table>\n</section>\n";
}

void bars(std::ostringstream& os, const HtmlFigures& f) {
  os << "<section id=\"gpu-bars\">\n<h2>Per-GPU figures</h2>\n";
  if (f.bars.empty()) return void(os << none("no GPU or rank figures in this run") << "</section>\n");
  std::vector<double> values;
  for (const auto& b : f.bars) values.push_back(b.value);
  const double med = median(values);
  const double top = std::max(*std::max_element(values.begin(), values.end()), 1e-12);
  const bool gpus = !f.bars.front().metric.empty();
  os << "<p class=\"legend\">" << (gpus ? "" : "no GPU figure in this run: each rank's headline, ")
     << html_escape(f.bars.front().test + (gpus ? " " + f.bars.front().metric : ""))
     << "; the line marks the fleet median (" << num(med) << " " << html_escape(f.bars.front().unit)
     << "); red: below 90% of it</p>\n<div class=\"bars\">\n";
  for (const auto& b : f.bars) {
    const double w = 400 * std::max(b.value, 0.0) / top, mx = 400 * med / top;
    const bool low = med > 0 && b.value < 0.9 * med;
    os << "<span>" << html_escape(b.label) << "</span><span class=\"bar " << (low ? "bar-low" : "bar-ok")
       << "\" data-label=\"" << html_escape(b.label) << "\" data-value=\"" << num(b.value)
       << "\"><svg width=\"410\" height=\"14\"><rect class=\"fill\" x=\"0\" y=\"1\" height=\"12\" width=\"" << num(w)
       << "\"/><line x1=\"" << num(mx) << "\" x2=\"" << num(mx) << "\" y1=\"0\" y2=\"14\" stroke=\"#1d2329\" "
       << "stroke-width=\"2\"/></svg></span><span>" << num(b.value) << " " << html_escape(b.unit) << " ("
       << num(med > 0 ? 100 * b.value / med : 100) << "% of median)</span>\n";
  }
  os << "</div>\n</section>\n";
}

// One host x host grid: the median of each pair's figures, coloured against the grid's median.
void grid(std::ostringstream& os, const std::string& test, const std::vector<const PairFigure*>& figs) {
  std::set<std::string> hosts;
  std::map<std::pair<std::string, std::string>, std::vector<double>> cells;
  for (const auto* p : figs) {
    hosts.insert(p->a);
    hosts.insert(p->b);
    cells[{std::min(p->a, p->b), std::max(p->a, p->b)}].push_back(p->value);
  }
  std::map<std::pair<std::string, std::string>, double> value;
  std::vector<double> all;
  for (const auto& [k, v] : cells) all.push_back(value[k] = median(v));
  const double med = median(all);
  os << "<div class=\"grid-title\">" << html_escape(test) << " [" << html_escape(figs.front()->unit)
     << "], median " << num(med) << "</div>\n<table class=\"heatmap\" data-test=\"" << html_escape(test)
     << "\"><tr><th></th>";
  for (const auto& h : hosts) os << "<th>" << html_escape(h) << "</th>";
  os << "</tr>\n";
  for (const auto& a : hosts) {
    os << "<tr><th>" << html_escape(a) << "</th>";
    for (const auto& b : hosts) {
      const auto it = value.find({std::min(a, b), std::max(a, b)});
      if (it == value.end()) {
        os << "<td class=\"empty\"></td>";
        continue;
      }
      os << "<td class=\"cell\" data-a=\"" << html_escape(a) << "\" data-b=\"" << html_escape(b) << "\" data-value=\""
         << num(it->second) << "\" style=\"background:" << shade(it->second, med) << "\" title=\""
         << html_escape(a + " - " + b + ": " + num(it->second)) << "\">" << num(it->second) << "</td>";
    }
    os << "</tr>\n";
  }
  os << "</table>\n";
}

void heatmap(std::ostringstream& os, const HtmlFigures& f) {
  os << "<section id=\"heatmap\">\n<h2>Pair and edge figures</h2>\n";
  std::map<std::string, std::vector<const PairFigure*>> by_test;
  for (const auto& p : f.pairs) by_test[p.test].push_back(&p);
  if (by_test.empty()) return void(os << none("no pair figures in this run") << "</section>\n");
  os << "<p class=\"legend\">each cell: the median figure between two hosts; green at the grid's median or "
        "better, red at half of it or worse</p>\n";
  for (const auto& [test, figs] : by_test) grid(os, test, figs);
  os << "</section>\n";
}

void timeline(std::ostringstream& os, const Report& r) {
  os << "<section id=\"timeline\">\n<h2>Rounds (" << r.rounds.size() << ")</h2>\n";
  if (r.rounds.empty()) return void(os << none("no rounds ran") << "</section>\n");
  double total = 0;
  for (const auto& rd : r.rounds) total += std::max(rd.duration_s, 0.0);
  total = std::max(total, 1e-9);
  os << "<p class=\"legend\">blue: plan rounds; amber: localization rounds; " << num(total)
     << " s in all</p>\n<div class=\"timeline\">\n";
  double start = 0;
  for (const auto& rd : r.rounds) {
    const double d = std::max(rd.duration_s, 0.0);
    std::string tests;
    for (const auto& t : rd.tests) tests += (tests.empty() ? "" : ",") + t.key;
    os << "<div class=\"round phase-" << html_escape(rd.phase) << "\" data-id=\"" << rd.id << "\" data-phase=\""
       << html_escape(rd.phase) << "\" data-groups=\"" << rd.groups.size() << "\" title=\""
       << html_escape(rd.reason) << "\"><div class=\"track\"><div class=\"span\" style=\"left:"
       << num(100 * start / total) << "%;width:" << num(100 * d / total) << "%\"></div></div><div class=\"label\">#"
       << rd.id << " " << html_escape(rd.phase) << ", " << rd.groups.size() << " group(s), " << num(d) << " s, "
       << html_escape(tests) << (rd.finished ? "" : " (cut short)") << (rd.reason.empty() ? "" : ": ")
       << html_escape(rd.reason)
       << "</div></div>\n";
    start += d;
  }
  os << "</div>\n</section>\n";
}

void checks(std::ostringstream& os, const Report& r) {
  os << "<section id=\"checks\">\n<h2>Checks</h2>\n";
  if (r.checks_by_test.empty()) return void(os << none("no checks ended in this run") << "</section>\n");
  std::set<std::string> statuses;
  for (const auto& [t, by] : r.checks_by_test)
    for (const auto& [s, n] : by) statuses.insert(s);
  os << "<table><tr><th>check</th>";
  for (const auto& s : statuses) os << "<th>" << html_escape(s) << "</th>";
  os << "</tr>\n";
  for (const auto& [t, by] : r.checks_by_test) {
    os << "<tr class=\"check\" data-test=\"" << html_escape(t) << "\"><td>" << html_escape(t) << "</td>";
    for (const auto& s : statuses) {
      const auto it = by.find(s);
      const auto n = it == by.end() ? 0 : it->second;
      os << "<td class=\"num" << (n ? " st-" + html_escape(s) : std::string()) << "\">" << n << "</td>";
    }
    os << "</tr>\n";
  }
  os << "</table>\n</section>\n";
}

}  // namespace

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t') out += c;
    }
  }
  return out;
}

std::string render_html(const Report& r, const HtmlFigures& f) {
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>kiln " << html_escape(r.run_id)
     << ": " << html_escape(r.verdict) << "</title>\n<style>" << report_html_css() << "</style>\n</head><body>\n";
  header(os, r);
  findings(os, r);
  nodes(os, r);
  bars(os, f);
  heatmap(os, f);
  timeline(os, r);
  telemetry_section(os, f.telemetry);
  checks(os, r);
  os << "</body></html>\n";
  return os.str();
}

std::string write_report_html(const std::filesystem::path& out, const Report& r,
                              const std::filesystem::path& results_jsonl) {
  try {
    write_file_atomic(out, render_html(r, collect_figures(r, results_jsonl)));
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace kiln::coord
