// Pure, header-only arithmetic behind the GPU tests' verdicts: robust statistics, the peer
// (median of the others) outlier rule, NVML throttle-reason classification, the drill plan read
// from KILN_FAULT, and GEMM tolerances. No CUDA, no NVML, no I/O: tests/unit/test_gpu_*.cpp
// include this file alone.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/stats.hpp"

namespace kiln::worker::gpu {

// The project's robust statistics (common/stats.hpp), except that an empty sample (no telemetry
// yet) reads as 0 in a report instead of throwing.
inline double median(const std::vector<double>& v) { return v.empty() ? 0.0 : stats::median(v); }
// Median absolute deviation (unscaled).
inline double mad(const std::vector<double>& v) { return v.empty() ? 0.0 : stats::mad(v); }

// Peer verdict for one value among the node's GPUs (higher is better: TFLOP/s, GB/s).
// The reference is the median of the *other* values, so one slow GPU out of two is still caught
// (a plain median/MAD over two values cannot single either out). A value is an outlier when it
// is below reference*(1-rel_tol); with three or more peers it must also sit more than mad_k
// scaled MADs under the reference, so the normal spread between healthy GPUs does not flag.
struct PeerVerdict {
  bool outlier = false;
  double reference = 0.0;  // median of the others (0 when alone)
  double deficit = 0.0;    // 1 - value/reference (> 0: slower than peers)
};

inline std::vector<PeerVerdict> peer_outliers(const std::vector<double>& values, double rel_tol,
                                              double mad_k = 3.0) {
  std::vector<PeerVerdict> out(values.size());
  if (values.size() < 2) return out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::vector<double> others;
    for (std::size_t j = 0; j < values.size(); ++j)
      if (j != i) others.push_back(values[j]);
    PeerVerdict& pv = out[i];
    pv.reference = median(others);
    if (pv.reference <= 0.0) continue;
    pv.deficit = 1.0 - values[i] / pv.reference;
    bool slow = values[i] < pv.reference * (1.0 - rel_tol);
    if (slow && others.size() >= 3) {
      // 1.4826 scales the MAD to a standard deviation for normally distributed spread.
      slow = (pv.reference - values[i]) > mad_k * 1.4826 * mad(others);
    }
    pv.outlier = slow;
  }
  return out;
}

// Majority vote over per-GPU fingerprints (e.g. the checksum of the first GEMM result): the
// indices whose fingerprint differs from the most common one. When there is no strict majority
// (two GPUs that disagree), every GPU is returned: nothing tells which one is right.
inline std::vector<std::size_t> minority(const std::vector<std::uint64_t>& prints) {
  std::vector<std::size_t> out;
  if (prints.size() < 2) return out;
  std::uint64_t best = prints[0];
  std::size_t best_n = 0;
  for (auto p : prints) {
    const auto n = static_cast<std::size_t>(std::count(prints.begin(), prints.end(), p));
    if (n > best_n) best = p, best_n = n;
  }
  const bool strict = 2 * best_n > prints.size();
  for (std::size_t i = 0; i < prints.size(); ++i)
    if (!strict ? best_n != prints.size() : prints[i] != best) out.push_back(i);
  return out;
}

// NVML clocks-event ("throttle") reason bits, as documented in nvml.h.
namespace throttle {
inline constexpr std::uint64_t kGpuIdle = 0x1;
inline constexpr std::uint64_t kAppClocks = 0x2;
inline constexpr std::uint64_t kSwPowerCap = 0x4;
inline constexpr std::uint64_t kHwSlowdown = 0x8;
inline constexpr std::uint64_t kSyncBoost = 0x10;
inline constexpr std::uint64_t kSwThermal = 0x20;
inline constexpr std::uint64_t kHwThermal = 0x40;
inline constexpr std::uint64_t kHwPowerBrake = 0x80;
inline constexpr std::uint64_t kDisplayClocks = 0x100;
// Reasons that mean something is wrong (cooling, power delivery, an external brake signal).
// The software power cap is how a healthy H100/H200 runs under full GEMM load: not in here.
inline constexpr std::uint64_t kAbnormal = kHwSlowdown | kSwThermal | kHwThermal | kHwPowerBrake;

inline bool abnormal(std::uint64_t mask) { return (mask & kAbnormal) != 0; }

inline std::vector<std::string> names(std::uint64_t mask) {
  static const std::pair<std::uint64_t, const char*> kNames[] = {
      {kGpuIdle, "gpu_idle"},
      {kAppClocks, "applications_clocks"},
      {kSwPowerCap, "sw_power_cap"},
      {kHwSlowdown, "hw_slowdown"},
      {kSyncBoost, "sync_boost"},
      {kSwThermal, "sw_thermal_slowdown"},
      {kHwThermal, "hw_thermal_slowdown"},
      {kHwPowerBrake, "hw_power_brake_slowdown"},
      {kDisplayClocks, "display_clocks"}};
  std::vector<std::string> out;
  std::uint64_t known = 0;
  for (const auto& [bit, name] : kNames) {
    known |= bit;
    if (mask & bit) out.emplace_back(name);
  }
  if (mask & ~known) out.emplace_back("other");
  return out;
}
}  // namespace throttle

// Drill switches for the GPU tests, read from the KILN_FAULT object under the test's key
// (docs/gpu-tests.md). Off unless KILN_FAULT names the test; "host" limits a drill to one node.
struct DrillPlan {
  bool active = false;       // the spec named this test and (if given) this host
  int bitflip_gpu = -1;      // gpu.burn: flip one bit of this GPU's GEMM output at each check
  int slow_gpu = -1;         // gpu.burn: stretch this GPU's work to run at slow_factor speed
  double slow_factor = 0.5;  // 0 < f <= 1
  int corrupt_gpu = -1;      // gpu.memtest: overwrite one word after each pattern is written
};

namespace detail {
inline int drill_index(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) return -1;
  if (!it->is_number_integer() || it->get<long long>() < 0)
    throw std::invalid_argument(std::string("KILN_FAULT: ") + name + " must be a GPU index >= 0");
  return it->get<int>();
}
}  // namespace detail

// Throws std::invalid_argument on malformed values, so a mistyped drill is an ERROR, not a
// silently clean run.
inline DrillPlan parse_drill(const nlohmann::json& fault_spec, const std::string& test_key,
                             const std::string& host) {
  DrillPlan plan;
  if (!fault_spec.is_object()) return plan;
  auto it = fault_spec.find(test_key);
  if (it == fault_spec.end()) return plan;
  if (!it->is_object()) throw std::invalid_argument("KILN_FAULT: '" + test_key + "' must be an object");
  const auto& j = *it;
  if (auto h = j.find("host"); h != j.end() && h->get<std::string>() != host) return plan;
  plan.active = true;
  plan.bitflip_gpu = detail::drill_index(j, "bitflip_gpu");
  plan.slow_gpu = detail::drill_index(j, "slow_gpu");
  plan.corrupt_gpu = detail::drill_index(j, "corrupt_gpu");
  if (auto f = j.find("slow_factor"); f != j.end()) {
    if (!f->is_number()) throw std::invalid_argument("KILN_FAULT: slow_factor must be a number");
    plan.slow_factor = f->get<double>();
  }
  if (!(plan.slow_factor > 0.0 && plan.slow_factor <= 1.0))
    throw std::invalid_argument("KILN_FAULT: slow_factor must be in (0, 1]");
  return plan;
}

// Relative tolerance for one GEMM output element against a float64 host reference. Inputs are
// exactly representable in every type (kernels.hpp), so the error is the fp32 accumulation order
// plus the output's rounding (bf16: 8 significant bits, fp16: 11). Generous enough never to flag
// a healthy GPU, tight enough that a flipped exponent or high mantissa bit fails.
inline double gemm_rel_tolerance(const std::string& dtype) {
  if (dtype == "bf16") return 1.0 / 64;
  if (dtype == "fp16") return 1.0 / 256;
  if (dtype == "tf32") return 1.0 / 256;
  if (dtype == "fp64") return 1e-9;
  throw std::invalid_argument("unknown dtype '" + dtype + "' (bf16, fp16, tf32, fp64)");
}

// |got - want| within tolerance; NaN never passes. abs_floor covers results near zero, where a
// relative bound is meaningless (scaled by the typical magnitude of one product term).
inline bool gemm_value_ok(double got, double want, double rel_tol, double abs_floor) {
  if (!std::isfinite(got)) return false;
  return std::fabs(got - want) <= rel_tol * std::fabs(want) + abs_floor;
}

}  // namespace kiln::worker::gpu
