#include "worker/hw/nccl_comm.hpp"

namespace kiln::worker::nccl {

std::optional<std::string> skip_reason(const NodeInfo& node) {
#if KILN_HAVE_NCCL
  if (node.gpu_count <= 0)
    return node.gpu_skip_reason.empty() ? std::string("no CUDA GPU visible") : node.gpu_skip_reason;
  if (node.local_size > node.gpu_count)
    return std::to_string(node.local_size) + " ranks on " + node.host + " but only " + std::to_string(node.gpu_count) +
           " GPU(s): NCCL needs one rank per GPU (start as many ranks per node as GPUs)";
  return std::nullopt;
#else
  (void)node;
  return std::string("kiln-worker was built without NCCL (CUDA toolkit or nccl.h not found at configure time)");
#endif
}

}  // namespace kiln::worker::nccl

#if KILN_HAVE_NCCL

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "worker/hw/cuda_util.hpp"  // KILN_CUDA: the worker's one CUDA check macro

namespace kiln::worker::nccl::detail {

DeviceBuffer::DeviceBuffer(std::size_t bytes, bool nccl) : bytes_(bytes), nccl_(nccl) {
  const std::size_t n = std::max<std::size_t>(bytes, 16);
  if (nccl_) {
    ncclResult_t r = ncclMemAlloc(&ptr_, n);
    if (r != ncclSuccess) throw std::runtime_error(std::string("ncclMemAlloc: ") + ncclGetErrorString(r));
  } else {
    KILN_CUDA(cudaMalloc(&ptr_, n));
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ && !leak_) {
    if (nccl_) ncclMemFree(ptr_);
    else cudaFree(ptr_);
  }
}

Stream::Stream() { KILN_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }

Stream::~Stream() {
  if (s_ && !leak_) cudaStreamDestroy(s_);
}

ncclResult_t wait_comm(ncclComm_t comm, Clock::time_point deadline) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) return r;
    if (state != ncclInProgress) return state;
    if (Clock::now() >= deadline) return ncclInProgress;
    std::this_thread::yield();
  }
}

Communicator::Communicator(const ncclUniqueId& id, int nranks, int rank, bool blocking_ops, bool direct,
                           Clock::time_point deadline) {
  if (direct && blocking_ops) {
    // Benchmark aid (comm = "direct"): one blocking communicator, as nccl-tests makes it. Its
    // init is not bounded by the deadline.
    ncclResult_t r = ncclCommInitRank(&parent_, nranks, id, rank);
    if (r == ncclSuccess) return;
    abort();
    throw SweepStopped{Failure::NcclError, std::string("communicator init: ") + ncclGetErrorString(r)};
  }
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclResult_t r = ncclCommInitRankConfig(&parent_, nranks, id, rank, &cfg);
  if (r == ncclSuccess || r == ncclInProgress) r = wait_comm(parent_, deadline);
  if (r == ncclSuccess && blocking_ops) {
    ncclConfig_t child_cfg = NCCL_CONFIG_INITIALIZER;
    child_cfg.blocking = 1;
    r = ncclCommSplit(parent_, 0, rank, &child_, &child_cfg);
    if (r == ncclSuccess || r == ncclInProgress) r = wait_comm(parent_, deadline);
    if (r == ncclSuccess && child_ == nullptr) r = ncclInternalError;
  }
  if (r == ncclSuccess) return;
  abort();  // the destructor does not run when the constructor throws
  if (r == ncclInProgress) throw SweepStopped{Failure::Timeout, "communicator init did not finish by the deadline"};
  throw SweepStopped{Failure::NcclError, std::string("communicator init: ") + ncclGetErrorString(r)};
}

void Communicator::abort() {
  if (child_) ncclCommAbort(child_);
  if (parent_) ncclCommAbort(parent_);
  child_ = parent_ = nullptr;
}

void Communicator::close(Clock::time_point deadline) {
  if (child_) ncclCommAbort(child_);
  child_ = nullptr;
  if (!parent_) return;
  ncclResult_t r = ncclCommFinalize(parent_);
  if (r == ncclSuccess || r == ncclInProgress) r = wait_comm(parent_, deadline);
  if (r != ncclSuccess) return abort();
  ncclCommDestroy(parent_);
  parent_ = nullptr;
}

void wait_stream(cudaStream_t stream, ncclComm_t comm, Clock::time_point deadline) {
  for (;;) {
    cudaError_t q = cudaStreamQuery(stream);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) throw SweepStopped{Failure::NcclError, std::string("stream: ") + cudaGetErrorString(q)};
    ncclResult_t state = ncclSuccess;
    ncclCommGetAsyncError(comm, &state);
    if (state != ncclSuccess && state != ncclInProgress)
      throw SweepStopped{Failure::NcclError, std::string("NCCL async error: ") + ncclGetErrorString(state)};
    if (Clock::now() >= deadline) throw SweepStopped{Failure::Timeout, "collective did not complete by the deadline"};
    std::this_thread::yield();
  }
}

}  // namespace kiln::worker::nccl::detail

#endif  // KILN_HAVE_NCCL
