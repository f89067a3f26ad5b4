// Shared by the mpi.* checks: the size ladder, iteration counts, and emitting time/algbw/busbw the
// same way for every collective.
#pragma once

#include <cstdint>
#include <vector>

#include "worker/check.hpp"

namespace kiln::worker {

// Sizes from lo to hi (both included) multiplying by factor; throws on a bad range.
std::vector<std::int64_t> sweep_sizes(std::int64_t lo, std::int64_t hi, double factor);
// Enough iterations to move about bytes_budget per size, at least 2 and at most max_iters.
int iterations_for(std::int64_t bytes, std::int64_t bytes_budget, int max_iters);

void emit_bw(ResultSink& sink, const Context& ctx, std::int64_t bytes, double seconds, double algbw, double busbw,
             bool data_ok);

}  // namespace kiln::worker
