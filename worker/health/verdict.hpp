// kiln-worker --health-check: the verdict on this node from the results of its parts (NVML health,
// a short GEMM burn, NCCL inside the node, IB ports), in the shape slurmd's HealthCheckProgram and
// NHC users expect: one line per part, a final `kiln-health: OK|FAIL <code>: <reason>` line, and
// an exit status (0 healthy, 1 a fault found, 2 the check itself could not run). Pure: no I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/types.hpp"

namespace kiln::worker::health {

inline constexpr int kHealthy = 0;
inline constexpr int kFault = 1;
inline constexpr int kCouldNotRun = 2;
// Every drain reason starts with this, so that --resume-on-pass only undoes its own drains.
inline constexpr std::string_view kReasonPrefix = "kiln-health";

struct Part {
  std::string key;  // the check: "gpu.health", "ib.ports", ...
  Status status = Status::Skip;
  std::string code;    // the finding's catalog code when the check gave one, else the key
  std::string reason;  // why it failed or was skipped; empty when it passed
  double seconds = 0;
};

struct Verdict {
  int exit_code = kHealthy;
  std::string code;                     // the first failing part's code; empty when healthy
  std::string reason;                   // one line
  std::vector<std::string> not_tested;  // "key (reason)" for every skipped part
};

// The part's outcome from the records its check streamed (on one or more ranks): the worst status
// of its results and ends, with the first failing result's entity, reason and catalog code.
Part fold_records(const std::string& key, const std::vector<Record>& records, double seconds);

// FAIL or TIMEOUT anywhere: a fault (1). Else ERROR anywhere: could not run (2). Else healthy (0),
// SKIPs listed as not tested.
Verdict judge(const std::vector<Part>& parts);

std::string part_line(const Part& p);          // "kiln-health: ib.ports FAIL 2.0 s: ..."
std::string final_line(const Verdict& v);      // "kiln-health: FAIL ib.ports: ..."
nlohmann::json to_json(const std::vector<Part>& parts, const Verdict& v);

// Text safe to hand to scontrol as one argument and to show to every admin: printable ASCII only,
// no quotes, `=`, `$`, `;`, backquotes, backslashes or control characters; at most max_len characters.
std::string sanitize_reason(std::string_view text, std::size_t max_len = 120);
// "kiln-health <code>: <reason>", sanitized.
std::string drain_reason(const Verdict& v);
bool is_own_reason(std::string_view slurm_reason);

}  // namespace kiln::worker::health
