// The worker's way to the coordinator: the Link the main loop uses, and the coordinator connection.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
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
  // A node agent speaks for these ranks (its own first), each with its own view; empty: only rank.
  std::vector<int> ranks;
  std::vector<NodeInfo> rank_info;
};

using Clock = std::chrono::steady_clock;
// What the ranks a connection speaks for are doing, read by its I/O thread for each heartbeat.
using ProgressSource = std::function<std::vector<proto::RankProgress>()>;

// What the worker's main loop needs of its way to the coordinator: its own connection, or the
// relay through its node's agent (worker/relay.hpp). Every method but close() may be called from
// any thread.
class Link {
 public:
  virtual ~Link() = default;
  // The next command (round, bye or error) from the coordinator, or nullopt at the deadline or
  // when the link is closed (see closed()).
  virtual std::optional<nlohmann::json> next_command(Clock::time_point deadline) = 0;
  virtual std::uint64_t send_record(const Record& r) = 0;  // a result or a check end; queued; its seq
  virtual void send(const nlohmann::json& msg) = 0;
  virtual std::uint64_t last_seq() const = 0;  // the seq of this rank's last record (0: none)
  // Waits until every record this rank sent so far is on the coordinator's disk.
  virtual bool wait_acked(Clock::time_point deadline) = 0;
  virtual void close() = 0;
  virtual bool closed() const = 0;
  virtual double silent_s() const = 0;  // seconds since the last frame from the other end
  virtual std::string close_reason() const = 0;
  // The campaign rank the coordinator calls this rank by, when it is not the MPI rank (after a
  // restart that lost a node, proto::Welcome::ranks); -1: the MPI rank. Set while connecting.
  int campaign_rank() const { return campaign_rank_; }

 protected:
  int campaign_rank_ = -1;
};

// A framed byte stream with a background thread that owns the socket: it sends queued frames (the
// records in batches) and heartbeats, and reads commands and acks; the MPI thread only queues and
// takes. How frames are sealed and opened, and how the stream is set up, is the subclass's.
class StreamLink : public Link {
 public:
  ~StreamLink() override;
  void start();  // starts the I/O thread, once the stream is set up

  std::optional<nlohmann::json> next_command(Clock::time_point deadline) override;
  std::uint64_t send_record(const Record& r) override { return send_record_line(proto::record_line(r)); }
  std::uint64_t send_record_line(std::string line);  // a record already encoded (relayed as received)
  void send(const nlohmann::json& msg) override;
  std::uint64_t last_seq() const override { return seq_.load(); }
  bool wait_acked(Clock::time_point deadline) override { return wait_acked_to(last_seq(), deadline); }
  bool wait_acked_to(std::uint64_t seq, Clock::time_point deadline);
  std::uint64_t acked_seq() const { return acked_.load(); }
  void close() override;
  bool closed() const override { return closed_.load(); }
  double silent_s() const override {
    return std::chrono::duration<double>(Clock::now() - last_heard_.load()).count();
  }
  std::string close_reason() const override;
  // A descriptor written one byte whenever a command or an ack arrives (a node agent polls it).
  // Set before start().
  void notify(int fd) { notify_fd_ = fd; }
  // Where each heartbeat's progress comes from. Set before start().
  void progress_source(ProgressSource source) { progress_ = std::move(source); }

 protected:
  explicit StreamLink(std::string peer) : peer_(std::move(peer)) {}
  virtual std::string seal(const nlohmann::json& msg) = 0;
  virtual std::string seal_text(const std::string& payload) = 0;
  virtual nlohmann::json open(std::string_view body) = 0;
  void write_all_blocking(const std::string& bytes, Clock::time_point deadline);
  std::string read_one_blocking(Clock::time_point deadline);
  // The stream is set up: from now on the I/O thread owns it.
  void ready(double heartbeat_s);

  std::string peer_;  // "the coordinator", "the node agent": for messages
  int fd_ = -1;
  proto::FrameDecoder decoder_;

 private:
  void io_loop();
  bool pump_once(std::string& pending, Clock::time_point& next_beat);
  bool read_some();
  void flush_at_close(std::string& pending);
  void take(nlohmann::json msg);  // one message from the peer, on the I/O thread
  void seal_records_locked();     // queued records into batch frames, in order
  void fail(const std::string& why);
  void wake() const;

  int wake_[2] = {-1, -1};
  int notify_fd_ = -1;
  ProgressSource progress_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> outbox_;
  std::deque<nlohmann::json> inbox_;
  std::vector<std::string> records_;       // records not yet in a frame
  std::uint64_t records_first_seq_ = 1;    // the seq of records_.front()
  std::atomic<std::uint64_t> seq_{0};
  std::atomic<std::uint64_t> acked_{0};    // every seq up to this one is acknowledged
  std::atomic<bool> closed_{false};
  std::atomic<bool> stopping_{false};
  std::string close_reason_;
  double heartbeat_s_ = 2.0;
  std::atomic<Clock::time_point> last_heard_{};
};

// This rank's (or this node's) own authenticated connection to the coordinator.
class CoordinatorLink : public StreamLink {
 public:
  CoordinatorLink(net::Endpoint coordinator, std::string secret, LinkIdentity who);
  ~CoordinatorLink() override { close(); }

  // Connects (retrying until the timeout: the coordinator may still be starting) and
  // authenticates both ways. Throws LinkError with a one-line reason.
  void connect(std::chrono::milliseconds timeout);
  const std::string& run_id() const { return run_id_; }
  double heartbeat_s() const { return welcome_heartbeat_s_; }
  // The welcome's campaign ranks, parallel to the hello's ranks; empty: the hello's own.
  const std::vector<int>& names() const { return names_; }

 protected:
  std::string seal(const nlohmann::json& msg) override { return channel_.seal(msg); }
  std::string seal_text(const std::string& payload) override { return channel_.seal_text(payload); }
  nlohmann::json open(std::string_view body) override { return channel_.open(body); }

 private:
  void handshake();
  proto::Hello hello() const;

  net::Endpoint coordinator_;
  std::string secret_;
  LinkIdentity who_;
  proto::Channel channel_;
  std::string run_id_;
  std::vector<int> names_;
  double welcome_heartbeat_s_ = 2.0;
};

}  // namespace kiln::worker
