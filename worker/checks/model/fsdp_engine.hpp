// The GPU side of model.fsdp_step: one training step shaped like FSDP on this rank's GPU.
//
// Per layer, NCCL all-gathers the bf16 weight shards into a full weight (forward, and again in the
// backward pass, as FSDP re-gathers after resharding), cuBLAS runs the forward GEMM and the two
// backward GEMMs, and the layer's local weight gradient is reduce-scattered into this rank's
// gradient shard. Collectives run on a second stream, ordered by events: the next layer's
// all-gather runs while the current layer computes (two gathered buffers), and layer i's
// reduce-scatter runs while layer i-1's backward computes (two full gradient buffers).
#pragma once

#if KILN_HAVE_NCCL

#include <cstdint>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include "worker/checks/model/fsdp_math.hpp"
#include "worker/hw/cuda_util.hpp"

namespace kiln::worker::model {

enum class StepMode {
  Full,         // GEMMs and collectives, overlapped
  ComputeOnly,  // the same GEMMs, no collectives
  CommOnly,     // the same collectives back to back, no GEMMs
};

struct StepSums {
  std::uint64_t loss = 0, grad = 0, shard = 0;
};

class FsdpEngine {
 public:
  // Allocates and fills everything (the same inputs and weights on every rank); `comm` must
  // outlive the engine and is only used for the collectives and their error state.
  FsdpEngine(const FsdpShape& shape, int device, int rank, ncclComm_t comm);
  ~FsdpEngine();
  FsdpEngine(const FsdpEngine&) = delete;
  FsdpEngine& operator=(const FsdpEngine&) = delete;

  // One step; its time in milliseconds from CUDA events. Throws detail::SweepStopped when the
  // GPU work does not finish by the deadline or NCCL reports an error.
  double step(StepMode mode, gpu::Clock::time_point deadline);
  // One full step that also checksums the final activations, the local gradients and the shards.
  StepSums verified_step(gpu::Clock::time_point deadline);

 private:
  void enqueue_step(StepMode mode, bool verify);
  void gather(int job);
  void forward(int layer, int job);
  void backward(int layer, int job, bool comm, bool verify);
  void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* a, const void* b, void* c);
  void wait(gpu::Clock::time_point deadline);
  void* at(const gpu::DeviceBuffer& b, std::int64_t elems) const;
  cudaEvent_t& ev(std::vector<cudaEvent_t>& v, int i) { return v[static_cast<std::size_t>(i)]; }

  const FsdpShape s_;
  const int device_;
  ncclComm_t comm_;
  std::int64_t shard_ = 0, act_ = 0;
  gpu::Stream compute_, comms_;
  gpu::Event start_, stop_;
  cublasHandle_t blas_ = nullptr;
  gpu::DeviceBuffer w_shards_, g_shards_, w_full_, g_full_, acts_, dacts_, sums_;
  // Ordering events, no timing: per job (2 * layers) and per backward layer.
  std::vector<cudaEvent_t> gathered_, computed_, grad_ready_, scattered_;
  cudaEvent_t comm_done_ = nullptr;
};

}  // namespace kiln::worker::model

#endif  // KILN_HAVE_NCCL
