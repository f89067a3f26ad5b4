// mpi.all_reduce: a host-memory MPI all-reduce sweep over the group, from min_bytes to max_bytes
// by a factor, reporting time, algbw and busbw with nccl-tests' factor 2(n-1)/n. Works on any
// machine, so it is the test the localization rounds use where there are no GPUs.
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <vector>

#include "worker/check.hpp"
#include "worker/mpi_wait.hpp"
#include "worker/checks/mpi/sweep.hpp"

namespace kiln::worker {
namespace {

class MpiAllReduce : public Check {
 public:
  std::string key() const override { return "mpi.all_reduce"; }

  void run(Context& ctx, ResultSink& sink) override {
    const auto sizes = sweep_sizes(ctx.param<std::int64_t>("min_bytes", 8), ctx.param<std::int64_t>("max_bytes", 64 << 20),
                                   ctx.param<double>("factor", 2.0));
    const int n = ctx.group_size;
    const std::size_t max_count = static_cast<std::size_t>(sizes.back() / sizeof(float)) + 1;
    // Buffers live on the heap and are abandoned (not freed) if a request is left pending at the
    // deadline, so a late completion never writes into freed memory.
    auto send = std::make_unique<std::vector<float>>(max_count, static_cast<float>(ctx.group_rank + 1));
    auto recv = std::make_unique<std::vector<float>>(max_count, 0.0f);
    const float expect = static_cast<float>(n) * static_cast<float>(n + 1) / 2.0f;
    SweepBudget budget(ctx, sink);
    for (const auto bytes : sizes) {
      const int count = static_cast<int>(std::max<std::int64_t>(1, bytes / static_cast<std::int64_t>(sizeof(float))));
      const int iters = iterations_for(bytes, ctx.param<std::int64_t>("bytes_per_size", 256 << 20),
                                       ctx.param<int>("max_iters", 50));
      if (!budget.admit(bytes, iters + 1)) continue;  // + the warm-up operation
      const auto started = std::chrono::steady_clock::now();
      const double t = time_group_op(ctx, iters, [&](MPI_Request* r) {
        return MPI_Iallreduce(send->data(), recv->data(), count, MPI_FLOAT, MPI_SUM, ctx.comm, r);
      }, send, recv);
      budget.measured(bytes, iters + 1, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
      const double algbw = static_cast<double>(count) * sizeof(float) / t / 1e9;
      const double busbw = algbw * (n > 1 ? 2.0 * (n - 1) / n : 1.0);
      bool ok = true;
      for (int i = 0; i < count; i += std::max(1, count / 64)) ok &= (*recv)[static_cast<std::size_t>(i)] == expect;
      const std::int64_t b = static_cast<std::int64_t>(count) * static_cast<std::int64_t>(sizeof(float));
      emit_bw(sink, ctx, b, t, algbw, busbw, ok);
    }
  }
};

KILN_REGISTER_CHECK(MpiAllReduce);

}  // namespace
}  // namespace kiln::worker
