// Events passed from the I/O thread (ResultServer) to the campaign thread, which owns storage and
// analysis. The queue is the only shared state between the two.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/protocol.hpp"

namespace kiln::coord {

using SessionId = std::uint64_t;

struct Event {
  enum class Kind { Joined, Message, Left, Rejected } kind;
  SessionId session = 0;
  int rank = -1;
  proto::Hello hello;     // Joined
  proto::WorkerMessage msg;  // Message: decoded and type-checked on the I/O thread
  std::string reason;     // Left / Rejected
  std::string peer;       // remote address
};

class EventQueue {
 public:
  void push(Event e) {
    {
      std::lock_guard lk(mu_);
      q_.push_back(std::move(e));
    }
    cv_.notify_one();
  }
  // Waits until at least one event is queued or the deadline passes, then takes all queued events.
  std::vector<Event> take_all(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lk(mu_);
    cv_.wait_until(lk, deadline, [&] { return !q_.empty(); });
    std::vector<Event> out(std::make_move_iterator(q_.begin()), std::make_move_iterator(q_.end()));
    q_.clear();
    return out;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> q_;
};

}  // namespace kiln::coord
