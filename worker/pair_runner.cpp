#include "worker/pair_runner.hpp"

#include <exception>

#include "worker/mpi_deadline.hpp"
#include "worker/pairings.hpp"

namespace kiln::worker {
namespace {

// Frees a pair communicator on every way out of the pair.
struct CommGuard {
  MPI_Comm comm = MPI_COMM_NULL;
  ~CommGuard() {
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
};

Context pair_context(const Context& ctx, MPI_Comm comm, int peer) {
  Context pair(ctx);
  pair.comm = comm;
  pair.group_size = 2;
  pair.group_rank = ctx.group_rank < peer ? 0 : 1;
  const int lo = std::min(ctx.group_rank, peer), hi = std::max(ctx.group_rank, peer);
  auto world = [&](int g) {
    return static_cast<std::size_t>(g) < ctx.group_world_ranks.size() ? ctx.group_world_ranks[static_cast<std::size_t>(g)] : g;
  };
  pair.group_world_ranks = {world(lo), world(hi)};
  return pair;
}

void report_error(const Context& ctx, ResultSink& sink, int pairing, int peer, const std::exception& e) {
  Result r;
  r.metric = "pair";
  r.status = Status::Error;
  const auto i = static_cast<std::size_t>(peer);
  const int world = i < ctx.group_world_ranks.size() ? ctx.group_world_ranks[i] : peer;
  r.reason = "pairing " + std::to_string(pairing) + " with rank " + std::to_string(world) + ": " + e.what();
  r.extra = {{"pairing", pairing}, {"peer_rank", world}};
  sink.emit(std::move(r));
}

}  // namespace

void run_pairings(Context& ctx, ResultSink& sink, int pairings, const std::function<void(Context& pair)>& body) {
  if (ctx.group_size == 2) {
    body(ctx);
    return;
  }
  mpi_deadline::Exchanger roll(ctx.comm);
  for (int r = 0; r < pairings; ++r) {
    if (!roll.barrier(ctx.deadline))
      throw DeadlineExceeded("pairing " + std::to_string(r) + ": a member did not arrive before the deadline");
    const int peer = pairings::partner(ctx.group_size, r, ctx.group_rank);
    CommGuard pair;
    const int color = peer < 0 ? MPI_UNDEFINED : std::min(ctx.group_rank, peer);
    if (MPI_Comm_split(ctx.comm, color, ctx.group_rank, &pair.comm) != MPI_SUCCESS)
      throw std::runtime_error("MPI_Comm_split failed for pairing " + std::to_string(r));
    if (peer < 0) continue;  // sits this pairing out
    Context pc = pair_context(ctx, pair.comm, peer);
    try {
      body(pc);
    } catch (const DeadlineExceeded&) {
      throw;
    } catch (const std::exception& e) {
      report_error(ctx, sink, r, peer, e);
    }
  }
}

}  // namespace kiln::worker
