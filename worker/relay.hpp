// One connection per node: the node's local rank 0 is its agent. It opens the node's one
// connection to the coordinator (a hello naming every rank of the node) and relays for the node's
// other ranks over a unix-domain socket (worker/relay_socket.hpp):
//   - every command from the coordinator (round, bye, error) goes to every local rank; a round
//     already holds only this connection's groups, and each rank runs it as it would its own;
//   - each local rank's records go into the connection's batches, numbered per connection; the
//     coordinator's cumulative ack is turned back into each rank's own (worker/relay_book.hpp),
//     so that wait_acked still means "on the coordinator's disk";
//   - a local rank's done names the connection seq of its last record;
//   - the connection's bye leaves once every local rank has finished or is gone, and all is acked.
// A local rank that dies is dropped from the relay and the others go on (the coordinator sees it
// miss its round). The agent dying closes every relay: its local ranks leave (exit 3).
//
// Threads: in the agent, the MPI thread runs its own rank's checks through the Link interface; a
// hub thread owns the relay sockets and is the only reader of the coordinator connection's
// commands and acks; the connection has its own I/O thread (StreamLink).
#pragma once

#include <map>
#include <memory>

#include "worker/link.hpp"
#include "worker/relay_book.hpp"
#include "worker/relay_socket.hpp"

namespace kiln::worker {

// A local rank's link: its node agent, over the relay socket.
class RelayClient : public StreamLink {
 public:
  RelayClient() : StreamLink("the node agent") {}
  ~RelayClient() override { close(); }
  // Connects, says who this rank is, and waits for the agent's welcome (sent once the node's
  // connection to the coordinator is up). Throws LinkError.
  void connect(const std::string& name, const relay::Hello& me, Clock::time_point deadline);

 protected:
  std::string seal(const nlohmann::json& msg) override { return relay::frame(msg); }
  std::string seal_text(const std::string& payload) override { return relay::frame_text(payload); }
  nlohmann::json open(std::string_view body) override { return proto::parse_body(body); }
};

struct AgentSetup {
  net::Endpoint coordinator;
  std::string secret;
  LinkIdentity self;             // the agent's own rank and node
  std::vector<int> local_ranks;  // the node's world ranks, in local-rank order, the agent's first
  double connect_timeout_s = 60;
};

class NodeAgent : public Link {
 public:
  NodeAgent(int listen_fd, AgentSetup setup);
  ~NodeAgent() override;
  // Waits (bounded by the connect timeout) for the other local ranks' hellos, then connects to the
  // coordinator for all that came. Throws LinkError.
  void connect();
  // own: this rank's progress; the node's heartbeats carry it and what the local ranks last said.
  void start(ProgressSource own = {});

  std::optional<nlohmann::json> next_command(Clock::time_point deadline) override;
  std::uint64_t send_record(const Record& r) override;
  void send(const nlohmann::json& msg) override;
  std::uint64_t last_seq() const override { return own_last_.load(); }
  bool wait_acked(Clock::time_point deadline) override;
  void close() override;
  bool closed() const override { return !link_ || link_->closed(); }
  double silent_s() const override { return link_ ? link_->silent_s() : 0.0; }
  std::string close_reason() const override { return link_ ? link_->close_reason() : "not connected"; }

  struct Peer;

 private:
  void gather_hellos(Clock::time_point deadline);
  bool take_hello(Peer& p);
  LinkIdentity identity() const;
  void hub_loop();
  void hub_turn(Clock::time_point& next_beat);
  void fan_out_commands();
  void relay_acks();
  void serve(Peer& p, short revents);
  void take_from(Peer& p, std::string_view body);
  void relay_records(Peer& p, proto::Records& b);
  void drop(Peer& p, const std::string& why);
  void queue_to(Peer& p, const std::string& bytes);
  bool everyone_finished() const;

  int listen_fd_;
  AgentSetup setup_;
  std::vector<std::unique_ptr<Peer>> peers_;  // the local ranks that said hello
  std::unique_ptr<CoordinatorLink> link_;
  RelayBook book_;                            // hub thread only
  std::uint64_t acked_seen_ = 0;              // hub thread only
  int notify_[2] = {-1, -1};                  // the link and the MPI thread wake the hub
  std::thread hub_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::int64_t> round_{-1};       // the round last fanned out
  std::atomic<std::uint64_t> own_last_{0};
  std::atomic<bool> own_finished_{false};
  std::atomic<bool> all_finished_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::mutex progress_mu_;
  std::map<int, proto::RankProgress> peer_progress_;  // rank -> its last heartbeat's
  std::deque<nlohmann::json> inbox_;          // commands for the agent's own rank
};

}  // namespace kiln::worker
