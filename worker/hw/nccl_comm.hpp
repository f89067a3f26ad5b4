// The CUDA and NCCL plumbing of group checks on GPUs (the nccl.* harness, model.fsdp_step): buffers
// and a stream that can be leaked after a kernel that would not stop, the group's communicators
// with init bounded by the deadline, and deadline-bounded waits that end the check with a SweepStopped.
#pragma once

#include <optional>
#include <string>

#include "common/types.hpp"

namespace kiln::worker::nccl {
// Why a check that needs one GPU per rank and NCCL cannot run on this node; nullopt when it can.
std::optional<std::string> skip_reason(const NodeInfo& node);
}  // namespace kiln::worker::nccl

#if KILN_HAVE_NCCL

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>
#include <nccl.h>

namespace kiln::worker::nccl::detail {

using Clock = std::chrono::steady_clock;

// What went wrong on this rank, if anything; decides the result's status and the abort.
enum class Failure : std::int32_t { None = 0, Timeout = 1, NcclError = 2, Drill = 3 };

// A failure that ends the sweep on this rank; the harness reports it after the state exchange.
struct SweepStopped {
  Failure failure;
  std::string detail;
};

class DeviceBuffer {
 public:
  // nccl = true: ncclMemAlloc (cuMem memory, as nccl-tests allocates; NCCL falls back to cudaMalloc
  // where cuMem is off). Otherwise cudaMalloc.
  explicit DeviceBuffer(std::size_t bytes, bool nccl = false);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  char* get() const { return static_cast<char*>(ptr_); }
  std::size_t bytes() const { return bytes_; }
  // cudaFree waits for the device; after a kernel that would not stop, keep the memory instead.
  void leak() { leak_ = true; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  bool nccl_ = false;
  bool leak_ = false;
};

class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void leak() { leak_ = true; }

 private:
  cudaStream_t s_ = nullptr;
  bool leak_ = false;
};

// Waits until a non-blocking communicator leaves ncclInProgress. Returns its state, or
// ncclInProgress when the deadline came first.
ncclResult_t wait_comm(ncclComm_t comm, Clock::time_point deadline);

// The group's NCCL communicators. Creation is bounded by the deadline: the parent is non-blocking,
// so a member that never arrives cannot hold init forever. The operations themselves run on a
// blocking child split off the parent (the split is done by the non-blocking parent, so it is
// bounded too): NCCL launches every call on a non-blocking communicator from a new thread, which
// adds tens of microseconds per operation and would be measured as latency. A blocking call only
// enqueues work once connections exist, and NCCL_RUNTIME_CONNECT=0 (set by the harness unless the
// operator set it) makes them all at init; the hang is then on the GPU, where the deadline poll
// sees it and ncclCommAbort ends it. Point-to-point peers are still connected on first use inside
// the call, so send/recv and all-to-all keep their operations on the non-blocking parent.
class Communicator {
 public:
  Communicator(const ncclUniqueId& id, int nranks, int rank, bool blocking_ops, bool direct, Clock::time_point deadline);
  ~Communicator() { abort(); }
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ncclComm_t ops() const { return child_ ? child_ : parent_; }

  void abort();
  // After a good sweep. The blocking child is aborted rather than finalized: its work is done and
  // abort never waits for a peer. Finalizing the parent needs every member; bounded, else abort.
  void close(Clock::time_point deadline);

 private:
  ncclComm_t parent_ = nullptr;
  ncclComm_t child_ = nullptr;
};

// Polls the stream until the enqueued work finished, the communicator reports an error, or the
// deadline passes (nccl-tests' -T loop).
void wait_stream(cudaStream_t stream, ncclComm_t comm, Clock::time_point deadline);

}  // namespace kiln::worker::nccl::detail

#endif  // KILN_HAVE_NCCL
