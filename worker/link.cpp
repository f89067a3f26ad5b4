#include "worker/link.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

#include "common/auth.hpp"
#include "common/channel.hpp"
#include "common/text.hpp"

namespace kiln::worker {

using Clock = std::chrono::steady_clock;

namespace {
int ms_until(Clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(std::min<long long>(ms, 1000));
}

// connect() that gives up at the deadline instead of waiting for the kernel's own timeout
// (minutes when the coordinator's host drops packets).
bool connect_by(int fd, const sockaddr* addr, socklen_t len, Clock::time_point deadline, std::string& why) {
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  if (::connect(fd, addr, len) != 0 && errno != EINPROGRESS) {
    why = std::strerror(errno);
    return false;
  }
  for (;;) {
    pollfd p{fd, POLLOUT, 0};
    const int rc = ::poll(&p, 1, ms_until(deadline));
    if (rc > 0) break;
    if (rc < 0 && errno == EINTR) continue;
    if (Clock::now() >= deadline) {
      why = "connection timed out";
      return false;
    }
  }
  int err = 0;
  socklen_t elen = sizeof err;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
  if (err != 0) {
    why = std::strerror(err);
    return false;
  }
  ::fcntl(fd, F_SETFL, flags);
  return true;
}

// One attempt to open a TCP connection; returns the fd or -1 with errno-like text in `why`.
int try_connect(const net::Endpoint& ep, Clock::time_point deadline, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = ::getaddrinfo(ep.host.c_str(), std::to_string(ep.port).c_str(), &hints, &res);
  if (rc != 0) {
    why = std::string("cannot resolve ") + ep.host + ": " + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (auto* a = res; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (connect_by(fd, a->ai_addr, a->ai_addrlen, deadline, why)) break;
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  if (fd >= 0) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}
}  // namespace

CoordinatorLink::CoordinatorLink(net::Endpoint coordinator, std::string secret, LinkIdentity who)
    : StreamLink("the coordinator"), coordinator_(std::move(coordinator)), secret_(std::move(secret)), who_(std::move(who)) {}

StreamLink::~StreamLink() {
  if (wake_[0] >= 0) ::close(wake_[0]);
  if (wake_[1] >= 0) ::close(wake_[1]);
}

void StreamLink::write_all_blocking(const std::string& bytes, Clock::time_point deadline) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    pollfd p{fd_, POLLOUT, 0};
    if (::poll(&p, 1, ms_until(deadline)) <= 0) {
      if (Clock::now() >= deadline) throw LinkError("timed out writing to " + peer_);
      continue;
    }
    const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw LinkError("write to " + peer_ + " failed: " + std::strerror(errno));
    }
    off += static_cast<std::size_t>(n);
  }
}

std::string StreamLink::read_one_blocking(Clock::time_point deadline) {
  char buf[8192];
  for (;;) {
    if (auto m = decoder_.next_body()) return *m;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, ms_until(deadline)) <= 0) {
      if (Clock::now() >= deadline) throw LinkError("timed out waiting for " + peer_);
      continue;
    }
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n == 0) throw LinkError(peer_ + " closed the connection");
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw LinkError("read from " + peer_ + " failed: " + std::strerror(errno));
    }
    decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
  }
}

void StreamLink::ready(double heartbeat_s) {
  decoder_.set_max_frame(proto::kDefaultMaxFrame);
  last_heard_ = Clock::now();
  heartbeat_s_ = heartbeat_s > 0 ? heartbeat_s : 2.0;
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw LinkError("pipe failed");
}

void CoordinatorLink::connect(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string why;
  std::mt19937 jitter(static_cast<unsigned>(who_.rank) * 7919u + static_cast<unsigned>(::getpid()));
  for (;;) {
    fd_ = try_connect(coordinator_, deadline, why);
    if (fd_ >= 0) {
      // A coordinator that closes before its challenge is shedding a burst of connections (it
      // caps peers that have not authenticated yet): come back a little later, not never.
      try {
        handshake();
        return;
      } catch (const Refused& e) {
        why = e.what();
        ::close(fd_);
        fd_ = -1;
        decoder_ = proto::FrameDecoder();
      }
    }
    if (Clock::now() + std::chrono::milliseconds(250) >= deadline)
      throw LinkError("cannot reach the coordinator at " + coordinator_.str() + ": " + why);
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + jitter() % 400));
  }
}

proto::Hello CoordinatorLink::hello() const {
  proto::Hello h;
  h.ranks = who_.ranks.empty() ? std::vector<int>{who_.rank} : who_.ranks;
  h.rank_info = who_.rank_info;
  h.world_size = who_.world_size;
  h.host = who_.host;
  h.info = who_.info;
  h.client_nonce = auth::random_hex(32);
  return h;
}

void CoordinatorLink::handshake() {
  const auto hs_deadline = Clock::now() + std::chrono::seconds(15);
  decoder_.set_max_frame(proto::kPreAuthMaxFrame);
  std::string challenge;
  try {
    challenge = read_one_blocking(hs_deadline);
  } catch (const LinkError& e) {
    throw Refused(std::string("closed before its challenge: ") + e.what());
  }
  auto first = proto::parse_body(challenge);
  if (proto::type_of(first) == proto::MsgType::Error) {
    auto e = proto::unwrap<proto::Error>(first);
    throw LinkError("the coordinator refused us: " + e.message);
  }
  auto ch = proto::unwrap<proto::Challenge>(first);
  if (ch.version != proto::kProtocolVersion)
    throw LinkError("the coordinator speaks protocol " + std::to_string(ch.version) + ", this worker " +
                    std::to_string(proto::kProtocolVersion));
  const proto::Hello h = hello();
  std::string sealed;
  try {
    sealed = proto::seal_hello(secret_, ch.nonce, h);
  } catch (const proto::ProtocolError& e) {
    throw LinkError("the hello for " + std::to_string(h.ranks.size()) + " ranks does not fit its frame (" + e.what() +
                    "); try --node-relay off");
  }
  write_all_blocking(sealed, hs_deadline);
  const auto reply = read_one_blocking(hs_deadline);
  proto::Welcome w;
  try {
    w = proto::open_welcome(secret_, ch.nonce, h.client_nonce, reply);
  } catch (const proto::AuthFailure&) {
    // An unauthenticated refusal is only a hint, but it is the likely reason: say what it says.
    std::string said;
    try {
      auto e = proto::unwrap<proto::Error>(proto::parse_body(reply));
      said = " (it said " + e.code + ": " + printable(e.message) + ")";
    } catch (const std::exception&) {
    }
    throw LinkError("the coordinator at " + coordinator_.str() + " did not prove it knows the campaign secret" + said);
  }
  channel_ = proto::Channel(secret_, ch.nonce, h.client_nonce, proto::Channel::Side::Worker);
  run_id_ = w.run_id;
  names_ = w.ranks;
  if (!names_.empty()) {
    if (names_.size() != h.ranks.size()) throw LinkError("the coordinator's welcome names " + std::to_string(names_.size()) +
                                                         " ranks for a hello of " + std::to_string(h.ranks.size()));
    campaign_rank_ = names_.front();
  }
  welcome_heartbeat_s_ = w.heartbeat_s > 0 ? w.heartbeat_s : 2.0;
  ready(welcome_heartbeat_s_);
}

void StreamLink::start() { thread_ = std::thread([this] { io_loop(); }); }

void StreamLink::fail(const std::string& why) {
  {
    std::lock_guard lk(mu_);
    if (close_reason_.empty()) close_reason_ = why;
  }
  closed_ = true;
  cv_.notify_all();
  if (notify_fd_ >= 0) (void)!::write(notify_fd_, "x", 1);
}

void StreamLink::wake() const {
  if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
}

void StreamLink::io_loop() {
  // Frames that arrived together with the welcome are already in the decoder.
  try {
    while (auto b = decoder_.next_body()) take(open(*b));
  } catch (const std::exception& e) {
    fail("bad message from " + peer_ + ": " + e.what());
    return;
  }
  auto next_beat = Clock::now();
  std::string pending;  // bytes of the frames being written
  while (!stopping_)
    if (!pump_once(pending, next_beat)) return;
  flush_at_close(pending);
}

// One turn of the I/O thread: a heartbeat when due, what is queued, what arrived. False once the
// stream has failed.
bool StreamLink::pump_once(std::string& pending, Clock::time_point& next_beat) {
  if (Clock::now() >= next_beat) {
    proto::Heartbeat beat{std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(), {}};
    if (progress_) beat.progress = progress_();
    std::lock_guard lk(mu_);
    outbox_.push_back(seal(proto::wrap(beat)));
    next_beat = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(heartbeat_s_));
  }
  if (pending.empty()) {
    std::lock_guard lk(mu_);
    seal_records_locked();
    while (!outbox_.empty() && pending.size() < (1u << 20)) {
      pending += outbox_.front();
      outbox_.pop_front();
    }
  }
  pollfd p[2] = {{fd_, static_cast<short>(POLLIN | (pending.empty() ? 0 : POLLOUT)), 0}, {wake_[0], POLLIN, 0}};
  const int rc = ::poll(p, 2, 200);
  if (rc < 0 && errno != EINTR) {
    fail(std::string("poll failed: ") + std::strerror(errno));
    return false;
  }
  if (p[1].revents & POLLIN) {
    char drain[64];
    while (::read(wake_[0], drain, sizeof drain) > 0) {
    }
  }
  if (!pending.empty() && (p[0].revents & POLLOUT)) {
    const ssize_t n = ::send(fd_, pending.data(), pending.size(), MSG_NOSIGNAL);
    if (n > 0) pending.erase(0, static_cast<std::size_t>(n));
    else if (n < 0 && errno != EAGAIN && errno != EINTR) {
      fail("write to " + peer_ + " failed: " + std::strerror(errno));
      return false;
    }
  }
  return !(p[0].revents & (POLLIN | POLLHUP | POLLERR)) || read_some();
}

bool StreamLink::read_some() {
  char buf[16384];
  const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
  if (n == 0) {
    fail(peer_ + " closed the connection");
    return false;
  }
  if (n < 0 && errno != EAGAIN && errno != EINTR) {
    fail("read from " + peer_ + " failed: " + std::strerror(errno));
    return false;
  }
  if (n <= 0) return true;
  try {
    decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    last_heard_ = Clock::now();
    while (auto b = decoder_.next_body()) take(open(*b));
  } catch (const std::exception& e) {
    fail("bad message from " + peer_ + ": " + e.what());
    return false;
  }
  return true;
}

// Flush what is left before closing (best effort, bounded).
void StreamLink::flush_at_close(std::string& pending) {
  const auto until = Clock::now() + std::chrono::seconds(5);
  {
    std::lock_guard lk(mu_);
    seal_records_locked();
    while (!outbox_.empty()) {
      pending += outbox_.front();
      outbox_.pop_front();
    }
  }
  while (!pending.empty() && Clock::now() < until) {
    pollfd p{fd_, POLLOUT, 0};
    if (::poll(&p, 1, 100) > 0) {
      const ssize_t n = ::send(fd_, pending.data(), pending.size(), MSG_NOSIGNAL);
      if (n > 0) pending.erase(0, static_cast<std::size_t>(n));
      else if (n < 0 && errno != EAGAIN) break;
    }
  }
}

std::optional<nlohmann::json> StreamLink::next_command(Clock::time_point deadline) {
  std::unique_lock lk(mu_);
  cv_.wait_until(lk, deadline, [&] { return !inbox_.empty() || closed_; });
  if (inbox_.empty()) return std::nullopt;
  auto m = std::move(inbox_.front());
  inbox_.pop_front();
  return m;
}

void StreamLink::take(nlohmann::json m) {
  const auto t = proto::type_of(m);
  if (t == proto::MsgType::Heartbeat) return;  // it only proves the peer is alive
  {
    std::lock_guard lk(mu_);
    if (t == proto::MsgType::Ack) {
      // An ack covers every record up to its seq.
      const auto seq = proto::unwrap<proto::Ack>(m).seq;
      if (seq > acked_) acked_ = seq;
    } else {
      if (t == proto::MsgType::Error) close_reason_ = "coordinator error: " + printable(m.value("message", std::string("?")));
      inbox_.push_back(std::move(m));
    }
  }
  cv_.notify_all();
  if (notify_fd_ >= 0) (void)!::write(notify_fd_, "x", 1);
}

void StreamLink::send(const nlohmann::json& msg) {
  {
    std::lock_guard lk(mu_);  // sealing advances the sequence: frames must queue in that order
    seal_records_locked();    // records queued before this message go before it
    outbox_.push_back(seal(msg));
  }
  wake();
}

// Records queued since the last frame leave as batches: one frame, one MAC, one ack for many.
void StreamLink::seal_records_locked() {
  constexpr std::size_t kBatchBytes = 256 * 1024;
  std::vector<std::string> batch;
  std::size_t bytes = 0;
  std::uint64_t seq = records_first_seq_;
  const auto flush = [&] {
    outbox_.push_back(seal_text(proto::encode_records(seq - 1, batch)));
    batch.clear();
    bytes = 0;
  };
  for (auto& line : records_) {
    if (!batch.empty() && (bytes + line.size() > kBatchBytes || batch.size() >= 4096)) flush();
    bytes += line.size() + 1;
    batch.push_back(std::move(line));
    ++seq;
  }
  if (!batch.empty()) flush();
  records_.clear();
  records_first_seq_ = seq;
}

std::uint64_t StreamLink::send_record_line(std::string line) {
  std::uint64_t seq = 0;
  {
    std::lock_guard lk(mu_);
    seq = ++seq_;
    if (records_.empty()) records_first_seq_ = seq;
    records_.push_back(std::move(line));
  }
  wake();
  return seq;
}

bool StreamLink::wait_acked_to(std::uint64_t seq, Clock::time_point deadline) {
  std::unique_lock lk(mu_);
  return cv_.wait_until(lk, deadline, [&] { return acked_ >= seq || closed_; }) && acked_ >= seq;
}

void StreamLink::close() {
  stopping_ = true;
  wake();
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    fd_ = -1;
  }
  closed_ = true;
  cv_.notify_all();
}

std::string StreamLink::close_reason() const {
  std::lock_guard lk(mu_);
  return close_reason_;
}

}  // namespace kiln::worker
