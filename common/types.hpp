// Typed results and findings shared by the coordinator and the worker. JSON lives only at the
// edges (to_json/from_json here); everything inside the programs passes these structs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <stdexcept>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln {

inline constexpr int kSchemaVersion = 1;

// An integer field from outside: a JSON integer that fits T, or std::invalid_argument naming the
// field. nlohmann's get<int>() would truncate 2.5, wrap 4294967297 to 1, and turn 1e300 into
// undefined behaviour.
template <class T>
T int_value(const nlohmann::json& v, const char* name) {
  bool fits = false;
  T out{};
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    fits = std::in_range<T>(u);
    out = static_cast<T>(u);
  } else if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    fits = std::in_range<T>(i);
    out = static_cast<T>(i);
  }
  if (!fits) throw std::invalid_argument(std::string(name) + " must be an integer in range");
  return out;
}
template <class T>
T int_at(const nlohmann::json& j, const char* key) {
  return int_value<T>(j.at(key), key);
}
template <class T>
T int_or(const nlohmann::json& j, const char* key, T fallback) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? fallback : int_value<T>(*it, key);
}

// Per-entity status, as DCGM reports it. A test that could not run is SKIP with a reason, never PASS.
enum class Status { Pass, Fail, Skip, Error, Timeout };

std::string to_string(Status s);
Status status_from_string(const std::string& s);  // throws std::invalid_argument
void to_json(nlohmann::json& j, Status s);
void from_json(const nlohmann::json& j, Status& s);

// What a result or finding is about: a node, a rank, a GPU, an HCA, a link "a<->b", a switch.
struct Entity {
  std::string kind;  // node | rank | gpu | hca | link | switch | job
  std::string id;    // e.g. "node3", "5", "node3/gpu1", "node1<->node4"
  bool operator==(const Entity&) const = default;
};
void to_json(nlohmann::json& j, const Entity& e);
void from_json(const nlohmann::json& j, Entity& e);

// Whether rank `rank` on `host` may report about `e`: itself, its node, its node's GPUs and HCAs,
// NVLinks inside its node, and network links of which its node is an end. Nothing else (not
// another node, not a switch), so an authenticated rank cannot blame a node it is not on.
bool may_report(const Entity& e, int rank, const std::string& host);

// A finding code from the catalog (common/findings.hpp), typed inside the programs.
enum class Code;

// A problem a check found, named by a findings-catalog code (common/findings.hpp). The coordinator
// turns each into a finding about the result's entity.
struct Problem {
  Code code{};
  std::string what;  // one line: the measured value against the expected one
};
void to_json(nlohmann::json& j, const Problem& p);
void from_json(const nlohmann::json& j, Problem& p);

// One measured value from one rank. Streamed as it is measured.
struct Result {
  std::string test;    // registry key, e.g. "mpi.all_reduce"
  std::string host;
  int rank = -1;
  Entity entity;       // defaults to the rank when empty
  std::string metric;  // e.g. "busbw", "inventory", "time"
  double value = 0.0;
  std::string unit;    // e.g. "GB/s", "us", ""
  Status status = Status::Pass;
  std::string reason;  // why SKIP/FAIL/ERROR/TIMEOUT
  std::int64_t round_id = -1;
  int group_id = -1;   // index of the group in the round, -1 for per-rank tests
  std::optional<std::int64_t> size_bytes;  // message/buffer size for sweeps
  std::vector<Problem> problems;  // what is wrong, as catalog codes (empty when it passed)
  nlohmann::json extra = nlohmann::json::object();  // check-specific detail (inventory fields, ...)
  double ts = 0.0;     // unix time, seconds
};
void to_json(nlohmann::json& j, const Result& r);
void from_json(const nlohmann::json& j, Result& r);

// The end of one check on one rank: its status over all its results, why, and how long it took.
// Streamed after the check's last result.
struct CheckEnd {
  std::string test;
  std::string host;
  int rank = -1;
  Status status = Status::Pass;
  std::string reason;
  double seconds = 0.0;
  std::int64_t round_id = -1;
  int group_id = -1;
  double ts = 0.0;
  // The check left an MPI operation it could not complete or cancel (abandoned at its deadline):
  // this rank's MPI state can no longer be trusted, and the coordinator restarts the workers.
  bool mpi_untrusted = false;
};
void to_json(nlohmann::json& j, const CheckEnd& e);
void from_json(const nlohmann::json& j, CheckEnd& e);

enum class Severity { Info, Warning, Error, Critical };
std::string to_string(Severity s);
void to_json(nlohmann::json& j, Severity s);
void from_json(const nlohmann::json& j, Severity& s);

// One line of results.jsonl: a measurement or the end of a check ("record": "result" | "end").
using Record = std::variant<Result, CheckEnd>;
void to_json(nlohmann::json& j, const Record& r);
void from_json(const nlohmann::json& j, Record& r);

// What a rank knows about itself and its node, gathered once at start-up and sent in its hello.
struct NodeInfo {
  std::string host;
  int world_rank = 0;
  int world_size = 1;
  int local_rank = 0;  // index of this rank among the ranks on its host
  int local_size = 1;
  int gpu_count = 0;   // CUDA-visible GPUs (0 when built without CUDA or none visible)
  std::vector<std::string> gpu_models;
  std::string cuda_driver;   // "13.0" or "" when unknown
  std::string cuda_runtime;
  std::string nccl_version;
  std::string mpi_version;
  std::string gpu_skip_reason;  // why gpu_count is 0, for SKIP results
  int ib_device_count = 0;
  // The HCA nearest this rank's GPU (local_rank % gpu_count) on the PCI tree (mlx5_3), the one its
  // RDMA checks use by default; "" when the rank has no GPU, the node no HCA, or sysfs says nothing.
  std::string hca;
};
void to_json(nlohmann::json& j, const NodeInfo& n);
void from_json(const nlohmann::json& j, NodeInfo& n);

// A conclusion the operator acts on: what is broken, how sure we are, the evidence, what to do.
struct Finding {
  Code code{};            // catalog code, e.g. Code::NodeSlow ("node.slow" on the wire)
  Severity severity = Severity::Error;
  Entity entity;
  std::string summary;
  std::string next_step;
  double confidence = 1.0;  // 0..1
  nlohmann::json evidence = nlohmann::json::array();  // rounds and figures that prove it
};
void to_json(nlohmann::json& j, const Finding& f);
void from_json(const nlohmann::json& j, Finding& f);

}  // namespace kiln
