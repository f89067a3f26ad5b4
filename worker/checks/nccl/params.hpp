// Round parameters of the nccl.* tests and their drill switch, validated once into typed values.
//
// Parameters (all optional):
//   min_bytes, max_bytes  numbers or "8", "64K", "8G" strings      default 8 .. 128M
//   factor                size step multiplier                       default 2
//   iters, warmup         timed iterations per line, warm-up runs    default 20, 5
//   placement             "out" | "in" | "both"                      default "both"
//   check                 verify the received data once per line     default false
//   root                  broadcast root (group rank)                default 0
//   abort_grace_s         seconds kept back from the round deadline for aborting and reporting
//   budget_reserve_s      a line estimated not to finish before the collective deadline less this
//                         is skipped, and the larger ones too (worker/sweep_budget.hpp)   default 1
//
// Drill (test aid, env KILN_FAULT, see docs/nccl-rdma.md):
//   {"nccl": {"hang_rank": 1, "test": "nccl.all_reduce", "at_bytes": 1048576, "silent": false}}
// The world rank `hang_rank` does not join the collective of `test` (any nccl test when absent) at
// the first line whose size is >= at_bytes (the first line when absent). It then waits as a stuck
// rank would until the collective deadline; with silent=true it also never answers the state
// exchange, as a rank stuck in host code would not.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "worker/checks/nccl/sweep.hpp"

namespace kiln::worker::nccl {

struct SweepParams {
  std::size_t min_bytes = 8;
  std::size_t max_bytes = 128ull << 20;
  std::size_t factor = 2;
  int iters = 20;
  int warmup = 5;
  bool out_of_place = true;
  bool in_place = true;
  bool check = false;
  int root = 0;
  double abort_grace_s = 5.0;
  double budget_reserve_s = 1.0;
  // Where the send and receive buffers come from: "nccl" (ncclMemAlloc, cuMem memory mapped for
  // the peer GPUs, what nccl-tests uses) or "cuda" (cudaMalloc).
  std::string buffers = "nccl";
  // Which communicator runs the operations: "split" (a blocking child split off the non-blocking
  // parent; init bounded by the deadline) or "direct" (one blocking communicator made by
  // ncclCommInitRank, as nccl-tests does; its init is not bounded: a benchmark aid only).
  std::string comm = "split";
};

inline std::size_t bytes_param(const nlohmann::json& p, const char* name, std::size_t fallback) {
  auto it = p.find(name);
  if (it == p.end()) return fallback;
  if (it->is_number_unsigned() || it->is_number_integer()) {
    auto v = it->get<long long>();
    if (v < 0) throw std::invalid_argument(std::string(name) + " must not be negative");
    return static_cast<std::size_t>(v);
  }
  if (it->is_string()) return parse_bytes(it->get<std::string>());
  throw std::invalid_argument(std::string(name) + " must be a number or a size string");
}

inline SweepParams parse_sweep_params(const nlohmann::json& p) {
  SweepParams s;
  s.min_bytes = bytes_param(p, "min_bytes", s.min_bytes);
  s.max_bytes = bytes_param(p, "max_bytes", s.max_bytes);
  s.factor = p.value("factor", s.factor);
  s.iters = p.value("iters", s.iters);
  s.warmup = p.value("warmup", s.warmup);
  s.check = p.value("check", s.check);
  s.root = p.value("root", s.root);
  s.abort_grace_s = p.value("abort_grace_s", s.abort_grace_s);
  s.budget_reserve_s = p.value("budget_reserve_s", s.budget_reserve_s);
  s.buffers = p.value("buffers", s.buffers);
  if (s.buffers != "nccl" && s.buffers != "cuda") throw std::invalid_argument("buffers must be nccl or cuda, not '" + s.buffers + "'");
  s.comm = p.value("comm", s.comm);
  if (s.comm != "split" && s.comm != "direct") throw std::invalid_argument("comm must be split or direct, not '" + s.comm + "'");
  const std::string placement = p.value("placement", std::string("both"));
  if (placement == "both") {
    s.out_of_place = s.in_place = true;
  } else if (placement == "out") {
    s.out_of_place = true, s.in_place = false;
  } else if (placement == "in") {
    s.out_of_place = false, s.in_place = true;
  } else {
    throw std::invalid_argument("placement must be out, in or both, not '" + placement + "'");
  }
  if (s.iters < 1) throw std::invalid_argument("iters must be at least 1");
  if (s.warmup < 0) throw std::invalid_argument("warmup must not be negative");
  if (s.abort_grace_s < 0) throw std::invalid_argument("abort_grace_s must not be negative");
  if (s.budget_reserve_s < 0) throw std::invalid_argument("budget_reserve_s must not be negative");
  size_ladder(s.min_bytes, s.max_bytes, s.factor);  // throws on a bad ladder
  return s;
}

struct HangDrill {
  int world_rank = -1;
  std::size_t at_bytes = 0;
  bool silent = false;
};

// The drill for `test_key`, when KILN_FAULT asks for one.
inline std::optional<HangDrill> hang_drill(const nlohmann::json& fault_spec, const std::string& test_key) {
  auto it = fault_spec.find("nccl");
  if (it == fault_spec.end() || !it->is_object() || !it->contains("hang_rank")) return std::nullopt;
  const auto& f = *it;
  if (f.contains("test") && f.at("test").get<std::string>() != test_key) return std::nullopt;
  HangDrill d;
  d.world_rank = f.at("hang_rank").get<int>();
  d.at_bytes = bytes_param(f, "at_bytes", 0);
  d.silent = f.value("silent", false);
  return d;
}

}  // namespace kiln::worker::nccl
