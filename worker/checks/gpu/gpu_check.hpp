// The shared skeleton of the gpu.* checks, as CollectiveTest is for nccl.*: one rank per node,
// SKIP where CUDA is missing or sees no GPU, the node's GPUs listed once (mapped to NVML), and a
// GpuError on one GPU reported for that GPU alone: a hardware error (the GPU needs a reset) as a
// FAIL with gpu.lost, anything else as an ERROR with gpu.cuda. A check only measures.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/check.hpp"
#include "worker/checks/gpu/common.hpp"
#include "worker/checks/gpu/verdict.hpp"
#include "worker/hw/cuda_util.hpp"
#include "worker/hw/nvml.hpp"

namespace kiln::worker::gpu {

// What one run of a check knows about the node's GPUs.
struct NodeGpus {
  std::string host;
  std::shared_ptr<nvml::Lib> lib;  // null without NVML
  std::string nvml_why;            // why lib is null
  DrillPlan drill;                 // inactive unless the check has drills and KILN_FAULT names it
#if KILN_HAVE_CUDA
  std::vector<GpuInfo> list;  // every CUDA-visible GPU
#endif
};

// A GPU whose measurement stopped on an error; the others go on without it.
struct GpuFailure {
  std::string error;      // empty: no failure
  bool hardware = false;  // GpuError::hardware
  bool failed() const { return !error.empty(); }
};

// Turns `r` into the result of a failed GPU: value 0, the error as the reason, FAIL with gpu.lost
// for a hardware error and ERROR with gpu.cuda otherwise. Other extra fields are kept.
void report_failure(Result& r, const GpuFailure& f);

#if KILN_HAVE_CUDA
// Runs one GPU's part of a measurement; a GpuError becomes that GPU's failure instead of ending
// the check. Anything else (a deadline, a bad parameter) still ends it.
template <class F>
GpuFailure on_gpu(F&& work) {
  try {
    work();
  } catch (const GpuError& e) {
    return {e.what(), e.hardware};
  }
  return {};
}

// As on_gpu, for the body of a per-GPU thread, which nothing may escape: any other exception is
// a failure of that GPU too (never a hardware one).
template <class F>
GpuFailure on_gpu_thread(F&& work) {
  try {
    work();
  } catch (const GpuError& e) {
    return {e.what(), e.hardware};
  } catch (const std::exception& e) {
    return {e.what(), false};
  }
  return {};
}
#endif

class GpuCheck : public Check {
 public:
  std::optional<std::string> applicable(const NodeInfo& node) const override {
    return cuda_skip_reason(node);
  }
  void run(Context& ctx, ResultSink& sink) final;

 protected:
  // The metric of the check's SKIP results: the key without its prefix (gpu.burn: "burn").
  std::string skip_metric() const;
  // False for a check with something to report without CUDA (gpu.health reads NVML alone): it
  // is measured even when CUDA is missing or lists no GPU.
  virtual bool needs_cuda() const { return true; }
  // True to parse KILN_FAULT's drill for this check before anything touches a GPU.
  virtual bool has_drills() const { return false; }
  // True to start the process-wide XID watcher before the GPUs are listed.
  virtual bool watches_xids() const { return false; }

  // The check's own part. `sink` may be shared by per-GPU threads.
#if KILN_HAVE_CUDA
  virtual void measure(Context& ctx, ResultSink& sink, const NodeGpus& node) = 0;
#else
  // Without CUDA only a check that does not need it gets here, and it overrides this.
  virtual void measure(Context&, ResultSink&, const NodeGpus&) {}
#endif
};

}  // namespace kiln::worker::gpu
