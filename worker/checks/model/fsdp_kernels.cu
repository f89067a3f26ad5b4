#include "worker/checks/model/fsdp_kernels.hpp"

#include <cuda_bf16.h>

namespace kiln::worker::model {

namespace {

__device__ __forceinline__ std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

__global__ void fill_kernel(__nv_bfloat16* buf, std::size_t count, std::uint64_t seed, float scale) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count; i += stride) {
    const float u = static_cast<float>(mix(seed * 0x9e3779b97f4a7c15ULL + i) >> 40) / 16777216.0f;  // [0, 1)
    buf[i] = __float2bfloat16((2.0f * u - 1.0f) * scale);
  }
}

__global__ void checksum_kernel(const std::uint32_t* words, std::size_t count, std::uint64_t salt,
                                unsigned long long* sum) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::uint64_t local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count; i += stride)
    local += mix((static_cast<std::uint64_t>(words[i]) << 32) ^ (i + salt * 0x9e3779b97f4a7c15ULL));
  atomicAdd(sum, static_cast<unsigned long long>(local));
}

constexpr int kThreads = 256;
constexpr int kBlocks = 1024;

}  // namespace

cudaError_t fill_bf16(void* buf, std::size_t count, std::uint64_t seed, float scale, cudaStream_t stream) {
  fill_kernel<<<kBlocks, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(buf), count, seed, scale);
  return cudaGetLastError();
}

cudaError_t checksum_add(const void* buf, std::size_t bytes, std::uint64_t salt, unsigned long long* sum,
                         cudaStream_t stream) {
  checksum_kernel<<<kBlocks, kThreads, 0, stream>>>(static_cast<const std::uint32_t*>(buf), bytes / 4, salt, sum);
  return cudaGetLastError();
}

}  // namespace kiln::worker::model
