// JSON has no NaN or infinity: nlohmann writes a non-finite double as null, and no reader of
// results.jsonl takes a null value (the coordinator would refuse the whole batch holding it). The
// worker's runner passes every result through make_value_finite before it is sent.
#pragma once

#include <cmath>
#include <string>

#include "common/types.hpp"

namespace kiln {

// A non-finite value becomes 0 with status ERROR and a reason naming the metric and what it was.
inline void make_value_finite(Result& r) {
  if (std::isfinite(r.value)) return;
  const std::string what = std::isnan(r.value) ? "nan" : (r.value > 0 ? "inf" : "-inf");
  r.reason = "the check measured a non-finite " + (r.metric.empty() ? std::string("value") : r.metric) + " (" +
             what + ")" + (r.reason.empty() ? "" : "; " + r.reason);
  r.value = 0.0;
  r.status = Status::Error;
}

}  // namespace kiln
