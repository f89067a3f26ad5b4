#include "worker/checks/gpu/burn_engine.hpp"

#if KILN_HAVE_CUDA

#include <cmath>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <vector>

#include <cublas_v2.h>

#include "worker/checks/gpu/gpu_check.hpp"
#include "worker/checks/gpu/verdict.hpp"

namespace kiln::worker::gpu {

DType parse_dtype(const std::string& s) {
  if (s == "bf16") return DType::BF16;
  if (s == "fp16") return DType::FP16;
  if (s == "tf32") return DType::TF32;
  if (s == "fp64") return DType::FP64;
  throw std::invalid_argument("dtype must be bf16, fp16, tf32 or fp64, not '" + s + "'");
}

namespace {

class CublasHandle {
 public:
  explicit CublasHandle(cudaStream_t s) {
    KILN_CUBLAS(cublasCreate(&h_));
    KILN_CUBLAS(cublasSetStream(h_, s));
  }
  ~CublasHandle() { cublasDestroy(h_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

// C = A * B, column-major, no transposes: the shape bench/ref_gemm.cu times for comparison.
void gemm(cublasHandle_t h, DType t, int n, const void* a, const void* b, void* c) {
  const float one = 1.0f, zero = 0.0f;
  const double one_d = 1.0, zero_d = 0.0;
  switch (t) {
    case DType::BF16:
      KILN_CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16BF, n, b,
                               CUDA_R_16BF, n, &zero, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT));
      break;
    case DType::FP16:
      KILN_CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16F, n, b,
                               CUDA_R_16F, n, &zero, c, CUDA_R_16F, n, CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT));
      break;
    case DType::TF32:
      KILN_CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_32F, n, b,
                               CUDA_R_32F, n, &zero, c, CUDA_R_32F, n,
                               CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
      break;
    case DType::FP64:
      KILN_CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one_d, a, CUDA_R_64F, n, b,
                               CUDA_R_64F, n, &zero_d, c, CUDA_R_64F, n, CUBLAS_COMPUTE_64F,
                               CUBLAS_GEMM_DEFAULT));
      break;
  }
}

double half_to_double(std::uint16_t h) {
  const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(man, -24);
  else if (exp == 31) v = man ? NAN : INFINITY;
  else v = std::ldexp(1024 + man, exp - 25);
  return sign ? -v : v;
}

double element_to_double(DType t, const unsigned char* p) {
  switch (t) {
    case DType::BF16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case DType::FP16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      return half_to_double(h);
    }
    case DType::TF32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::FP64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
  }
  return NAN;
}

// Checks sampled elements of the first result against a float64 product computed here from the
// same deterministic inputs: the golden copy every later iteration is compared with must itself
// be right, or a GPU that is wrong from the start would pass its own consistency check.
void host_check(const BurnConfig& cfg, const void* c_dev, BurnState& st) {
  const int eb = dtype_bytes(cfg.dtype);
  const double rel = gemm_rel_tolerance(cfg.dtype_name);
  const double abs_floor = rel * 0.1 * std::sqrt(static_cast<double>(cfg.n));
  const std::uint64_t n = static_cast<std::uint64_t>(cfg.n);
  int bad = 0;
  double worst = 0.0;
  for (int s = 0; s < cfg.host_samples; ++s) {
    const std::uint64_t i = mix64(cfg.seed + 17 * s) % n, j = mix64(cfg.seed + 31 * s + 5) % n;
    double want = 0.0;
    for (std::uint64_t k = 0; k < n; ++k)
      want += matrix_value(cfg.seed, i + k * n) * matrix_value(cfg.seed + 1, k + j * n);
    unsigned char raw[8];
    KILN_CUDA(cudaMemcpy(raw, static_cast<const unsigned char*>(c_dev) + (i + j * n) * eb, eb,
                         cudaMemcpyDeviceToHost));
    const double got = element_to_double(cfg.dtype, raw);
    if (!gemm_value_ok(got, want, rel, abs_floor)) ++bad;
    if (std::isfinite(got) && want != 0.0) worst = std::max(worst, std::fabs(got - want) / std::fabs(want));
    else if (!std::isfinite(got)) worst = INFINITY;
  }
  std::lock_guard<std::mutex> lock(st.mu);
  st.host_checked = cfg.host_samples;
  st.host_bad = bad;
  st.host_max_rel_err = worst;
}

// One batch in flight: verify_every GEMMs, one comparison, the readback and an end event.
struct Slot {
  explicit Slot(int dev) : end(dev) {}
  Event end;
  std::uint64_t first_gemm = 0;
  double spin_ms = 0.0;
  bool steady = false;
  int index = 0;  // position in the pinned/device result arrays
};

int select_device(int dev) {
  KILN_CUDA(cudaSetDevice(dev));
  return dev;
}

// One GPU's engine. The members are created in this order and released in the reverse one; their
// names are those the KILN_CUDA expressions quoted in error reasons use.
class Engine {
 public:
  Engine(const GpuInfo& gpu, const BurnConfig& config, BurnState& state)
      : cfg(config),
        st(state),
        dev(select_device(gpu.ordinal)),
        stream(dev),
        blas(stream.get()),
        elems(static_cast<std::size_t>(cfg.n) * cfg.n),
        bytes(elems * dtype_bytes(cfg.dtype)),
        a(dev, bytes),
        b(dev, bytes),
        c(dev, bytes),
        golden(dev, bytes),
        cmp(dev, sizeof(CompareOut) * ring),
        sum(dev, sizeof(unsigned long long)),
        cmp_host(sizeof(CompareOut) * ring) {}

  void run();

 private:
  bool make_golden();
  void enqueue(Slot& s, std::uint64_t batch, double gemm_ms_estimate);
  void account(const Slot& s, double ms, double flops_per_gemm);
  void time_out() {
    std::lock_guard<std::mutex> lock(st.mu);
    st.timed_out = true;
  }

  const BurnConfig& cfg;
  BurnState& st;
  const int dev;
  Stream stream;
  CublasHandle blas;
  const std::size_t elems;
  const std::size_t bytes;
  DeviceBuffer a, b, c, golden;
  // Batches queued at once, and slots one more than that: the end event of the batch before the
  // one being waited on is still needed (elapsed time) and must not be recorded again yet.
  const int max_pending = cfg.inflight + 1;
  const int ring = max_pending + 1;
  DeviceBuffer cmp;
  DeviceBuffer sum;
  PinnedBuffer cmp_host;
};

// The first result, kept on the GPU as the golden copy every later one is compared with, its
// checksum for the cross-GPU vote, and its check against the host. False when the deadline passed.
bool Engine::make_golden() {
  KILN_CUDA(launch_fill_matrix(a.get(), elems, cfg.dtype, cfg.seed, stream.get()));
  KILN_CUDA(launch_fill_matrix(b.get(), elems, cfg.dtype, cfg.seed + 1, stream.get()));
  // Poison C so that an output cuBLAS never wrote cannot match anything.
  KILN_CUDA(cudaMemsetAsync(c.get(), 0xff, bytes, stream.get()));
  gemm(blas.get(), cfg.dtype, cfg.n, a.get(), b.get(), c.get());
  KILN_CUDA(cudaMemcpyAsync(golden.get(), c.get(), bytes, cudaMemcpyDeviceToDevice, stream.get()));
  KILN_CUDA(launch_checksum(golden.get(), bytes, sum.as<unsigned long long>(), stream.get()));
  unsigned long long golden_sum = 0;
  KILN_CUDA(cudaMemcpyAsync(&golden_sum, sum.get(), sizeof golden_sum, cudaMemcpyDeviceToHost,
                            stream.get()));
  if (!wait_stream(stream.get(), cfg.deadline)) return false;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    st.golden_checksum = golden_sum;
  }
  host_check(cfg, golden.get(), st);
  return true;
}

// Queues one batch on the stream: the GEMMs, the drills, the comparison and its readback.
void Engine::enqueue(Slot& s, std::uint64_t batch, double gemm_ms_estimate) {
  auto* results = cmp_host.as<CompareOut>();
  auto* results_dev = cmp.as<CompareOut>();
  for (int g = 0; g < cfg.verify_every; ++g)
    gemm(blas.get(), cfg.dtype, cfg.n, a.get(), b.get(), c.get());
  if (cfg.bitflip) {
    // A different element each time, in its most significant byte.
    const std::size_t e = mix64(batch) % elems;
    const int eb = dtype_bytes(cfg.dtype);
    KILN_CUDA(launch_flip_bit(c.get(), e * eb + eb - 1, static_cast<int>(batch % 7), stream.get()));
  }
  KILN_CUDA(launch_compare(c.get(), golden.get(), bytes, dtype_bytes(cfg.dtype),
                           results_dev + s.index, stream.get()));
  KILN_CUDA(cudaMemcpyAsync(results + s.index, results_dev + s.index, sizeof(CompareOut),
                            cudaMemcpyDeviceToHost, stream.get()));
  s.spin_ms = 0.0;
  if (cfg.slow_factor < 1.0 && gemm_ms_estimate > 0.0) {
    s.spin_ms = gemm_ms_estimate * (1.0 / cfg.slow_factor - 1.0);
    KILN_CUDA(launch_spin(static_cast<std::uint64_t>(s.spin_ms * 1e6), stream.get()));
  }
  KILN_CUDA(cudaEventRecord(s.end.get(), stream.get()));
}

// Adds a completed batch to the counters the sampler and the verdicts read.
void Engine::account(const Slot& s, double ms, double flops_per_gemm) {
  const CompareOut& r = cmp_host.as<CompareOut>()[s.index];
  const double f = flops_per_gemm * cfg.verify_every;
  std::lock_guard<std::mutex> lock(st.mu);
  st.flops += f;
  st.gpu_ms += ms;
  if (s.steady) {
    st.flops_steady += f;
    st.gpu_ms_steady += ms;
  }
  st.gemms += cfg.verify_every;
  ++st.checks;
  if (r.mismatches) {
    ++st.bad_checks;
    st.wrong_elements += r.mismatches;
    if (st.first_bad_gemm < 0) {
      st.first_bad_gemm = static_cast<std::int64_t>(s.first_gemm + cfg.verify_every - 1);
      st.first_bad_element = r.first;
    }
  }
}

// Keeps up to max_pending batches queued until duration_s (or the deadline), accounting each as
// it completes; the GPU time of a batch runs from the end of the one before it.
void Engine::run() {
  if (!make_golden()) return time_out();
  std::vector<std::unique_ptr<Slot>> slots;
  for (int i = 0; i < ring; ++i) {
    slots.push_back(std::make_unique<Slot>(dev));
    slots.back()->index = i;
  }
  Event start(dev);
  const auto t0 = Clock::now();
  const auto stop_at = std::min(t0 + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(cfg.duration_s)),
                                cfg.deadline);
  const auto steady_from = t0 + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(cfg.warmup_s));
  const double flops_per_gemm = 2.0 * std::pow(static_cast<double>(cfg.n), 3);

  KILN_CUDA(cudaEventRecord(start.get(), stream.get()));
  cudaEvent_t prev_end = start.get();
  std::deque<Slot*> pending;
  std::uint64_t next_gemm = 0, batch = 0;
  double gemm_ms_estimate = 0.0;
  bool stopping = false;
  for (;;) {
    if (!stopping && Clock::now() >= stop_at) stopping = true;
    if (!stopping && static_cast<int>(pending.size()) < max_pending) {
      Slot& s = *slots[batch % ring];
      s.first_gemm = next_gemm;
      s.steady = Clock::now() >= steady_from;
      enqueue(s, batch, gemm_ms_estimate);
      next_gemm += cfg.verify_every;
      pending.push_back(&s);
      ++batch;
      if (static_cast<int>(pending.size()) < max_pending) continue;  // keep the queue full
    }
    if (pending.empty()) break;
    Slot& s = *pending.front();
    // Generous: a batch is milliseconds; only a hung GPU gets near this.
    if (!wait_event(s.end.get(), cfg.deadline)) return time_out();
    pending.pop_front();
    const double ms = elapsed_ms(prev_end, s.end.get());
    prev_end = s.end.get();
    gemm_ms_estimate = std::max(0.0, ms - s.spin_ms);
    account(s, ms, flops_per_gemm);
  }
  KILN_CUDA(cudaStreamSynchronize(stream.get()));
}

}  // namespace

void run_burn_engine(const GpuInfo& gpu, const BurnConfig& cfg, BurnState& state) {
  const GpuFailure f = on_gpu_thread([&] { Engine(gpu, cfg, state).run(); });
  if (f.failed()) {
    std::lock_guard<std::mutex> lock(state.mu);
    state.error = f.error;
    state.hardware_error = f.hardware;
  }
  std::lock_guard<std::mutex> lock(state.mu);
  state.done = true;
}

}  // namespace kiln::worker::gpu

#endif  // KILN_HAVE_CUDA
