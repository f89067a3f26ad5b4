// Device kernels of the GPU tests (kernels.cu) and the host/device pattern functions they share.
// The pattern functions are inline __host__ __device__ so the host can recompute any expected
// value (the GEMM reference, memtest's expected word) without copying data back.
#pragma once

#include <cstddef>
#include <cstdint>

#if KILN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#ifdef __CUDACC__
#define KILN_HD __host__ __device__ __forceinline__
#else
#define KILN_HD inline
#endif

namespace kiln::worker::gpu {

// splitmix64 finaliser: a cheap, well-mixed 64-bit hash.
KILN_HD std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// GEMM input element idx of the matrix with this seed: k/128 for an integer k in [-128, 127].
// Exactly representable in bf16, fp16, tf32 and fp64, so every GPU (and the host) starts from
// bit-identical inputs, and products are exact; never zero-heavy data (METHOD.md: zeros run
// faster and hide unwritten outputs).
KILN_HD double matrix_value(std::uint64_t seed, std::uint64_t idx) {
  const int k = static_cast<int>(mix64(seed * 0x100000001b3ULL ^ idx) & 0xff) - 128;
  return k / 128.0;
}

enum class DType : int { BF16 = 0, FP16 = 1, TF32 = 2, FP64 = 3 };
KILN_HD int dtype_bytes(DType t) { return t == DType::FP64 ? 8 : (t == DType::TF32 ? 4 : 2); }

// memtest patterns over 64-bit words. `base` is the buffer's device address, so the address
// pattern writes each word's own address (plus a per-pass salt so stale data cannot match).
enum class Pattern : int { Address = 0, WalkingOnes = 1, WalkingZeros = 2, Random = 3 };
KILN_HD std::uint64_t pattern_word(Pattern p, std::uint64_t param, std::uint64_t base,
                                   std::uint64_t i) {
  switch (p) {
    case Pattern::Address: return (base + 8 * i) ^ param;
    case Pattern::WalkingOnes: return 1ULL << ((i + param) & 63);
    case Pattern::WalkingZeros: return ~(1ULL << ((i + param) & 63));
    case Pattern::Random: return mix64(param ^ (i * 0xd1b54a32d192ed03ULL));
  }
  return 0;
}

// Where a buffer comparison records its verdict.
struct CompareOut {
  unsigned long long mismatches;  // differing elements
  unsigned long long first;       // index of the first differing element (~0 when none)
};

inline constexpr int kMaxRecordedErrors = 16;
struct MemtestOut {
  unsigned long long errors;  // words that read back wrong
  unsigned int recorded;      // entries filled below (<= kMaxRecordedErrors)
  unsigned int pad;
  unsigned long long addr[kMaxRecordedErrors];
  unsigned long long expected[kMaxRecordedErrors];
  unsigned long long actual[kMaxRecordedErrors];
};

#if KILN_HAVE_CUDA
// All launchers enqueue on `s` and return cudaGetLastError() of the launch.
cudaError_t launch_fill_matrix(void* p, std::size_t elems, DType t, std::uint64_t seed,
                               cudaStream_t s);
// Element-wise compare of `bytes` (multiple of 16) as elements of elem_bytes; out is device
// memory, reset by this call.
cudaError_t launch_compare(const void* a, const void* b, std::size_t bytes, int elem_bytes,
                           CompareOut* out, cudaStream_t s);
// Position-dependent, order-independent 64-bit checksum of `bytes` (multiple of 16).
cudaError_t launch_checksum(const void* p, std::size_t bytes, unsigned long long* out,
                            cudaStream_t s);
cudaError_t launch_flip_bit(void* p, std::size_t byte_offset, int bit, cudaStream_t s);
// Keeps the stream busy for about ns nanoseconds (one thread, so it takes no SM time to speak of
// from other streams; on the same stream it delays everything after it).
cudaError_t launch_spin(std::uint64_t ns, cudaStream_t s);
cudaError_t launch_pattern_fill(std::uint64_t* p, std::size_t words, Pattern pat,
                                std::uint64_t param, cudaStream_t s);
// out is device memory, reset by the caller (cudaMemsetAsync to 0) before the first check.
cudaError_t launch_pattern_check(const std::uint64_t* p, std::size_t words, Pattern pat,
                                 std::uint64_t param, MemtestOut* out, cudaStream_t s);
#endif

}  // namespace kiln::worker::gpu
