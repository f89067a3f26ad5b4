#include "worker/relay_socket.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "common/auth.hpp"
#include "common/channel.hpp"
#include "common/protocol.hpp"

namespace kiln::worker::relay {

namespace {
socklen_t address_of(const std::string& name, sockaddr_un& a) {
  if (name.empty() || name.size() > kMaxNameSize) throw std::runtime_error("bad relay socket name");
  a = sockaddr_un{};
  a.sun_family = AF_UNIX;
  a.sun_path[0] = '\0';  // abstract namespace
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}
}  // namespace

int listen_socket(std::string& name) {
  name = "kiln-relay-" + std::to_string(::getpid()) + "-" + auth::random_hex(8);
  sockaddr_un a;
  const auto len = address_of(name, a);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) throw std::runtime_error(std::string("relay socket: ") + std::strerror(errno));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd, 1024) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("relay socket " + name + ": " + why);
  }
  return fd;
}

int connect_socket(const std::string& name, std::chrono::steady_clock::time_point deadline, std::string& why) {
  sockaddr_un a;
  const auto len = address_of(name, a);
  for (;;) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      why = std::strerror(errno);
      return -1;
    }
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), len) == 0) return fd;
    why = std::strerror(errno);
    ::close(fd);
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

int accept_same_uid(int listen_fd, std::string& why) {
  const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return -1;
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::getuid()) {
    why = "refused a relay connection from uid " + std::to_string(cred.uid) + " (pid " + std::to_string(cred.pid) + ")";
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string encode_hello(const Hello& h) {
  return frame({{"type", "relay_hello"}, {"rank", h.rank}, {"info", h.info}});
}

Hello decode_hello(std::string_view body) {
  const auto j = proto::parse_body(body);
  if (j.value("type", std::string()) != "relay_hello") throw std::runtime_error("the first relay frame is not a hello");
  return Hello{int_at<int>(j, "rank"), j.at("info").get<NodeInfo>()};
}

std::string frame(const nlohmann::json& msg) { return proto::encode_frame(msg); }

std::string frame_text(const std::string& payload) {
  if (payload.size() > proto::kDefaultMaxFrame) throw proto::ProtocolError("relay payload over the frame limit");
  return proto::encode_header(static_cast<std::uint32_t>(payload.size())) + payload;
}

}  // namespace kiln::worker::relay
