// What this rank's MPI thread is doing, for the heartbeats: written by the MPI thread, read by the
// link thread once per heartbeat. The counters are atomics, so the hot loop (an MPI_Test spin)
// takes no lock; only the check key, set once per check, is behind a mutex.
#pragma once

#include <atomic>
#include <chrono>
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
    stalled_us_.store(0, std::memory_order_relaxed);
    last_tick_ = std::chrono::steady_clock::now();
    waiting_on_.store(-1, std::memory_order_relaxed);
    round_.store(round, std::memory_order_relaxed);
  }
  void op_done() { ops_.fetch_add(1, std::memory_order_relaxed); }
  // Called from the MPI thread's wait loop, which runs without pause: a gap of more than kStall
  // between two calls is time the process did not run (stopped, starved of CPU, swapped out).
  void tick(std::chrono::steady_clock::time_point now) {
    const auto gap = now - last_tick_;
    last_tick_ = now;
    if (gap > kStall)
      stalled_us_.fetch_add(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(gap).count()),
                            std::memory_order_relaxed);
  }
  static constexpr std::chrono::milliseconds kStall{200};
  // The group peer (index in the group) the rank now waits on; -1 when it is not known.
  void waiting_on(int peer) { waiting_on_.store(peer, std::memory_order_relaxed); }

  // The rank the heartbeats speak for: its campaign rank once the coordinator has named it.
  void rank(int r) { rank_.store(r, std::memory_order_relaxed); }

  proto::RankProgress snapshot() const {
    proto::RankProgress p;
    p.rank = rank_.load(std::memory_order_relaxed);
    {
      std::lock_guard lk(mu_);
      p.check = key_;
    }
    p.round = round_.load(std::memory_order_relaxed);
    p.ops = ops_.load(std::memory_order_relaxed);
    p.waiting_on = waiting_on_.load(std::memory_order_relaxed);
    p.stalled_s = static_cast<double>(stalled_us_.load(std::memory_order_relaxed)) / 1e6;
    return p;
  }

 private:
  mutable std::mutex mu_;
  std::string key_;
  std::atomic<int> rank_{-1};
  std::atomic<std::int64_t> round_{-1};
  std::atomic<std::uint64_t> ops_{0};
  std::atomic<int> waiting_on_{-1};
  std::atomic<std::uint64_t> stalled_us_{0};
  std::chrono::steady_clock::time_point last_tick_{};  // the MPI thread's only
};

}  // namespace kiln::worker
