// mpi.alltoall: every member sends a block to every other member at once, so a group test loads
// every link inside the group. That makes it the edge-detecting query of the localization rounds:
// a group is slow iff it holds a slow node or both ends of a slow link. busbw uses nccl-tests'
// factor (n-1)/n, which makes groups of different sizes comparable. With `per_peer` (default on),
// extra iterations at the largest size time each peer's block on its own (per_peer.hpp), so the
// busbw result there also carries per-edge figures (extra.peers) the localization can read. A peer's
// block there is at least `peer_block_min` (64 KiB by default, what a 256-member group has at the
// default 16 MiB), so a group of 1,024, which the planner times on clusters past 5,819 nodes, still
// times blocks that take long enough to be told apart.
#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <vector>

#include "worker/check.hpp"
#include "worker/mpi_wait.hpp"
#include "worker/checks/mpi/per_peer.hpp"
#include "worker/checks/mpi/sweep.hpp"

namespace kiln::worker {
namespace {

class MpiAlltoall : public Check {
 public:
  std::string key() const override { return "mpi.alltoall"; }

  void run(Context& ctx, ResultSink& sink) override {
    // Sizes are the bytes each rank sends in total (as nccl-tests counts them).
    const auto sizes = sweep_sizes(ctx.param<std::int64_t>("min_bytes", 1 << 10),
                                   ctx.param<std::int64_t>("max_bytes", 16 << 20), ctx.param<double>("factor", 4.0));
    const int n = ctx.group_size;
    const std::int64_t max_block = sizes.back() / n + 1;
    auto send = std::make_unique<std::vector<char>>(static_cast<std::size_t>(max_block * n), static_cast<char>(ctx.group_rank));
    auto recv = std::make_unique<std::vector<char>>(static_cast<std::size_t>(max_block * n), -1);
    SweepBudget budget(ctx, sink);
    for (const auto bytes : sizes) {
      const int block = static_cast<int>(std::max<std::int64_t>(1, bytes / n));
      const int iters = iterations_for(bytes, ctx.param<std::int64_t>("bytes_per_size", 64 << 20),
                                        ctx.param<int>("max_iters", 20));
      if (!budget.admit(bytes, iters + 1)) continue;  // + the warm-up operation
      const auto started = std::chrono::steady_clock::now();
      const double t = time_group_op(ctx, iters, [&](MPI_Request* r) {
        return MPI_Ialltoall(send->data(), block, MPI_CHAR, recv->data(), block, MPI_CHAR, ctx.comm, r);
      }, send, recv);
      budget.measured(bytes, iters + 1, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
      const std::int64_t total = static_cast<std::int64_t>(block) * n;
      const double algbw = static_cast<double>(total) / t / 1e9;
      const double busbw = algbw * (n > 1 ? static_cast<double>(n - 1) / n : 1.0);
      bool ok = true;
      for (int p = 0; p < n; ++p) ok &= (*recv)[static_cast<std::size_t>(p) * static_cast<std::size_t>(block)] == static_cast<char>(p);
      nlohmann::json extra = nlohmann::json::object();
      if (bytes == sizes.back() && n > 1 && ctx.param<bool>("per_peer", true))
        ok &= per_peer(ctx, budget, bytes, block, iters, send, recv, extra);
      emit_bw(sink, ctx, total, t, algbw, busbw, ok, extra);
    }
  }

 private:
  // Extra iterations timing each peer's block, when the group agrees they fit in the budget;
  // otherwise extra says why there are no per-peer figures. False when a block arrived wrong.
  static bool per_peer(Context& ctx, SweepBudget& budget, std::int64_t bytes, int block, int iters,
                       std::unique_ptr<std::vector<char>>& send, std::unique_ptr<std::vector<char>>& recv,
                       nlohmann::json& extra) {
    const int n = ctx.group_size;
    const std::int64_t floor = ctx.param<std::int64_t>("peer_block_min", 64 << 10);
    const int pblock = std::max(block, static_cast<int>(std::min<std::int64_t>(floor, std::numeric_limits<int>::max() / std::max(1, n))));
    const auto d = budget.agree(static_cast<std::int64_t>(pblock) * n, iters);
    if (!d.run) {
      extra["peers_skipped"] = d.reason;
      return true;
    }
    if (const auto need = static_cast<std::size_t>(pblock) * static_cast<std::size_t>(n); need > send->size()) {
      send = std::make_unique<std::vector<char>>(need, static_cast<char>(ctx.group_rank));
      recv = std::make_unique<std::vector<char>>(need, -1);
    }
    std::fill(recv->begin(), recv->end(), static_cast<char>(-1));
    const PeerTimes times = time_per_peer(ctx, pblock, iters, send, recv);
    extra["peers"] = peers_json(ctx, pblock, times);
    return times.data_ok;
  }
};

KILN_REGISTER_CHECK(MpiAlltoall);

}  // namespace
}  // namespace kiln::worker
