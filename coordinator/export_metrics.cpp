// kiln.prom (Prometheus text exposition format, as node_exporter's textfile collector reads it: no
// timestamps, one HELP and TYPE per family) and report.influx (Influx line protocol).
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "common/findings.hpp"
#include "common/hostlist.hpp"
#include "coordinator/report_exports.hpp"

namespace kiln::coord {

std::string prom_label_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string influx_tag_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == ',' || c == ' ' || c == '=' || c == '\\') out += '\\';
    // A newline ends a line protocol point whatever precedes it: it cannot be escaped, only replaced.
    if (c == '\n' || c == '\r') { out += "\\ "; continue; }
    out += c;
  }
  return out;
}

std::string influx_string_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' || c == '\r' ? ' ' : c;
  }
  return out;
}

namespace {

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// A figure in the base unit Prometheus names prefer, with the family it belongs to; units with no
// base unit stay in kiln_check_figure with their unit as a label.
struct Family {
  std::string name, help;
  double scale = 1;
};
Family family_of(const std::string& unit) {
  static const std::map<std::string, Family> known = {
      {"GB/s", {"kiln_check_bytes_per_second", "A check's figure: bandwidth (bytes per second)", 1e9}},
      {"us", {"kiln_check_seconds", "A check's figure: time (seconds)", 1e-6}},
      {"GiB", {"kiln_check_bytes", "A check's figure: size (bytes)", 1073741824.0}},
      {"MHz", {"kiln_check_hertz", "A check's figure: clock (hertz)", 1e6}},
      {"TFLOP/s", {"kiln_check_flops", "A check's figure: floating-point operations per second", 1e12}},
      {"W", {"kiln_check_watts", "A check's figure: power (watts)", 1}},
      {"C", {"kiln_check_celsius", "A check's figure: temperature (degrees Celsius)", 1}},
      {"fraction", {"kiln_check_ratio", "A check's figure: a fraction (0..1)", 1}},
  };
  auto it = known.find(unit);
  return it != known.end() ? it->second : Family{"kiln_check_figure", "A check's figure in the unit its unit label names", 1};
}

using Labels = std::vector<std::pair<std::string, std::string>>;
std::string labels(const Labels& ls) {
  std::string s;
  for (const auto& [k, v] : ls) s += (s.empty() ? "" : ",") + k + "=\"" + prom_label_escape(v) + "\"";
  return s.empty() ? s : "{" + s + "}";
}

// Series of one family, unique by their labels: a later value with the same labels replaces an earlier one.
struct Families {
  std::map<std::string, std::pair<std::string, std::map<std::string, double>>> by_name;  // name -> help, series
  void declare(const std::string& name, const std::string& help) { by_name[name].first = help; }
  void gauge(const std::string& name, const std::string& help, const Labels& ls, double v) {
    auto& f = by_name[name];
    f.first = help;
    f.second[labels(ls)] = v;
  }
  std::string text() const {
    std::ostringstream o;
    for (const auto& [name, f] : by_name) {
      o << "# HELP " << name << " " << f.first << "\n# TYPE " << name << " gauge\n";
      for (const auto& [ls, v] : f.second) o << name << ls << " " << num(v) << "\n";
    }
    return o.str();
  }
};

// The run id is a label only on kiln_run_info: on every series it would start new series with each
// run (the textfile is replaced by the next run), which Prometheus keeps as churn.
Labels result_labels(const Result& x) {
  Labels ls{{"node", x.host}, {"rank", std::to_string(x.rank)}};
  if (x.entity.kind == "gpu" || x.entity.kind == "hca" || x.entity.kind == "link") ls.push_back({x.entity.kind, x.entity.id});
  ls.push_back({"test", x.test});
  ls.push_back({"metric", x.metric});
  if (x.size_bytes) ls.push_back({"size_bytes", std::to_string(*x.size_bytes)});
  return ls;
}

void run_families(Families& fs, const Report& r) {
  fs.gauge("kiln_run_info", "1, naming the run whose figures the file holds", {{"run_id", r.run_id}}, 1);
  fs.gauge("kiln_run_verdict", "1 for the verdict of the run (pass, fail, incomplete, error)", {{"verdict", r.verdict}}, 1);
  fs.gauge("kiln_run_timestamp_seconds", "When the run started (unix time)", {}, r.started);
  fs.gauge("kiln_run_duration_seconds", "How long the run took", {}, r.duration_s);
  fs.declare("kiln_findings", "1 for each finding of the run");  // declared even when there is none
  for (const auto& f : r.findings)
    fs.gauge("kiln_findings", "1 for each finding of the run",
             {{"code", to_string(f.code)}, {"severity", to_string(f.severity)}, {"entity", f.entity.kind + ":" + f.entity.id}}, 1);
  for (const auto& [test, by_status] : r.checks_by_test)
    for (const auto& [status, n] : by_status)
      fs.gauge("kiln_checks", "Ranks that ended a check with this status", {{"test", test}, {"status", status}},
               static_cast<double>(n));
  const NodeSplit split = split_nodes(r);
  for (const auto& [list, ok] : {std::pair{split.good, 1.0}, std::pair{split.bad, 0.0}}) {
    std::vector<std::string> hosts;
    try { hosts = hostlist::expand(list); } catch (const std::exception&) {}
    for (const auto& h : hosts) fs.gauge("kiln_node_ok", "1 when the run found nothing wrong with the node, 0 when it is to be drained",
                                         {{"node", h}}, ok);
  }
}

// Whole seconds and the fraction apart: unix time * 1e9 as one double loses the last microseconds.
long long ns_of(double unix_s) {
  const double whole = std::floor(unix_s);
  return static_cast<long long>(whole) * 1000000000LL + std::llround((unix_s - whole) * 1e9);
}
std::string ns(double unix_s) { return std::to_string(ns_of(unix_s)); }

std::string tags(const Labels& ls) {
  std::string s;
  for (const auto& [k, v] : ls)
    if (!v.empty()) s += "," + k + "=" + influx_tag_escape(v);  // an empty tag value is not allowed
  return s;
}

}  // namespace

std::string prom_textfile(const Report& r, const std::vector<Result>& results) {
  Families fs;
  run_families(fs, r);
  for (const auto& x : results) {
    if (!std::isfinite(x.value)) continue;
    const Family f = family_of(x.unit);
    Labels ls = result_labels(x);
    if (f.name == "kiln_check_figure") ls.push_back({"unit", x.unit});
    fs.gauge(f.name, f.help, ls, x.value * f.scale);
  }
  return fs.text();
}

std::string influx_lines(const Report& r, const std::vector<Result>& results) {
  std::ostringstream o;
  for (const auto& x : results) {
    if (!std::isfinite(x.value)) continue;
    Labels ls = result_labels(x);
    ls.insert(ls.begin(), {"run_id", r.run_id});
    ls.push_back({"unit", x.unit});
    ls.push_back({"status", to_string(x.status)});
    o << "kiln_result" << tags(ls) << " value=" << num(x.value) << " " << ns(x.ts) << "\n";
  }
  const double end = r.started + r.duration_s;
  long long i = 0;  // findings share the run's end as their time: a distinct nanosecond keeps each a point
  for (const auto& f : r.findings) {
    o << "kiln_finding" << tags({{"run_id", r.run_id}, {"code", to_string(f.code)}, {"severity", to_string(f.severity)},
                                 {"entity", f.entity.kind + ":" + f.entity.id}})
      << " confidence=" << num(f.confidence) << ",summary=\"" << influx_string_escape(f.summary) << "\",next_step=\""
      << influx_string_escape(f.next_step) << "\" " << ns_of(end) + i++ << "\n";
  }
  o << "kiln_run" << tags({{"run_id", r.run_id}, {"verdict", r.verdict}}) << " duration_s=" << num(r.duration_s)
    << ",findings=" << r.findings.size() << "i,results=" << r.results_total << "i " << ns(r.started) << "\n";
  return o.str();
}

}  // namespace kiln::coord
