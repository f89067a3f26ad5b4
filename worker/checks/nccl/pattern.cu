#include "worker/checks/nccl/pattern.hpp"

namespace kiln::worker::nccl {

namespace {

// Must equal pattern_value() in sweep.hpp.
__device__ __forceinline__ float value_at(int rank, std::size_t i) {
  return static_cast<float>((i * 31u + static_cast<std::size_t>(rank) * 17u) % 61u);
}

__global__ void fill_kernel(float* buf, std::size_t count, int rank, std::size_t base) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count; i += stride)
    buf[i] = value_at(rank, base + i);
}

__device__ float expected_at(const CheckSpec& s, std::size_t k) {
  switch (s.coll) {
    case Coll::AllReduce: {
      float sum = 0.f;
      for (int r = 0; r < s.nranks; ++r) sum += value_at(r, k);
      return sum;
    }
    case Coll::ReduceScatter: {
      float sum = 0.f;
      for (int r = 0; r < s.nranks; ++r) sum += value_at(r, static_cast<std::size_t>(s.rank) * s.chunk + k);
      return sum;
    }
    case Coll::AllGather: return value_at(static_cast<int>(k / s.chunk), k % s.chunk);
    case Coll::AllToAll:
      return value_at(static_cast<int>(k / s.chunk), static_cast<std::size_t>(s.rank) * s.chunk + k % s.chunk);
    case Coll::Broadcast: return value_at(s.root, k);
    case Coll::SendRecv: return value_at((s.rank - 1 + s.nranks) % s.nranks, k);
  }
  return -1.f;
}

__global__ void check_kernel(const float* recv, std::size_t count, CheckSpec spec, unsigned long long* errors) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  unsigned long long wrong = 0;
  for (std::size_t k = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; k < count; k += stride)
    wrong += recv[k] != expected_at(spec, k);
  if (wrong) atomicAdd(errors, wrong);
}

unsigned grid_for(std::size_t count) {
  const std::size_t blocks = (count + 255) / 256;
  return static_cast<unsigned>(blocks < 4096 ? (blocks ? blocks : 1) : 4096);
}

}  // namespace

cudaError_t fill_pattern(float* buf, std::size_t count, int rank, std::size_t base, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  fill_kernel<<<grid_for(count), 256, 0, stream>>>(buf, count, rank, base);
  return cudaGetLastError();
}

cudaError_t check_pattern(const float* recv, std::size_t count, const CheckSpec& spec,
                          unsigned long long* device_errors, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  check_kernel<<<grid_for(count), 256, 0, stream>>>(recv, count, spec, device_errors);
  return cudaGetLastError();
}

}  // namespace kiln::worker::nccl
