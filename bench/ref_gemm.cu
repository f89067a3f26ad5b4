// Reference for gpu.burn: a plain cuBLAS GEMM loop with nothing else in it (no verification, no
// telemetry), one host thread per GPU, all GPUs at once. Same call as the burn (cublasGemmEx,
// column-major, no transposes, m = n = k), same input distribution (k/128, k in [-128, 127]),
// timed with CUDA events after a warm-up. Prints one JSON line per GPU.
//
//   ref_gemm [--dtype bf16|fp16|tf32|fp64] [--size 8192] [--seconds 15] [--warmup 3]
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)
#define CB(x)                                                                          \
  do {                                                                                 \
    cublasStatus_t s_ = (x);                                                           \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cublasGetStatusString(s_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

template <class T>
__global__ void fill(T* p, size_t n, unsigned long long seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned long long x = (seed * 0x100000001b3ULL ^ i) + 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
    p[i] = T(float(int(x & 0xff) - 128) / 128.0f);
  }
}

struct Opts {
  std::string dtype = "bf16";
  int n = 8192;
  double seconds = 15, warmup = 3;
};

struct Out {
  double tflops = 0, seconds = 0;
  long gemms = 0;
};

void run(int dev, const Opts& o, Out* out) {
  CK(cudaSetDevice(dev));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasHandle_t h;
  CB(cublasCreate(&h));
  CB(cublasSetStream(h, s));
  const size_t elems = size_t(o.n) * o.n;
  cudaDataType_t t = CUDA_R_16BF;
  cublasComputeType_t ct = CUBLAS_COMPUTE_32F;
  size_t eb = 2;
  if (o.dtype == "fp16") t = CUDA_R_16F;
  else if (o.dtype == "tf32") t = CUDA_R_32F, ct = CUBLAS_COMPUTE_32F_FAST_TF32, eb = 4;
  else if (o.dtype == "fp64") t = CUDA_R_64F, ct = CUBLAS_COMPUTE_64F, eb = 8;
  void *a, *b, *c;
  CK(cudaMalloc(&a, elems * eb));
  CK(cudaMalloc(&b, elems * eb));
  CK(cudaMalloc(&c, elems * eb));
  auto fill_any = [&](void* p, unsigned long long seed) {
    if (eb == 2 && t == CUDA_R_16BF) fill<<<1024, 256, 0, s>>>((__nv_bfloat16*)p, elems, seed);
    else if (eb == 2) fill<<<1024, 256, 0, s>>>((__half*)p, elems, seed);
    else if (eb == 4) fill<<<1024, 256, 0, s>>>((float*)p, elems, seed);
    else fill<<<1024, 256, 0, s>>>((double*)p, elems, seed);
    CK(cudaGetLastError());
  };
  fill_any(a, 20261130);
  fill_any(b, 20261131);
  const float one = 1, zero = 0;
  const double one_d = 1, zero_d = 0;
  const void* alpha = eb == 8 ? (const void*)&one_d : (const void*)&one;
  const void* beta = eb == 8 ? (const void*)&zero_d : (const void*)&zero;
  auto gemm = [&] {
    CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, o.n, o.n, o.n, alpha, a, t, o.n, b, t, o.n, beta, c, t,
                    o.n, ct, CUBLAS_GEMM_DEFAULT));
  };
  constexpr int kBatch = 8;
  cudaEvent_t ev[2];
  CK(cudaEventCreate(&ev[0]));
  CK(cudaEventCreate(&ev[1]));
  using C = std::chrono::steady_clock;
  const auto t0 = C::now();
  auto since = [&] { return std::chrono::duration<double>(C::now() - t0).count(); };
  // Warm-up: the same loop, untimed.
  while (since() < o.warmup) {
    for (int i = 0; i < kBatch; ++i) gemm();
    CK(cudaStreamSynchronize(s));
  }
  // Timed: queue batches back to back, synchronising only to read the host clock now and then,
  // so the GPU never idles between GEMMs.
  CK(cudaEventRecord(ev[0], s));
  long gemms = 0;
  while (since() < o.warmup + o.seconds) {
    for (int k = 0; k < 4; ++k) {
      for (int i = 0; i < kBatch; ++i) gemm();
      gemms += kBatch;
    }
    CK(cudaEventRecord(ev[1], s));
    CK(cudaEventSynchronize(ev[1]));
  }
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, ev[0], ev[1]));
  out->gemms = gemms;
  out->seconds = ms / 1e3;
  out->tflops = 2.0 * double(o.n) * o.n * o.n * gemms / (ms / 1e3) / 1e12;
  cublasDestroy(h);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaStreamDestroy(s);
}

int main(int argc, char** argv) {
  Opts o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--dtype") o.dtype = v;
    else if (k == "--size") o.n = std::atoi(v.c_str());
    else if (k == "--seconds") o.seconds = std::atof(v.c_str());
    else if (k == "--warmup") o.warmup = std::atof(v.c_str());
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  std::vector<Out> outs(n);
  std::vector<std::thread> th;
  for (int d = 0; d < n; ++d) th.emplace_back(run, d, std::cref(o), &outs[d]);
  for (auto& t : th) t.join();
  for (int d = 0; d < n; ++d)
    std::printf("{\"ref\":\"gemm\",\"cuda_ordinal\":%d,\"dtype\":\"%s\",\"size\":%d,\"tflops\":%.2f,"
                "\"gemms\":%ld,\"seconds\":%.2f}\n",
                d, o.dtype.c_str(), o.n, outs[d].tflops, outs[d].gemms, outs[d].seconds);
  return 0;
}
