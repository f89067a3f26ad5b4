#include "worker/checks/mpi/per_peer.hpp"

#include <sched.h>

#include <algorithm>
#include <stdexcept>

#include "worker/mpi_wait.hpp"

namespace kiln::worker {
namespace {

constexpr int kTag = 0x4c01;

// Receives first (index k-1 is from me-k), then sends (to me+k): at step k everyone sends to its
// k-th right neighbour, so no member is everyone's first target.
std::vector<MPI_Request> post(const Context& ctx, int block, std::vector<char>& send, std::vector<char>& recv) {
  const int n = ctx.group_size;
  const int me = ctx.group_rank;
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(2 * (n - 1)), MPI_REQUEST_NULL);
  auto at = [block](std::vector<char>& v, int p) { return v.data() + static_cast<std::size_t>(p) * static_cast<std::size_t>(block); };
  for (int k = 1; k < n; ++k) {
    const int from = (me - k + n) % n;
    MPI_Irecv(at(recv, from), block, MPI_CHAR, from, kTag, ctx.comm, &reqs[static_cast<std::size_t>(k - 1)]);
  }
  for (int k = 1; k < n; ++k) {
    const int to = (me + k) % n;
    MPI_Isend(at(send, to), block, MPI_CHAR, to, kTag, ctx.comm, &reqs[static_cast<std::size_t>(n - 2 + k)]);
  }
  return reqs;
}

// One exchange: stamps done_at[peer] when that peer's block has arrived; returns when every send
// and receive is complete, in seconds after t0.
double exchange(Context& ctx, int block, std::unique_ptr<std::vector<char>>& send,
                std::unique_ptr<std::vector<char>>& recv, std::vector<double>& done_at) {
  const int n = ctx.group_size;
  const double t0 = MPI_Wtime();
  auto reqs = post(ctx, block, *send, *recv);
  std::vector<int> idx(reqs.size());
  std::size_t left = reqs.size();
  for (unsigned spins = 0; left > 0; ++spins) {
    int count = 0;
    if (MPI_Testsome(static_cast<int>(reqs.size()), reqs.data(), &count, idx.data(), MPI_STATUSES_IGNORE) != MPI_SUCCESS)
      throw std::runtime_error("per-peer exchange failed");
    if (count == MPI_UNDEFINED) break;
    const double now = MPI_Wtime() - t0;
    for (int i = 0; i < count; ++i)
      if (idx[static_cast<std::size_t>(i)] < n - 1) done_at[static_cast<std::size_t>((ctx.group_rank - idx[static_cast<std::size_t>(i)] - 1 + n) % n)] = now;
    left -= static_cast<std::size_t>(count);
    if (count > 0) continue;
    if ((spins & 63) == 0 && ctx.expired()) {
      abandon(std::shared_ptr<std::vector<char>>(send.release()));
      abandon(std::shared_ptr<std::vector<char>>(recv.release()));
      throw DeadlineExceeded("a peer's block did not arrive before the deadline (per-peer all-to-all)");
    }
    sched_yield();
  }
  return MPI_Wtime() - t0;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

}  // namespace

PeerTimes time_per_peer(Context& ctx, int block, int iters, std::unique_ptr<std::vector<char>>& send,
                        std::unique_ptr<std::vector<char>>& recv) {
  const auto n = static_cast<std::size_t>(ctx.group_size);
  std::vector<std::vector<double>> samples(n);
  std::vector<double> done_at(n, 0.0);
  double total = 0;
  for (int it = 0; it < iters; ++it) {
    wait_request(ctx, [&](MPI_Request* r) { return MPI_Ibarrier(ctx.comm, r); }, send, recv);
    total += exchange(ctx, block, send, recv, done_at);
    for (std::size_t p = 0; p < n; ++p) samples[p].push_back(done_at[p]);
  }
  PeerTimes t;
  t.iters = iters;
  for (std::size_t p = 0; p < n; ++p) {
    t.seconds.push_back(static_cast<int>(p) == ctx.group_rank ? 0.0 : median(samples[p]));
    if (static_cast<int>(p) != ctx.group_rank) t.data_ok &= (*recv)[p * static_cast<std::size_t>(block)] == static_cast<char>(p);
  }
  auto mine = std::make_unique<double>(total / std::max(1, iters));
  auto slowest = std::make_unique<double>(0.0);
  wait_request(ctx, [&](MPI_Request* r) {
    return MPI_Iallreduce(mine.get(), slowest.get(), 1, MPI_DOUBLE, MPI_MAX, ctx.comm, r);
  }, mine, slowest);
  t.group_seconds = *slowest;
  return t;
}

double peer_busbw(std::int64_t block, int n, double seconds) {
  if (seconds <= 0 || n < 2) return 0.0;
  return static_cast<double>(block) * (n - 1) / seconds / 1e9;
}

nlohmann::json peers_json(const Context& ctx, std::int64_t block, const PeerTimes& t) {
  auto ranks = nlohmann::json::array();
  auto busbw = nlohmann::json::array();
  auto seconds = nlohmann::json::array();
  for (int p = 0; p < ctx.group_size; ++p) {
    if (p == ctx.group_rank) continue;
    const auto i = static_cast<std::size_t>(p);
    ranks.push_back(i < ctx.group_world_ranks.size() ? ctx.group_world_ranks[i] : p);
    busbw.push_back(peer_busbw(block, ctx.group_size, t.seconds[i]));
    seconds.push_back(t.seconds[i]);
  }
  return {{"ranks", ranks},
          {"busbw", busbw},
          {"seconds", seconds},
          {"iters", t.iters},
          {"block_bytes", block},
          {"group_busbw", peer_busbw(block, ctx.group_size, t.group_seconds)}};
}

}  // namespace kiln::worker
