// Typed results and findings shared by the coordinator and the worker. JSON lives only at the
// edges (to_json/from_json here); everything inside the programs passes these structs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln {

inline constexpr int kSchemaVersion = 1;

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

// One measured value (or one status) from one rank. Streamed as it is measured.
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
  nlohmann::json extra = nlohmann::json::object();  // test-specific detail (inventory fields, ...)
  double ts = 0.0;     // unix time, seconds
};
void to_json(nlohmann::json& j, const Result& r);
void from_json(const nlohmann::json& j, Result& r);

enum class Severity { Info, Warning, Error, Critical };
std::string to_string(Severity s);
void to_json(nlohmann::json& j, Severity s);
void from_json(const nlohmann::json& j, Severity& s);

// A conclusion the operator acts on: what is broken, how sure we are, the evidence, what to do.
struct Finding {
  std::string code;       // catalog code, e.g. "node.slow", "link.slow", "rank.missing"
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
