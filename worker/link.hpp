// The worker's connection to the coordinator. A background thread owns the socket: it sends
// queued frames, heartbeats, and reads commands; the MPI thread only queues and takes.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/net.hpp"
#include "common/channel.hpp"
#include "common/protocol.hpp"
#include "common/types.hpp"

namespace kiln::worker {

struct LinkError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The coordinator closed the connection before its challenge: try again shortly.
struct Refused : LinkError {
  using LinkError::LinkError;
};

struct LinkIdentity {
  int rank = 0;
  int world_size = 1;
  std::string host;
  NodeInfo info;
};

class CoordinatorLink {
 public:
  CoordinatorLink(net::Endpoint coordinator, std::string secret, LinkIdentity who);
  ~CoordinatorLink();

  // Connects (retrying until the timeout: the coordinator may still be starting) and
  // authenticates both ways. Throws LinkError with a one-line reason.
  void connect(std::chrono::milliseconds timeout);
  void start();  // starts the I/O thread

  // The next command (round or bye) from the coordinator, or nullopt at the deadline or when the
  // link is closed (see closed()).
  std::optional<nlohmann::json> next_command(std::chrono::steady_clock::time_point deadline);
  std::uint64_t send_record(const Record& r);  // a result or a check end; queued; returns its seq
  void send(const nlohmann::json& msg);
  std::uint64_t last_seq() const { return seq_.load(); }
  // Waits until every result sent so far is acknowledged (on disk at the coordinator).
  bool wait_acked(std::chrono::steady_clock::time_point deadline);
  void close();
  bool closed() const { return closed_.load(); }
  // Seconds since the last frame from the coordinator (it sends a heartbeat every heartbeat_s).
  double silent_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - last_heard_.load()).count();
  }
  std::string close_reason() const;
  const std::string& run_id() const { return run_id_; }

 private:
  void io_loop();
  void handshake();
  void write_all_blocking(const std::string& bytes, std::chrono::steady_clock::time_point deadline);
  std::string read_one_blocking(std::chrono::steady_clock::time_point deadline);
  void take(nlohmann::json msg);  // one message from the coordinator, on the I/O thread
  void seal_records_locked();     // queued records into batch frames, in order
  void fail(const std::string& why);

  net::Endpoint coordinator_;
  std::string secret_;
  LinkIdentity who_;
  int fd_ = -1;
  int wake_[2] = {-1, -1};
  proto::FrameDecoder decoder_;
  proto::Channel channel_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> outbox_;
  std::deque<nlohmann::json> inbox_;
  std::set<std::uint64_t> unacked_;
  std::vector<std::string> records_;       // records not yet in a frame
  std::uint64_t records_first_seq_ = 1;    // the seq of records_.front()
  std::atomic<std::uint64_t> seq_{0};
  std::atomic<bool> closed_{false};
  std::atomic<bool> stopping_{false};
  std::string close_reason_;
  std::string run_id_;
  double heartbeat_s_ = 2.0;
  std::atomic<std::chrono::steady_clock::time_point> last_heard_{};
};

}  // namespace kiln::worker
