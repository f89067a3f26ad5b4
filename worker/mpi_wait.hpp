// Waiting on MPI requests with the check's deadline, for the runner and every check that moves data
// over MPI: a request left pending at the deadline has its buffers abandoned (never freed under it)
// and the check ends in TIMEOUT instead of hanging.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "worker/check.hpp"

namespace kiln::worker {

// Keeps buffers alive forever: used when a request is abandoned at a deadline. From then on this
// process's MPI state is untrusted: the request is still outstanding, and progressing it later (or
// freeing its communicator) has crashed Open MPI in the next collective.
void abandon(std::shared_ptr<void> keep);
// True once any request was abandoned in this process.
bool mpi_state_untrusted();

// Starts a non-blocking operation with start(&req) and polls it until it completes or the
// context's deadline passes (then the buffers are abandoned and DeadlineExceeded is thrown).
template <class A, class B>
void wait_request(Context& ctx, const std::function<int(MPI_Request*)>& start, std::unique_ptr<A>& a,
                  std::unique_ptr<B>& b);

// A non-blocking roll call over a group of world ranks before a blocking communicator creation:
// false when some member did not answer before the deadline (dead or hung).
bool members_alive(int me, const std::vector<int>& members, std::int64_t round_id, std::size_t index,
                   std::chrono::steady_clock::time_point deadline, Progress* progress = nullptr);

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
