// The per-GPU half of gpu.burn: one host thread drives one GPU through back-to-back cuBLAS GEMMs
// on a fixed, deterministic problem and verifies the output against that GPU's first result.
// gpu_burn.cpp runs one engine per GPU at once, samples them at 1 Hz and turns the totals into
// verdicts.
#pragma once

#if KILN_HAVE_CUDA

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "worker/hw/cuda_util.hpp"
#include "worker/checks/gpu/kernels.hpp"

namespace kiln::worker::gpu {

struct BurnConfig {
  DType dtype = DType::BF16;
  std::string dtype_name = "bf16";
  int n = 8192;              // square GEMM m = n = k
  double duration_s = 60.0;  // timed loop, after the setup
  double warmup_s = 3.0;     // excluded from the sustained figure
  int verify_every = 8;      // GEMMs per batch; the last one of each batch is compared
  int inflight = 2;          // batches queued ahead of the one being waited on
  std::uint64_t seed = 20261130;
  int host_samples = 64;     // output elements checked against a float64 host reference
  Clock::time_point deadline;
  // Drills (KILN_FAULT).
  bool bitflip = false;
  double slow_factor = 1.0;
};

// Live counters of one engine, read by the sampler thread under `mu`.
struct BurnState {
  mutable std::mutex mu;
  double flops = 0.0, gpu_ms = 0.0;             // everything completed so far
  double flops_steady = 0.0, gpu_ms_steady = 0.0;  // after the warm-up
  std::uint64_t gemms = 0, checks = 0, bad_checks = 0, wrong_elements = 0;
  std::int64_t first_bad_gemm = -1;
  std::uint64_t first_bad_element = ~0ULL;
  // Set once during setup.
  std::uint64_t golden_checksum = 0;
  int host_checked = 0, host_bad = 0;
  double host_max_rel_err = 0.0;
  // Terminal state.
  bool done = false;
  bool timed_out = false;
  std::string error;        // non-empty when the engine stopped on an error
  bool hardware_error = false;
};

// Runs the whole engine on `gpu` (blocking; call it on its own thread). Never throws: errors land
// in state.error.
void run_burn_engine(const GpuInfo& gpu, const BurnConfig& cfg, BurnState& state);

DType parse_dtype(const std::string& s);  // throws std::invalid_argument

}  // namespace kiln::worker::gpu

#endif  // KILN_HAVE_CUDA
