// The coordinator's TCP server. Threading model: one I/O thread runs the io_context; every socket
// operation and every session's state lives on it. The campaign thread talks to it only through
// post() (send/ack/close) and receives everything through the EventQueue. Storage and analysis
// never run on the I/O thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include <set>

#include "common/net.hpp"
#include "coordinator/events.hpp"

namespace kiln::coord {

struct ServerOptions {
  net::Endpoint listen{"127.0.0.1", 0};
  std::string secret;
  std::string run_id;
  int world_size = 0;                 // ranks outside [0, world_size) are refused
  std::uint32_t max_frame = proto::kDefaultMaxFrame;
  double handshake_timeout_s = 10.0;  // a peer that has not authenticated by then is dropped
  double idle_timeout_s = 60.0;       // an authenticated peer silent for this long is dropped
  double heartbeat_s = 2.0;           // what workers are told to send, and how often we send ours
  // Peers that have not authenticated yet, in total and from one address: more are closed at once,
  // so idle connections cannot use up descriptors or memory (each holds at most 16 KiB).
  int max_unauthenticated = 1024;
  int max_unauthenticated_per_address = 128;
  // When not empty, only these peer addresses may connect (the allocation's nodes).
  std::set<std::string> allowed_peers;
  // When not empty, a hello must name one of these hosts (the launcher's nodes).
  std::set<std::string> allowed_hosts;
};

// Raises this process's open-file limit to its hard limit (a coordinator holds one descriptor per
// rank); returns the new soft limit.
long raise_file_limit();

class ResultServer {
 public:
  ResultServer(ServerOptions opts, EventQueue& events);
  ~ResultServer();
  ResultServer(const ResultServer&) = delete;
  ResultServer& operator=(const ResultServer&) = delete;

  // Binds and starts the I/O thread. Throws std::runtime_error with a one-line reason on failure.
  void start();
  void stop();
  net::Endpoint local_endpoint() const;

  void send(SessionId s, nlohmann::json msg);
  void send_text(SessionId s, std::string payload);  // a message already serialised
  void ack(SessionId s, std::uint64_t seq);
  void close(SessionId s, const std::string& reason);
  // From now on a hello's ranks are renamed: the rank on (host, local rank) is the campaign rank
  // given here, whatever MPI rank it says (a restart's new step numbers its ranks afresh once a
  // node is gone); a rank on a place not given is refused. The welcome tells the worker its name.
  using RankPlaces = std::map<std::pair<std::string, int>, int>;
  void rename_ranks(RankPlaces places);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::coord
