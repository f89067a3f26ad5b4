// Shared harness for the MPI group tests: size sweeps, iteration counts, waiting on a request
// with the test's deadline, and emitting time/algbw/busbw the same way for every test.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "worker/test.hpp"

namespace kiln::worker {

// Sizes from lo to hi (both included) multiplying by factor; throws on a bad range.
std::vector<std::int64_t> sweep_sizes(std::int64_t lo, std::int64_t hi, double factor);
// Enough iterations to move about bytes_budget per size, at least 2 and at most max_iters.
int iterations_for(std::int64_t bytes, std::int64_t bytes_budget, int max_iters);

// Keeps buffers alive forever: used when a request is abandoned at a deadline.
void abandon(std::shared_ptr<void> keep);

// Starts a non-blocking operation with start(&req) and polls it until it completes or the
// context's deadline passes (then the buffers are abandoned and DeadlineExceeded is thrown).
template <class A, class B>
void wait_request(Context& ctx, const std::function<int(MPI_Request*)>& start, std::unique_ptr<A>& a,
                  std::unique_ptr<B>& b);

void poll_request(Context& ctx, MPI_Request& req, const std::function<void()>& on_abandon);

// One warm-up operation, a barrier, then `iters` timed operations; returns the slowest member's
// seconds per operation (the group's figure: what a training step would wait for).
template <class A, class B>
double time_group_op(Context& ctx, int iters, const std::function<int(MPI_Request*)>& op, std::unique_ptr<A>& a,
                     std::unique_ptr<B>& b) {
  wait_request(ctx, op, a, b);
  wait_request(ctx, [&](MPI_Request* r) { return MPI_Ibarrier(ctx.comm, r); }, a, b);
  double elapsed = -MPI_Wtime();
  for (int it = 0; it < iters; ++it) wait_request(ctx, op, a, b);
  elapsed += MPI_Wtime();
  double slowest = 0;
  wait_request(ctx, [&](MPI_Request* r) { return MPI_Iallreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, ctx.comm, r); },
               a, b);
  return slowest / iters;
}

void emit_bw(ResultSink& sink, const Context& ctx, std::int64_t bytes, double seconds, double algbw, double busbw,
             bool data_ok);

template <class A, class B>
void wait_request(Context& ctx, const std::function<int(MPI_Request*)>& start, std::unique_ptr<A>& a,
                  std::unique_ptr<B>& b) {
  MPI_Request req = MPI_REQUEST_NULL;
  if (start(&req) != MPI_SUCCESS) throw std::runtime_error("MPI operation failed to start");
  poll_request(ctx, req, [&] {
    abandon(std::shared_ptr<A>(a.release()));
    abandon(std::shared_ptr<B>(b.release()));
  });
}

}  // namespace kiln::worker
