// The unix-domain socket between a node agent and its node's other ranks. It lives in the abstract
// namespace (no file to clean up after a crash); since that has no file permissions, the agent
// takes a connection only from a process of its own uid (SO_PEERCRED).
#pragma once

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "common/types.hpp"

namespace kiln::worker::relay {

inline constexpr std::size_t kMaxNameSize = 100;  // fits sockaddr_un.sun_path after its leading NUL

// Listens on a fresh abstract name; returns the fd and sets name. Throws std::runtime_error.
int listen_socket(std::string& name);
// Connects to the agent's name, retrying until the deadline (-1 with `why` on failure).
int connect_socket(const std::string& name, std::chrono::steady_clock::time_point deadline, std::string& why);
// Accepts one pending connection (non-blocking fd) from this uid only; -1 when none or refused.
int accept_same_uid(int listen_fd, std::string& why);

// The relay's first frame, from a local rank: who it is, and its own view of the node.
struct Hello {
  int rank = -1;
  NodeInfo info;
};
std::string encode_hello(const Hello& h);
Hello decode_hello(std::string_view body);  // throws std::exception

// A plain frame (no MAC: both ends are the same user on the same host) of a JSON message or of a
// payload already serialised (a records batch).
std::string frame(const nlohmann::json& msg);
std::string frame_text(const std::string& payload);

}  // namespace kiln::worker::relay
