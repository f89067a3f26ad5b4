// Per-peer completion inside an all-to-all: each member posts a receive from every peer and a send
// to every peer (rotating order, so nobody is everyone's first target), then stamps each receive as
// it completes, relative to a start right after a barrier. A slow link shows in the one peer whose
// block arrives late instead of being diluted by the group's other peers, as the collective's single
// figure is. Used by mpi.alltoall in extra iterations at its largest size (the size localization
// judges), so the sweep's figure stays the MPI_Ialltoall figure it always was.
#pragma once

#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "worker/check.hpp"

namespace kiln::worker {

struct PeerTimes {
  std::vector<double> seconds;  // by group rank: median completion of that member's block here (own: 0)
  double group_seconds = 0;     // slowest member's mean time for a whole exchange (sends included)
  int iters = 0;
  bool data_ok = true;
};

// `iters` timed exchanges of `block` bytes per peer, each after a deadline-bounded barrier. Past
// the context's deadline the buffers are abandoned and DeadlineExceeded is thrown.
PeerTimes time_per_peer(Context& ctx, int block, int iters, std::unique_ptr<std::vector<char>>& send,
                        std::unique_ptr<std::vector<char>>& recv);

// A figure in busbw units for a block that took `seconds` to arrive: block*(n-1)/t, which is the
// group's busbw when every peer finishes together.
double peer_busbw(std::int64_t block, int n, double seconds);

// The result's extra.peers: world ranks of the peers and their busbw and seconds, in group order
// (own rank left out), the block each peer sent, plus the point-to-point exchange's group busbw.
nlohmann::json peers_json(const Context& ctx, std::int64_t block, const PeerTimes& t);

}  // namespace kiln::worker
