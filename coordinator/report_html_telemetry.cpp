// report.html's telemetry section: per node, the host and GPU series of the run's "telemetry"
// records as inline SVG line plots over time, each check's start marked by a dashed line (its
// name in the line's title). No script: the page stays a document.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "coordinator/report_html.hpp"

namespace kiln::coord {

namespace {

constexpr std::size_t kMaxPlottedGpus = 16;
constexpr double kW = 760, kH = 150, kLeft = 56, kRight = 750, kTop = 12, kBottom = 132;
const char* const kColors[] = {"#2f81f7", "#cf222e", "#1a7f37", "#bf8700", "#8250df", "#0a7ea4", "#d4318c", "#57606a"};

std::pair<double, double> mean_of(const std::vector<std::pair<double, double>>& xs) {
  double t = 0, v = 0;
  for (const auto& [a, b] : xs) t += a, v += b;
  return {t / static_cast<double>(xs.size()), v / static_cast<double>(xs.size())};
}

std::string fmt(double v, const char* f = "%.1f") {
  char b[48];
  std::snprintf(b, sizeof b, f, std::isfinite(v) ? v : 0.0);
  return b;
}

bool finite_number(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j.at(key).is_number() && std::isfinite(j.at(key).get<double>());
}

struct Chart {
  const char* id;
  const char* title;
  std::vector<std::string> keys;  // series names of the node drawn in it
  bool percent = false;           // a fixed 0..100 axis
};

std::vector<Chart> charts_of(const NodeTelemetry& n) {
  std::vector<Chart> out = {{"host", "CPU busy and memory used (%)", {}, true},
                            {"power", "GPU power (W)", {}},
                            {"temp", "GPU temperature (C)", {}},
                            {"sm_clock", "GPU SM clock (MHz)", {}}};
  const char* suffix[] = {"", ".power_w", ".temp_c", ".sm_mhz"};
  for (const auto& [key, s] : n.series) {
    if (s.points.empty() && s.pending.empty()) continue;
    if (key == "cpu_pct" || key == "mem_used_pct") out[0].keys.push_back(key);
    for (int c = 1; c < 4; ++c)
      if (key.size() > std::string(suffix[c]).size() && key.ends_with(suffix[c])) out[c].keys.push_back(key);
  }
  return out;
}

std::vector<std::pair<double, double>> points_of(const TelemetrySeries& s) {
  auto p = s.points;
  if (!s.pending.empty()) p.push_back(mean_of(s.pending));
  return p;
}

void plot(std::ostringstream& os, const NodeTelemetry& n, const Chart& c, double t0, double t1) {
  double lo = 0, hi = c.percent ? 100 : 0;
  for (const auto& k : c.keys)
    for (const auto& [t, v] : points_of(n.series.at(k))) lo = std::min(lo, v), hi = std::max(hi, c.percent ? v : v * 1.1);
  if (hi - lo < 1e-9) hi = lo + 1;
  const double span = std::max(t1 - t0, 1e-9);
  auto x = [&](double t) { return kLeft + (kRight - kLeft) * std::clamp((t - t0) / span, 0.0, 1.0); };
  auto y = [&](double v) { return kBottom - (kBottom - kTop) * std::clamp((v - lo) / (hi - lo), 0.0, 1.0); };
  os << "<svg class=\"telemetry-plot\" data-plot=\"" << c.id << "\" width=\"" << kW << "\" height=\"" << kH
     << "\" viewBox=\"0 0 " << kW << " " << kH << "\" role=\"img\"><title>" << c.title << "</title>\n"
     << "<text x=\"4\" y=\"" << kTop + 4 << "\">" << fmt(hi, "%.4g") << "</text><text x=\"4\" y=\"" << kBottom
     << "\">" << fmt(lo, "%.4g") << "</text><text x=\"" << kLeft << "\" y=\"" << kH - 4 << "\">" << c.title
     << "; " << fmt(span, "%.0f") << " s</text>\n";
  for (const auto& ck : n.checks)
    os << "<line class=\"check\" x1=\"" << fmt(x(ck.start)) << "\" x2=\"" << fmt(x(ck.start)) << "\" y1=\"" << kTop
       << "\" y2=\"" << kBottom << "\"><title>" << html_escape(ck.test) << " from " << fmt(ck.start - t0) << " s to "
       << fmt(ck.end - t0) << " s</title></line>\n";
  std::size_t colour = 0;
  auto label = [](const std::string& k) { return k.substr(0, k.find('.')); };  // "gpu3.power_w" -> "gpu3"
  double legend_x = kRight;  // right-aligned under the plot (10 px monospace: 6.5 px a character)
  for (const auto& k : c.keys) legend_x -= 6.5 * static_cast<double>(label(k).size()) + 10;
  for (const auto& k : c.keys) {
    const std::string name = label(k);
    os << "<text x=\"" << fmt(legend_x) << "\" y=\"" << kH - 4 << "\" fill=\"" << kColors[colour % 8] << "\">"
       << html_escape(name) << "</text>";
    legend_x += 6.5 * static_cast<double>(name.size()) + 10;
    os << "<polyline data-series=\"" << html_escape(k) << "\" stroke=\"" << kColors[colour++ % 8] << "\" points=\"";
    for (const auto& [t, v] : points_of(n.series.at(k))) os << fmt(x(t)) << "," << fmt(y(v)) << " ";
    os << "\"><title>" << html_escape(k) << "</title></polyline>\n";
  }
  os << "</svg>\n";
}

void node_plots(std::ostringstream& os, const std::string& host, const NodeTelemetry& n) {
  double t0 = INFINITY, t1 = -INFINITY;
  for (const auto& [k, s] : n.series)
    for (const auto& [t, v] : points_of(s)) t0 = std::min(t0, t), t1 = std::max(t1, t);
  for (const auto& c : n.checks) t0 = std::min(t0, c.start), t1 = std::max(t1, c.end);
  os << "<div class=\"telemetry-node\" data-host=\"" << html_escape(host) << "\" data-samples=\"" << n.samples
     << "\" data-checks=\"" << n.checks.size() << "\">\n<h3>" << html_escape(host) << ": " << n.samples
     << " samples, " << n.checks.size() << " checks</h3>\n";
  if (!std::isfinite(t0) || !std::isfinite(t1)) return void(os << "</div>\n");
  for (const auto& c : charts_of(n))
    if (!c.keys.empty()) plot(os, n, c, t0, t1);
  os << "</div>\n";
}

}  // namespace

void TelemetrySeries::add(double ts, double v) {
  pending.emplace_back(ts, v);
  if (static_cast<int>(pending.size()) < merged) return;
  points.push_back(mean_of(pending));
  pending.clear();
  if (points.size() < kTelemetryPoints) return;
  std::vector<std::pair<double, double>> halved;  // neighbours averaged: half the points, twice the span
  for (std::size_t i = 0; i + 1 < points.size(); i += 2) halved.push_back(mean_of({points[i], points[i + 1]}));
  if (points.size() % 2) halved.push_back(points.back());
  points = std::move(halved);
  merged *= 2;
}

bool TelemetryFigures::add(const nlohmann::json& j) {
  const auto metric = j.contains("metric") && j.at("metric").is_string() ? j.at("metric").get<std::string>() : "";
  const bool summary = metric == "telemetry_summary";
  if (metric != "telemetry" && !summary) return false;
  const auto& extra = j.contains("extra") ? j.at("extra") : nlohmann::json();
  if (!j.contains("host") || !j.at("host").is_string() || !finite_number(j, "ts") || !extra.is_object()) return true;
  const auto host = j.at("host").get<std::string>();
  if (!nodes.count(host) && nodes.size() >= kTelemetryNodes) return ++nodes_left_out, true;
  auto& n = nodes[host];
  const double ts = j.at("ts").get<double>();
  if (summary) {
    const auto test = j.contains("test") && j.at("test").is_string() ? j.at("test").get<std::string>() : "";
    const double len = finite_number(extra, "t_s") ? extra.at("t_s").get<double>() : 0;
    if (n.checks.size() < kTelemetryChecks) n.checks.push_back({test, ts - len, ts});
    return true;
  }
  ++n.samples;
  const auto& node = extra.contains("node") ? extra.at("node") : nlohmann::json();
  for (const char* k : {"cpu_pct", "mem_used_pct"})
    if (node.is_object() && finite_number(node, k)) n.series[k].add(ts, node.at(k).get<double>());
  const auto& gpus = extra.contains("gpus") ? extra.at("gpus") : nlohmann::json();
  if (!gpus.is_array()) return true;
  for (std::size_t i = 0; i < std::min(gpus.size(), kMaxPlottedGpus); ++i)
    for (const char* k : {"power_w", "temp_c", "sm_mhz"})
      if (gpus[i].is_object() && finite_number(gpus[i], k))
        n.series["gpu" + std::to_string(i) + "." + k].add(ts, gpus[i].at(k).get<double>());
  return true;
}

void telemetry_section(std::ostringstream& os, const TelemetryFigures& t) {
  os << "<section id=\"telemetry\">\n<h2>Telemetry</h2>\n";
  if (t.nodes.empty()) {
    os << "<p class=\"none\">no telemetry in this run (kiln-worker --telemetry-interval 0, or a worker from "
          "before telemetry)</p>\n</section>\n";
    return;
  }
  os << "<p class=\"legend\">Each node's readings during the run (docs/telemetry.md); a dashed line marks the start "
        "of a check (its name in the line's tooltip)"
     << (t.nodes_left_out ? "; " + std::to_string(t.nodes_left_out) + " readings of nodes past the first " +
                                std::to_string(kTelemetryNodes) + " left out"
                          : std::string())
     << "</p>\n";
  for (const auto& [host, n] : t.nodes) node_plots(os, host, n);
  os << "</section>\n";
}

}  // namespace kiln::coord
