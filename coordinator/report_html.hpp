// report.html: the report as one self-contained page for an operator's browser (no network, no
// scripts, fonts or images from elsewhere): verdict, findings, nodes, per-GPU bars, a host x host
// heatmap of pair and edge figures, the rounds as a timeline and the checks. Written next to
// report.json from the same Report, plus figures read back from results.jsonl that report.json
// does not hold. Every string from the run is escaped: a host name is data, never markup.
#pragma once

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coordinator/report.hpp"

namespace kiln::coord {

// One bar: a GPU's figure (gpu.burn's tflops), or a rank's headline when the run has no GPU figure.
struct BarFigure {
  std::string label, host, test, metric, unit;
  double value = 0;
};

// One measurement between two hosts (a pair test, a group of two, one edge of an all-to-all).
struct PairFigure {
  std::string test, unit, a, b;
  double value = 0;
};

// Node telemetry over the run (results with metric "telemetry" and "telemetry_summary", from
// worker/telemetry.cpp), for the plots of
// report_html_telemetry.cpp. Bounded whatever the run's length: each series keeps at most
// kTelemetryPoints points (neighbours are averaged as it grows), a node at most kTelemetryChecks
// check spans, the page at most kTelemetryNodes nodes.
inline constexpr std::size_t kTelemetryPoints = 512;
inline constexpr std::size_t kTelemetryChecks = 256;
inline constexpr std::size_t kTelemetryNodes = 64;
struct TelemetrySeries {
  std::vector<std::pair<double, double>> points;  // (unix time, value)
  int merged = 1;                                 // samples averaged into each point
  std::vector<std::pair<double, double>> pending; // samples not yet folded into a point
  void add(double ts, double v);
};
struct CheckSpan {
  std::string test;
  double start = 0, end = 0;  // unix time
};
struct NodeTelemetry {
  std::map<std::string, TelemetrySeries> series;  // "cpu_pct", "mem_used_pct", "gpu3.power_w", ...
  std::vector<CheckSpan> checks;
  std::size_t samples = 0;
};
struct TelemetryFigures {
  std::map<std::string, NodeTelemetry> nodes;  // by host
  std::size_t nodes_left_out = 0;
  // Takes one result line of results.jsonl if it is telemetry (true), a malformed one skipped.
  bool add(const nlohmann::json& line);
};

struct HtmlFigures {
  std::vector<BarFigure> bars;
  std::vector<PairFigure> pairs;
  TelemetryFigures telemetry;
};

// Collects the page's figures from results, one at a time (results.jsonl is streamed, not held).
class FigureCollector {
 public:
  explicit FigureCollector(const Report& r);
  void add(const Result& res);
  HtmlFigures take();

 private:
  struct Best {  // a declared figure at the largest size seen
    std::int64_t size = -1;
    double value = 0;
    std::string unit;
  };
  void add_link(const Result& res);
  void add_peers(const Result& res);
  void add_group(const Result& res);
  std::string host_of(int rank) const;
  std::map<int, std::string> rank_host_;
  std::map<std::pair<std::int64_t, int>, std::vector<int>> pair_groups_;  // (round, group) -> its 2 ranks
  std::map<std::string, BarFigure> gpu_;                                   // gpu id -> figure
  std::map<int, std::pair<std::string, Best>> rank_best_;                  // rank -> (test, figure)
  std::map<std::pair<std::int64_t, int>, std::map<int, std::pair<std::string, Best>>> group_best_;
  std::vector<PairFigure> pairs_;
};

// The figures in a run directory's results.jsonl; unreadable lines are skipped (the report counts them).
HtmlFigures collect_figures(const Report& r, const std::filesystem::path& results_jsonl);

// Text made safe for HTML content and attribute values; control characters are dropped.
std::string html_escape(std::string_view s);

std::string render_html(const Report& r, const HtmlFigures& f);

// Writes `out` (atomically); returns "" or why it could not. Never throws: report.html is a
// convenience, and failing to write it never changes a campaign's outcome.
std::string write_report_html(const std::filesystem::path& out, const Report& r,
                              const std::filesystem::path& results_jsonl);

// The section plotting TelemetryFigures: per node, host and GPU series over time, checks marked.
void telemetry_section(std::ostringstream& os, const TelemetryFigures& t);

// The stylesheet embedded in every page (report_html_style.cpp).
std::string_view report_html_css();

}  // namespace kiln::coord
