// Shared pieces of the GPU tests that touch the harness: entity names, result construction, the
// SKIP reason, and a sink the per-GPU threads may share. The arithmetic lives in verdict.hpp.
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "common/findings.hpp"
#include "common/types.hpp"
#include "worker/check.hpp"
#include "worker/checks/gpu/verdict.hpp"

namespace kiln::worker::gpu {

// "node3/gpu1": the GPU's physical index (NVML index when known), so that hiding GPUs with
// CUDA_VISIBLE_DEVICES does not rename the ones left.
Entity gpu_entity(const std::string& host, int index);
Entity node_entity(const std::string& host);
// Directed copy between two GPUs of a node: "node3/gpu0->node3/gpu1".
Entity link_entity(const std::string& host, int src, int dst);

Result make_result(const std::string& test, Entity entity, std::string metric, double value,
                   std::string unit, Status status = Status::Pass, std::string reason = {});

// The SKIP reason shared by the CUDA tests (nullopt when CUDA sees at least one GPU).
std::optional<std::string> cuda_skip_reason(const NodeInfo& node);

// Serialises emit() from the per-GPU threads; the runner's sink need not be thread-safe.
class LockedSink : public ResultSink {
 public:
  explicit LockedSink(ResultSink& inner) : inner_(inner) {}
  void emit(Result r) override {
    std::lock_guard<std::mutex> lock(mu_);
    inner_.emit(std::move(r));
  }

 private:
  ResultSink& inner_;
  std::mutex mu_;
};

}  // namespace kiln::worker::gpu
