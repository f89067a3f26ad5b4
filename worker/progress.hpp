// What this rank's MPI thread is doing, for the heartbeats: written by the MPI thread, read by the
// link thread once per heartbeat. The counters are atomics, so the hot loop (an MPI_Test spin)
// takes no lock; only the check key, set once per check, is behind a mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "common/protocol.hpp"

namespace kiln::worker {

class Progress {
 public:
  // A check starts (or, with an empty key, the rank is between checks): the counters restart.
  void begin(const std::string& key, std::int64_t round) {
    {
      std::lock_guard lk(mu_);
      key_ = key;
    }
    ops_.store(0, std::memory_order_relaxed);
    waiting_on_.store(-1, std::memory_order_relaxed);
    round_.store(round, std::memory_order_relaxed);
  }
  void op_done() { ops_.fetch_add(1, std::memory_order_relaxed); }
  // The group peer (index in the group) the rank now waits on; -1 when it is not known.
  void waiting_on(int peer) { waiting_on_.store(peer, std::memory_order_relaxed); }

  proto::RankProgress snapshot(int rank) const {
    proto::RankProgress p;
    p.rank = rank;
    {
      std::lock_guard lk(mu_);
      p.check = key_;
    }
    p.round = round_.load(std::memory_order_relaxed);
    p.ops = ops_.load(std::memory_order_relaxed);
    p.waiting_on = waiting_on_.load(std::memory_order_relaxed);
    return p;
  }

 private:
  mutable std::mutex mu_;
  std::string key_;
  std::atomic<std::int64_t> round_{-1};
  std::atomic<std::uint64_t> ops_{0};
  std::atomic<int> waiting_on_{-1};
};

}  // namespace kiln::worker
