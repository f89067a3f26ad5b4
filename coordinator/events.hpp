// Events passed from the I/O thread (ResultServer) to the campaign thread, which owns storage and
// analysis. The queue is the only shared state between the two. It is bounded in what it holds:
// the server stops reading from its connections while the queue is over its mark (TCP then pushes
// back on the workers), so memory does not grow with how far the campaign thread falls behind.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
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
  proto::Hello hello;     // Joined: the ranks the connection carries, its host and node
  proto::WorkerMessage msg;  // Message: decoded and type-checked on the I/O thread
  std::string reason;     // Left / Rejected
  std::string peer;       // remote address
};

// How much an event weighs in the queue's bound: its records, or one.
inline std::size_t weight(const Event& e) {
  if (const auto* r = std::get_if<proto::Records>(&e.msg); r && e.kind == Event::Kind::Message)
    return r->records.size();
  return 1;
}

class EventQueue {
 public:
  // The server reads no more from its connections while more than this many records wait.
  static constexpr std::size_t kHighWater = 65536;

  void push(Event e) {
    const auto w = weight(e);
    {
      std::lock_guard lk(mu_);
      q_.push_back(std::move(e));
    }
    held_.fetch_add(w);
    cv_.notify_one();
  }
  // Waits until at least one event is queued or the deadline passes, then takes all queued events.
  std::vector<Event> take_all(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lk(mu_);
    cv_.wait_until(lk, deadline, [&] { return !q_.empty(); });
    std::vector<Event> out(std::make_move_iterator(q_.begin()), std::make_move_iterator(q_.end()));
    q_.clear();
    lk.unlock();
    std::size_t w = 0;
    for (const auto& e : out) w += weight(e);
    const bool was_full = full();
    held_.fetch_sub(w);
    if (was_full && !full() && on_room_) on_room_();
    return out;
  }
  // Called (on the taking thread) when the queue drops back under its mark: the server resumes
  // reading. Set once, before events flow.
  void on_room(std::function<void()> f) { on_room_ = std::move(f); }
  // Records (and other events) queued and not yet taken.
  std::size_t held() const { return held_.load(); }
  bool full() const { return held() > kHighWater; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> q_;
  std::atomic<std::size_t> held_{0};
  std::function<void()> on_room_;
};

}  // namespace kiln::coord
