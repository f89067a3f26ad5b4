#include "worker/checks/model/fsdp_engine.hpp"

#if KILN_HAVE_NCCL

#include <cmath>
#include <string>

#include "worker/checks/model/fsdp_kernels.hpp"
#include "worker/hw/nccl_comm.hpp"

namespace kiln::worker::model {

namespace {

constexpr std::size_t kBf16 = 2;

// A failed NCCL call ends the step the way the nccl.* harness ends a sweep.
void nccl_ok(ncclResult_t r, const char* what) {
  if (r != ncclSuccess)
    throw nccl::detail::SweepStopped{nccl::detail::Failure::NcclError, std::string(what) + ": " + ncclGetErrorString(r)};
}

std::vector<cudaEvent_t> make_events(int count) {
  std::vector<cudaEvent_t> v(static_cast<std::size_t>(count), nullptr);
  for (auto& e : v) KILN_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return v;
}

}  // namespace

FsdpEngine::FsdpEngine(const FsdpShape& shape, int device, int rank, ncclComm_t comm)
    : s_(shape),
      device_(device),
      comm_(comm),
      shard_(shard_elems(shape)),
      act_(shape.tokens * shape.hidden),
      compute_(device),
      comms_(device),
      start_(device),
      stop_(device) {
  const std::int64_t full = shard_ * s_.ranks;
  const std::size_t layers = static_cast<std::size_t>(s_.layers);
  w_shards_ = gpu::DeviceBuffer(device, layers * shard_ * kBf16);
  g_shards_ = gpu::DeviceBuffer(device, layers * shard_ * kBf16);
  w_full_ = gpu::DeviceBuffer(device, 2 * full * kBf16);
  g_full_ = gpu::DeviceBuffer(device, 2 * full * kBf16);
  acts_ = gpu::DeviceBuffer(device, (layers + 1) * act_ * kBf16);
  dacts_ = gpu::DeviceBuffer(device, 3 * act_ * kBf16);
  sums_ = gpu::DeviceBuffer(device, 3 * sizeof(unsigned long long));
  gathered_ = make_events(2 * s_.layers);
  computed_ = make_events(2 * s_.layers);
  grad_ready_ = make_events(s_.layers);
  scattered_ = make_events(s_.layers);
  KILN_CUDA(cudaEventCreateWithFlags(&comm_done_, cudaEventDisableTiming));
  KILN_CUBLAS(cublasCreate(&blas_));
  KILN_CUBLAS(cublasSetStream(blas_, compute_.get()));

  // The same inputs and top gradient on every rank; weight variance 1/hidden keeps the
  // activations' scale through the layers. Every GPU must then compute the same bits.
  cudaStream_t st = compute_.get();
  const float w_scale = std::sqrt(3.0f / static_cast<float>(s_.hidden));
  for (int l = 0; l < s_.layers; ++l)
    KILN_CUDA(fill_bf16(at(w_shards_, l * shard_), shard_, 1000 + 4096ull * l + rank, w_scale, st));
  KILN_CUDA(fill_bf16(acts_.get(), act_, 1, 1.0f, st));
  KILN_CUDA(fill_bf16(dacts_.get(), act_, 2, 1.0f, st));
  KILN_CUDA(cudaMemsetAsync(g_full_.get(), 0, g_full_.size(), st));  // padding is reduced too
  KILN_CUDA(cudaStreamSynchronize(st));
}

FsdpEngine::~FsdpEngine() {
  cudaSetDevice(device_);
  if (blas_) cublasDestroy(blas_);
  for (auto* v : {&gathered_, &computed_, &grad_ready_, &scattered_})
    for (cudaEvent_t e : *v) cudaEventDestroy(e);
  if (comm_done_) cudaEventDestroy(comm_done_);
}

void* FsdpEngine::at(const gpu::DeviceBuffer& b, std::int64_t elems) const {
  return static_cast<char*>(b.get()) + static_cast<std::size_t>(elems) * kBf16;
}

// Column-major bf16 GEMM with fp32 accumulation: C (m x n) = op(A) op(B), leading dimensions
// those of the hidden-major activations and weights.
void FsdpEngine::gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* a, const void* b,
                      void* c) {
  const float one = 1.0f, zero = 0.0f;
  const int lda = ta == CUBLAS_OP_N ? m : k, ldb = tb == CUBLAS_OP_N ? k : n;
  KILN_CUBLAS(cublasGemmEx(blas_, ta, tb, m, n, k, &one, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &zero, c,
                           CUDA_R_16BF, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// Job j gathers into buffer j % 2, which job j - 2 read: wait for that compute to finish.
void FsdpEngine::gather(int job) {
  const int layer = job < s_.layers ? job : 2 * s_.layers - 1 - job;
  if (job >= 2) KILN_CUDA(cudaStreamWaitEvent(comms_.get(), ev(computed_, job - 2), 0));
  nccl_ok(ncclAllGather(at(w_shards_, layer * shard_), at(w_full_, (job % 2) * shard_ * s_.ranks), shard_,
                        ncclBfloat16, comm_, comms_.get()),
          "ncclAllGather");
  KILN_CUDA(cudaEventRecord(ev(gathered_, job), comms_.get()));
}

// Activations are row-major tokens x hidden, i.e. column-major hidden x tokens; a weight is
// row-major out x in (nn.Linear's layout). Y = X W^T.
void FsdpEngine::forward(int layer, int job) {
  const int h = static_cast<int>(s_.hidden), t = static_cast<int>(s_.tokens);
  gemm(CUBLAS_OP_T, CUBLAS_OP_N, h, t, h, at(w_full_, (job % 2) * shard_ * s_.ranks), at(acts_, layer * act_),
       at(acts_, (layer + 1) * act_));
}

// dX = dY W and dW = dY^T X; backward step g reads the top gradient (g = 0) or the dX of step g - 1,
// and writes its weight gradient into full gradient buffer g % 2, which the reduce-scatter of step
// g - 2 read.
void FsdpEngine::backward(int layer, int job, bool comm, bool verify) {
  const int h = static_cast<int>(s_.hidden), t = static_cast<int>(s_.tokens);
  const int g = job - s_.layers;
  void* dy = at(dacts_, g == 0 ? 0 : (1 + (g - 1) % 2) * act_);
  void* dx = at(dacts_, (1 + g % 2) * act_);
  void* dw = at(g_full_, (g % 2) * shard_ * s_.ranks);
  gemm(CUBLAS_OP_N, CUBLAS_OP_N, h, t, h, at(w_full_, (job % 2) * shard_ * s_.ranks), dy, dx);
  if (comm && g >= 2) KILN_CUDA(cudaStreamWaitEvent(compute_.get(), ev(scattered_, g - 2), 0));
  gemm(CUBLAS_OP_N, CUBLAS_OP_T, h, h, t, at(acts_, layer * act_), dy, dw);
  if (verify)
    KILN_CUDA(checksum_add(dw, s_.hidden * s_.hidden * kBf16, layer, sums_.as<unsigned long long>() + 1, compute_.get()));
  KILN_CUDA(cudaEventRecord(ev(grad_ready_, g), compute_.get()));
}

void FsdpEngine::enqueue_step(StepMode mode, bool verify) {
  const bool comm = mode != StepMode::ComputeOnly, compute = mode != StepMode::CommOnly;
  const int jobs = 2 * s_.layers;
  cudaStream_t cs = compute_.get(), ms = comms_.get();
  KILN_CUDA(cudaEventRecord(start_.get(), cs));
  KILN_CUDA(cudaStreamWaitEvent(ms, start_.get(), 0));
  if (comm) gather(0);
  for (int j = 0; j < jobs; ++j) {
    if (comm && j + 1 < jobs) gather(j + 1);  // prefetch under this job's GEMMs
    const bool fwd = j < s_.layers;
    const int layer = fwd ? j : jobs - 1 - j;
    if (compute) {
      if (comm) KILN_CUDA(cudaStreamWaitEvent(cs, ev(gathered_, j), 0));
      if (fwd) forward(layer, j);
      else backward(layer, j, comm, verify);
      KILN_CUDA(cudaEventRecord(ev(computed_, j), cs));
    }
    if (fwd || !comm) continue;
    const int g = j - s_.layers;
    if (compute) KILN_CUDA(cudaStreamWaitEvent(ms, ev(grad_ready_, g), 0));
    nccl_ok(ncclReduceScatter(at(g_full_, (g % 2) * shard_ * s_.ranks), at(g_shards_, layer * shard_), shard_,
                              ncclBfloat16, ncclSum, comm_, ms),
            "ncclReduceScatter");
    KILN_CUDA(cudaEventRecord(ev(scattered_, g), ms));
  }
  KILN_CUDA(cudaEventRecord(comm_done_, ms));
  KILN_CUDA(cudaStreamWaitEvent(cs, comm_done_, 0));
  KILN_CUDA(cudaEventRecord(stop_.get(), cs));
}

void FsdpEngine::wait(gpu::Clock::time_point deadline) {
  nccl::detail::wait_stream(compute_.get(), comm_, deadline);
}

double FsdpEngine::step(StepMode mode, gpu::Clock::time_point deadline) {
  enqueue_step(mode, false);
  wait(deadline);
  return gpu::elapsed_ms(start_.get(), stop_.get());
}

StepSums FsdpEngine::verified_step(gpu::Clock::time_point deadline) {
  cudaStream_t cs = compute_.get();
  auto* sums = sums_.as<unsigned long long>();
  KILN_CUDA(cudaMemsetAsync(sums, 0, 3 * sizeof(unsigned long long), cs));
  enqueue_step(StepMode::Full, true);
  KILN_CUDA(checksum_add(at(acts_, s_.layers * act_), act_ * kBf16, 0, sums, cs));
  KILN_CUDA(checksum_add(g_shards_.get(), g_shards_.size(), 0, sums + 2, cs));
  wait(deadline);
  unsigned long long host[3] = {0, 0, 0};
  KILN_CUDA(cudaMemcpy(host, sums, sizeof host, cudaMemcpyDeviceToHost));
  return {host[0], host[1], host[2]};
}

}  // namespace kiln::worker::model

#endif  // KILN_HAVE_NCCL
