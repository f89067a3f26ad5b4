// net.pair_bw: point-to-point bandwidth each way and round-trip latency between the two members
// of a pair group, over whatever transport MPI uses between them. Results are about the link
// "hostA<->hostB" (or the two ranks when they share a host).
//
// In a group of more than two, the members meet in disjoint pairs, one pairing after another
// (worker/pairings.hpp, run by worker/pair_runner.hpp on one communicator per pair). `partners`
// pairings give every member that many different partners, so each node has several links
// measured and one slow peer does not make it look slow (the fleet comparison takes each node's
// median link).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "worker/check.hpp"
#include "worker/mpi_wait.hpp"
#include "worker/mpi_deadline.hpp"
#include "worker/pair_runner.hpp"
#include "worker/pairings.hpp"

namespace kiln::worker {
namespace {

class NetPairBw : public Check {
 public:
  std::string key() const override { return "net.pair_bw"; }

  void run(Context& ctx, ResultSink& sink) override {
    if (ctx.group_size < 2) {
      Result r;
      r.metric = "pair";
      r.status = Status::Skip;
      r.reason = "net.pair_bw needs a group of at least two ranks (this group has " + std::to_string(ctx.group_size) + ")";
      sink.emit(r);
      return;
    }
    const int rounds = pairings::count(ctx.group_size, ctx.param<int>("partners", 7));
    run_pairings(ctx, sink, rounds, [&](Context& pair) { one_pair(pair, sink); });
  }

 private:
  // One pair (a two-member communicator): bandwidth each way, then latency.
  static void one_pair(Context& ctx, ResultSink& sink) {
    const int peer = 1 - ctx.group_rank;
    const int me = ctx.group_rank;
    const std::int64_t bytes = ctx.param<std::int64_t>("bytes", 8 << 20);
    const int iters = ctx.param<int>("iters", 4);
    const int pings = ctx.param<int>("pings", 100);
    auto buf = std::make_unique<std::vector<char>>(static_cast<std::size_t>(bytes), 1);
    auto ack = std::make_unique<std::vector<char>>(1, 0);
    auto barrier = [&] { wait_request(ctx, [&](MPI_Request* r) { return MPI_Ibarrier(ctx.comm, r); }, buf, ack); };
    const Link link = name_link(ctx, peer);
    const int lo = std::min(me, peer);
    // One direction at a time: the sender streams `iters` messages, the receiver answers one byte.
    auto one_way = [&](int sender) {
      barrier();
      const double t0 = MPI_Wtime();
      for (int i = 0; i < iters; ++i) {
        if (me == sender)
          wait_request(ctx, [&](MPI_Request* r) { return MPI_Isend(buf->data(), static_cast<int>(bytes), MPI_CHAR, peer, 2, ctx.comm, r); }, buf, ack);
        else
          wait_request(ctx, [&](MPI_Request* r) { return MPI_Irecv(buf->data(), static_cast<int>(bytes), MPI_CHAR, peer, 2, ctx.comm, r); }, buf, ack);
      }
      if (me == sender)
        wait_request(ctx, [&](MPI_Request* r) { return MPI_Irecv(ack->data(), 1, MPI_CHAR, peer, 3, ctx.comm, r); }, buf, ack);
      else
        wait_request(ctx, [&](MPI_Request* r) { return MPI_Isend(ack->data(), 1, MPI_CHAR, peer, 3, ctx.comm, r); }, buf, ack);
      return static_cast<double>(bytes) * iters / (MPI_Wtime() - t0) / 1e9;
    };
    const double bw_lo = one_way(lo);
    const double bw_hi = one_way(me == lo ? peer : me);
    // Latency: ping-pong of 8 bytes, half the mean round trip.
    barrier();
    const double t0 = MPI_Wtime();
    for (int i = 0; i < pings; ++i) {
      const bool first = me == lo;
      for (int leg = 0; leg < 2; ++leg) {
        if ((leg == 0) == first)
          wait_request(ctx, [&](MPI_Request* r) { return MPI_Isend(buf->data(), 8, MPI_CHAR, peer, 4, ctx.comm, r); }, buf, ack);
        else
          wait_request(ctx, [&](MPI_Request* r) { return MPI_Irecv(buf->data(), 8, MPI_CHAR, peer, 4, ctx.comm, r); }, buf, ack);
      }
    }
    const double lat_us = (MPI_Wtime() - t0) / pings / 2 * 1e6;
    if (me != lo) return;  // one report per pair
    auto emit = [&](const char* metric, double v, const char* unit, const std::string& dir) {
      Result r;
      r.entity = link.entity;
      r.metric = metric;
      r.value = v;
      r.unit = unit;
      r.size_bytes = std::string(metric) == "latency" ? 8 : bytes;
      r.extra = {{"direction", dir}};
      sink.emit(r);
    };
    emit("bw", bw_lo, "GB/s", link.mine + "->" + link.theirs);
    emit("bw", bw_hi, "GB/s", link.theirs + "->" + link.mine);
    emit("latency", lat_us, "us", "round trip / 2");
  }

  struct Link {
    Entity entity;
    std::string mine, theirs;
  };

  // Who is on the other end, for the link's name (a deadline-bounded swap: a peer that never
  // answers is a timeout, not a hang).
  static Link name_link(Context& ctx, int peer) {
    char mine[256] = {}, theirs[256] = {};
    std::snprintf(mine, sizeof mine, "%s", ctx.node.host.c_str());
    if (!mpi_deadline::Exchanger(ctx.comm).swap(peer, mine, theirs, sizeof mine, ctx.deadline))
      throw DeadlineExceeded("the peer did not answer before the deadline");
    std::string a = ctx.node.host, b = theirs;
    if (a == b) {
      a += "/rank" + std::to_string(ctx.group_world_ranks[static_cast<std::size_t>(ctx.group_rank)]);
      b += "/rank" + std::to_string(ctx.group_world_ranks[static_cast<std::size_t>(peer)]);
    }
    return {{"link", std::min(a, b) + "<->" + std::max(a, b)}, a, b};
  }
};

KILN_REGISTER_CHECK(NetPairBw);

}  // namespace
}  // namespace kiln::worker
