#include "worker/checks/gpu/kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kiln::worker::gpu {

namespace {

constexpr int kThreads = 256;

// Enough blocks to fill every SM several times over; grid-stride loops do the rest.
int grid_for(std::size_t items) {
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (sms <= 0) sms = 132;
  const std::size_t want = (items + kThreads - 1) / kThreads;
  const std::size_t cap = static_cast<std::size_t>(sms) * 8;
  return static_cast<int>(want < cap ? (want ? want : 1) : cap);
}

template <class T>
__device__ T from_double(double v);
template <>
__device__ __nv_bfloat16 from_double(double v) { return __double2bfloat16(v); }
template <>
__device__ __half from_double(double v) { return __double2half(v); }
template <>
__device__ float from_double(double v) { return static_cast<float>(v); }
template <>
__device__ double from_double(double v) { return v; }

template <class T>
__global__ void fill_matrix_kernel(T* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    p[i] = from_double<T>(matrix_value(seed, i));
}

// Whether element `e` of a 16-byte chunk differs, given the chunk's XOR as four 32-bit words.
__device__ __forceinline__ bool lane_differs(const unsigned (&d)[4], int e, int elem_bytes) {
  switch (elem_bytes) {
    case 2: return ((d[e / 2] >> ((e % 2) * 16)) & 0xffffu) != 0;
    case 4: return d[e] != 0;
    default: return (d[2 * e] | d[2 * e + 1]) != 0;
  }
}

__global__ void compare_kernel(const uint4* a, const uint4* b, std::size_t n16, int elem_bytes,
                               CompareOut* out) {
  unsigned long long local = 0;
  unsigned long long first = ~0ULL;
  const int per16 = 16 / elem_bytes;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n16;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const uint4 x = a[i], y = b[i];
    const unsigned d[4] = {x.x ^ y.x, x.y ^ y.y, x.z ^ y.z, x.w ^ y.w};
    if ((d[0] | d[1] | d[2] | d[3]) == 0) continue;
    for (int e = 0; e < per16; ++e) {
      if (!lane_differs(d, e, elem_bytes)) continue;
      ++local;
      const unsigned long long idx = i * per16 + e;
      first = idx < first ? idx : first;
    }
  }
  for (int off = 16; off > 0; off >>= 1) {
    local += __shfl_xor_sync(0xffffffffu, local, off);
    const unsigned long long f = __shfl_xor_sync(0xffffffffu, first, off);
    first = f < first ? f : first;
  }
  if ((threadIdx.x & 31) == 0 && local) {
    atomicAdd(&out->mismatches, local);
    atomicMin(&out->first, first);
  }
}

__global__ void reset_compare(CompareOut* out) {
  out->mismatches = 0;
  out->first = ~0ULL;
}

__global__ void checksum_kernel(const uint4* p, std::size_t n16, unsigned long long* out) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n16;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const uint4 v = p[i];
    const std::uint64_t lo = (static_cast<std::uint64_t>(v.y) << 32) | v.x;
    const std::uint64_t hi = (static_cast<std::uint64_t>(v.w) << 32) | v.z;
    // Mixing in the position makes swapped elements change the sum; wrap-around addition is
    // associative, so the result does not depend on the launch shape.
    local += mix64(lo ^ (2 * i)) + mix64(hi ^ (2 * i + 1));
  }
  for (int off = 16; off > 0; off >>= 1) local += __shfl_xor_sync(0xffffffffu, local, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, local);
}

__global__ void flip_bit_kernel(unsigned char* p, int bit) { *p ^= static_cast<unsigned char>(1u << bit); }

__global__ void spin_kernel(std::uint64_t ns) {
  std::uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

__global__ void pattern_fill_kernel(ulonglong2* p, std::size_t pairs, Pattern pat,
                                    std::uint64_t param, std::uint64_t base) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < pairs;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    ulonglong2 v;
    v.x = pattern_word(pat, param, base, 2 * i);
    v.y = pattern_word(pat, param, base, 2 * i + 1);
    p[i] = v;
  }
}

// Records a failing word's address and contents while slots remain; the count is kept per thread
// and added once, so a GPU with billions of bad words still finishes the pass quickly.
__device__ void record_error(MemtestOut* out, std::uint64_t addr, std::uint64_t want,
                             std::uint64_t got) {
  if (*reinterpret_cast<volatile unsigned*>(&out->recorded) >= kMaxRecordedErrors) return;
  const unsigned slot = atomicAdd(&out->recorded, 1u);
  if (slot < kMaxRecordedErrors) {
    out->addr[slot] = addr;
    out->expected[slot] = want;
    out->actual[slot] = got;
  }
}

__global__ void pattern_check_kernel(const ulonglong2* p, std::size_t pairs, Pattern pat,
                                     std::uint64_t param, std::uint64_t base, MemtestOut* out) {
  unsigned long long bad = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < pairs;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const ulonglong2 v = p[i];
    const std::uint64_t w0 = pattern_word(pat, param, base, 2 * i);
    const std::uint64_t w1 = pattern_word(pat, param, base, 2 * i + 1);
    if (v.x != w0) {
      ++bad;
      record_error(out, base + 16 * i, w0, v.x);
    }
    if (v.y != w1) {
      ++bad;
      record_error(out, base + 16 * i + 8, w1, v.y);
    }
  }
  if (bad) atomicAdd(&out->errors, bad);
}

}  // namespace

cudaError_t launch_fill_matrix(void* p, std::size_t elems, DType t, std::uint64_t seed,
                               cudaStream_t s) {
  const int g = grid_for(elems);
  switch (t) {
    case DType::BF16:
      fill_matrix_kernel<<<g, kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(p), elems, seed);
      break;
    case DType::FP16:
      fill_matrix_kernel<<<g, kThreads, 0, s>>>(static_cast<__half*>(p), elems, seed);
      break;
    case DType::TF32:
      fill_matrix_kernel<<<g, kThreads, 0, s>>>(static_cast<float*>(p), elems, seed);
      break;
    case DType::FP64:
      fill_matrix_kernel<<<g, kThreads, 0, s>>>(static_cast<double*>(p), elems, seed);
      break;
  }
  return cudaGetLastError();
}

cudaError_t launch_compare(const void* a, const void* b, std::size_t bytes, int elem_bytes,
                           CompareOut* out, cudaStream_t s) {
  reset_compare<<<1, 1, 0, s>>>(out);
  const std::size_t n16 = bytes / 16;
  compare_kernel<<<grid_for(n16), kThreads, 0, s>>>(static_cast<const uint4*>(a),
                                                    static_cast<const uint4*>(b), n16,
                                                    elem_bytes, out);
  return cudaGetLastError();
}

cudaError_t launch_checksum(const void* p, std::size_t bytes, unsigned long long* out,
                            cudaStream_t s) {
  cudaError_t e = cudaMemsetAsync(out, 0, sizeof *out, s);
  if (e != cudaSuccess) return e;
  const std::size_t n16 = bytes / 16;
  checksum_kernel<<<grid_for(n16), kThreads, 0, s>>>(static_cast<const uint4*>(p), n16, out);
  return cudaGetLastError();
}

cudaError_t launch_flip_bit(void* p, std::size_t byte_offset, int bit, cudaStream_t s) {
  flip_bit_kernel<<<1, 1, 0, s>>>(static_cast<unsigned char*>(p) + byte_offset, bit & 7);
  return cudaGetLastError();
}

cudaError_t launch_spin(std::uint64_t ns, cudaStream_t s) {
  spin_kernel<<<1, 1, 0, s>>>(ns);
  return cudaGetLastError();
}

cudaError_t launch_pattern_fill(std::uint64_t* p, std::size_t words, Pattern pat,
                                std::uint64_t param, cudaStream_t s) {
  const std::size_t pairs = words / 2;
  pattern_fill_kernel<<<grid_for(pairs), kThreads, 0, s>>>(
      reinterpret_cast<ulonglong2*>(p), pairs, pat, param, reinterpret_cast<std::uint64_t>(p));
  return cudaGetLastError();
}

cudaError_t launch_pattern_check(const std::uint64_t* p, std::size_t words, Pattern pat,
                                 std::uint64_t param, MemtestOut* out, cudaStream_t s) {
  const std::size_t pairs = words / 2;
  pattern_check_kernel<<<grid_for(pairs), kThreads, 0, s>>>(
      reinterpret_cast<const ulonglong2*>(p), pairs, pat, param,
      reinterpret_cast<std::uint64_t>(p), out);
  return cudaGetLastError();
}

}  // namespace kiln::worker::gpu
