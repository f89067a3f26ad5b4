// Device-side data of model.fsdp_step: deterministic bf16 fills (the same on every rank, so every
// GPU must compute the same bits) and an order-independent checksum of a buffer's bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace kiln::worker::model {

// buf[i] = a pseudo-random value in [-scale, scale) from (seed, i), as bf16.
cudaError_t fill_bf16(void* buf, std::size_t count, std::uint64_t seed, float scale, cudaStream_t stream);

// Adds a mix of every 32-bit word of buf (with its index and `salt`) to *sum. The sum is modular,
// so the result does not depend on the order the threads finish in.
cudaError_t checksum_add(const void* buf, std::size_t bytes, std::uint64_t salt, unsigned long long* sum,
                         cudaStream_t stream);

}  // namespace kiln::worker::model
