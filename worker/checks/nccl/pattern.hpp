// Device-side data for the nccl.* tests: fill every rank's send data with a known pattern, and
// count received elements that differ from what the collective must produce. The pattern is
// small integers in float, so sums over any realistic group are exact and a check needs no
// tolerance.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include "worker/checks/nccl/sweep.hpp"

namespace kiln::worker::nccl {

struct CheckSpec {
  Coll coll = Coll::AllReduce;
  int rank = 0;
  int nranks = 1;
  std::size_t chunk = 0;  // per-peer element count of the gather/scatter family
  int root = 0;
};

// Element i of rank r's logical send buffer, from index `base` on.
cudaError_t fill_pattern(float* buf, std::size_t count, int rank, std::size_t base, cudaStream_t stream);

// Compares `count` received elements with the expected result; adds the number of wrong ones to
// *device_errors (a device counter the caller zeroes and reads).
cudaError_t check_pattern(const float* recv, std::size_t count, const CheckSpec& spec,
                          unsigned long long* device_errors, cudaStream_t stream);


}  // namespace kiln::worker::nccl
