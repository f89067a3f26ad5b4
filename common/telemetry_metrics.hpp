// The metrics of the node telemetry results (docs/telemetry.md): a reading ("telemetry") and a
// check's summary ("telemetry_summary"). They are results of the running check about the node,
// not figures of it: the exports leave them out, report.html plots them.
#pragma once

#include <string_view>

namespace kiln {

inline constexpr const char* kTelemetryMetric = "telemetry";
inline constexpr const char* kTelemetrySummaryMetric = "telemetry_summary";

inline bool is_telemetry_metric(std::string_view metric) {
  return metric == kTelemetryMetric || metric == kTelemetrySummaryMetric;
}

}  // namespace kiln
