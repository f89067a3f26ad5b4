// net.pair_bw: point-to-point bandwidth each way and round-trip latency between the two members
// of a pair group, over whatever transport MPI uses between them. Results are about the link
// "hostA<->hostB" (or the two ranks when they share a host).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "worker/check.hpp"
#include "worker/mpi_wait.hpp"
#include "worker/mpi_deadline.hpp"

namespace kiln::worker {
namespace {

class NetPairBw : public Check {
 public:
  std::string key() const override { return "net.pair_bw"; }

  void run(Context& ctx, ResultSink& sink) override {
    if (ctx.group_size != 2) {
      Result r;
      r.metric = "pair";
      r.status = Status::Skip;
      r.reason = "net.pair_bw needs groups of two ranks (this group has " + std::to_string(ctx.group_size) + ")";
      sink.emit(r);
      return;
    }
    const int me = ctx.group_rank, peer = 1 - me;
    // Who is on the other end, for the link's name (a deadline-bounded swap: a peer that never
    // answers is a timeout, not a hang).
    char mine[256] = {}, theirs[256] = {};
    std::snprintf(mine, sizeof mine, "%s", ctx.node.host.c_str());
    if (!mpi_deadline::Exchanger(ctx.comm).swap(peer, mine, theirs, sizeof mine, ctx.deadline))
      throw DeadlineExceeded("the peer did not answer before the deadline");
    std::string a = ctx.node.host, b = theirs;
    if (a == b) {
      a += "/rank" + std::to_string(ctx.group_world_ranks[static_cast<std::size_t>(me)]);
      b += "/rank" + std::to_string(ctx.group_world_ranks[static_cast<std::size_t>(peer)]);
    }
    const Entity link{"link", std::min(a, b) + "<->" + std::max(a, b)};

    const std::int64_t bytes = ctx.param<std::int64_t>("bytes", 8 << 20);
    const int iters = ctx.param<int>("iters", 4);
    auto buf = std::make_unique<std::vector<char>>(static_cast<std::size_t>(bytes), 1);
    auto ack = std::make_unique<std::vector<char>>(1, 0);
    // One direction at a time: sender streams `iters` messages, receiver answers one byte.
    auto one_way = [&](int sender) {
      wait_request(ctx, [&](MPI_Request* r) { return MPI_Ibarrier(ctx.comm, r); }, buf, ack);
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
    const double bw01 = one_way(0);
    const double bw10 = one_way(1);
    // Latency: ping-pong of 8 bytes, half the mean round trip.
    const int pings = ctx.param<int>("pings", 100);
    wait_request(ctx, [&](MPI_Request* r) { return MPI_Ibarrier(ctx.comm, r); }, buf, ack);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < pings; ++i) {
      if (me == 0) {
        wait_request(ctx, [&](MPI_Request* r) { return MPI_Isend(buf->data(), 8, MPI_CHAR, peer, 4, ctx.comm, r); }, buf, ack);
        wait_request(ctx, [&](MPI_Request* r) { return MPI_Irecv(buf->data(), 8, MPI_CHAR, peer, 4, ctx.comm, r); }, buf, ack);
      } else {
        wait_request(ctx, [&](MPI_Request* r) { return MPI_Irecv(buf->data(), 8, MPI_CHAR, peer, 4, ctx.comm, r); }, buf, ack);
        wait_request(ctx, [&](MPI_Request* r) { return MPI_Isend(buf->data(), 8, MPI_CHAR, peer, 4, ctx.comm, r); }, buf, ack);
      }
    }
    const double lat_us = (MPI_Wtime() - t0) / pings / 2 * 1e6;
    if (me != 0) return;  // one report per pair
    auto emit = [&](const char* metric, double v, const char* unit, const std::string& dir) {
      Result r;
      r.entity = link;
      r.metric = metric;
      r.value = v;
      r.unit = unit;
      r.size_bytes = std::string(metric) == "latency" ? 8 : bytes;
      r.extra = {{"direction", dir}};
      sink.emit(r);
    };
    emit("bw", bw01, "GB/s", a + "->" + b);
    emit("bw", bw10, "GB/s", b + "->" + a);
    emit("latency", lat_us, "us", "round trip / 2");
  }
};

KILN_REGISTER_CHECK(NetPairBw);

}  // namespace
}  // namespace kiln::worker
