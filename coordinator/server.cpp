#include "coordinator/server.hpp"

#include <boost/asio.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include <deque>
#include <map>

#include "common/auth.hpp"

namespace kiln::coord {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

struct Session : std::enable_shared_from_this<Session> {
  Session(tcp::socket s, SessionId id) : socket(std::move(s)), write_signal(socket.get_executor()), id(id) {
    write_signal.expires_at(Clock::time_point::max());
    boost::system::error_code ec;
    auto ep = socket.remote_endpoint(ec);
    peer = ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  void queue(std::string frame) {
    outbox.push_back(std::move(frame));
    write_signal.cancel_one();
  }
  void shut(const std::string& why) {
    if (closed) return;
    closed = true;
    close_reason = why;
    boost::system::error_code ec;
    socket.shutdown(tcp::socket::shutdown_both, ec);
    socket.close(ec);
    write_signal.cancel();
  }

  tcp::socket socket;
  asio::steady_timer write_signal;
  std::deque<std::string> outbox;
  SessionId id;
  std::string peer;
  int rank = -1;
  bool authed = false;
  bool closed = false;
  bool close_after_flush = false;
  std::string close_reason;
  Clock::time_point last_heard = Clock::now();
};

}  // namespace

struct ResultServer::Impl {
  Impl(ServerOptions o, EventQueue& q) : opts(std::move(o)), events(q), acceptor(io) {}

  ServerOptions opts;
  EventQueue& events;
  asio::io_context io;
  tcp::acceptor acceptor;
  std::thread thread;
  std::map<SessionId, std::shared_ptr<Session>> sessions;
  std::map<int, SessionId> rank_owner;
  SessionId next_id = 1;

  awaitable<void> accept_loop() {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket sock = co_await acceptor.async_accept(asio::redirect_error(use_awaitable, ec));
      if (ec) {
        if (ec == asio::error::operation_aborted) co_return;
        spdlog::warn("accept failed: {}", ec.message());
        continue;
      }
      sock.set_option(tcp::no_delay(true), ec);
      auto s = std::make_shared<Session>(std::move(sock), next_id++);
      sessions[s->id] = s;
      asio::co_spawn(io, reader(s), asio::detached);
      asio::co_spawn(io, writer(s), asio::detached);
      asio::co_spawn(io, watchdog(s), asio::detached);
    }
  }

  void send_msg(const std::shared_ptr<Session>& s, const nlohmann::json& msg) {
    s->queue(proto::encode_frame(msg, opts.max_frame));
  }

  // Refuses a peer: one error frame, then close. Logged, and reported as Rejected.
  void reject(const std::shared_ptr<Session>& s, const std::string& code, const std::string& why) {
    spdlog::warn("closing connection from {}: {}", s->peer, why);
    events.push(Event{Event::Kind::Rejected, s->id, s->rank, {}, {}, why, s->peer});
    try {
      send_msg(s, proto::wrap(proto::Error{code, why}));
      s->close_after_flush = true;
      s->write_signal.cancel_one();
    } catch (...) {
      s->shut(why);
    }
  }

  void drop(const std::shared_ptr<Session>& s, const std::string& why) {
    if (s->closed) return;
    if (s->authed) {
      events.push(Event{Event::Kind::Left, s->id, s->rank, {}, {}, why, s->peer});
      auto it = rank_owner.find(s->rank);
      if (it != rank_owner.end() && it->second == s->id) rank_owner.erase(it);
    }
    s->shut(why);
    sessions.erase(s->id);
  }

  awaitable<void> writer(std::shared_ptr<Session> s) {
    while (!s->closed) {
      if (s->outbox.empty()) {
        if (s->close_after_flush) {
          drop(s, s->close_reason.empty() ? "closed after error" : s->close_reason);
          co_return;
        }
        boost::system::error_code ec;
        co_await s->write_signal.async_wait(asio::redirect_error(use_awaitable, ec));
        continue;
      }
      boost::system::error_code ec;
      co_await asio::async_write(s->socket, asio::buffer(s->outbox.front()),
                                 asio::redirect_error(use_awaitable, ec));
      if (ec) {
        drop(s, "write failed: " + ec.message());
        co_return;
      }
      s->outbox.pop_front();
    }
  }

  awaitable<void> watchdog(std::shared_ptr<Session> s) {
    const auto started = Clock::now();
    asio::steady_timer t(io);
    while (!s->closed) {
      t.expires_after(std::chrono::milliseconds(250));
      boost::system::error_code ec;
      co_await t.async_wait(asio::redirect_error(use_awaitable, ec));
      const auto now = Clock::now();
      if (!s->authed && now - started > std::chrono::duration<double>(opts.handshake_timeout_s)) {
        spdlog::warn("closing connection from {}: no valid hello within {:.0f} s", s->peer, opts.handshake_timeout_s);
        events.push(Event{Event::Kind::Rejected, s->id, -1, {}, {}, "handshake timeout", s->peer});
        drop(s, "handshake timeout");
      } else if (s->authed && now - s->last_heard > std::chrono::duration<double>(opts.idle_timeout_s)) {
        drop(s, "no heartbeat for " + std::to_string(static_cast<int>(opts.idle_timeout_s)) + " s");
      }
    }
  }

  void handle_hello(const std::shared_ptr<Session>& s, const nlohmann::json& j, const std::string& nonce) {
    proto::Hello h;
    try {
      h = proto::unwrap<proto::Hello>(j);
    } catch (const std::exception& e) {
      reject(s, "bad_message", e.what());
      return;
    }
    if (h.version != proto::kProtocolVersion) {
      reject(s, "version_mismatch", "protocol version " + std::to_string(h.version) + " (coordinator speaks " +
                                        std::to_string(proto::kProtocolVersion) + ")");
      return;
    }
    const auto expect = auth::hello_mac(opts.secret, nonce, h.client_nonce, h.rank);
    if (!auth::equal_constant_time(expect, h.mac)) {
      reject(s, "auth_failed", "authentication failed for rank " + std::to_string(h.rank) + " (wrong secret)");
      return;
    }
    if (h.rank < 0 || h.rank >= opts.world_size) {
      reject(s, "bad_rank", "rank " + std::to_string(h.rank) + " outside 0.." + std::to_string(opts.world_size - 1));
      return;
    }
    if (rank_owner.count(h.rank)) {
      reject(s, "duplicate_rank", "rank " + std::to_string(h.rank) + " is already connected");
      return;
    }
    s->authed = true;
    s->rank = h.rank;
    rank_owner[h.rank] = s->id;
    send_msg(s, proto::wrap(proto::Welcome{opts.run_id, auth::welcome_mac(opts.secret, nonce, h.client_nonce),
                                           opts.heartbeat_s}));
    events.push(Event{Event::Kind::Joined, s->id, h.rank, h, {}, {}, s->peer});
  }

  awaitable<void> reader(std::shared_ptr<Session> s) {
    proto::FrameDecoder dec(opts.max_frame);
    const std::string nonce = auth::random_hex(32);
    send_msg(s, proto::wrap(proto::Challenge{proto::kProtocolVersion, nonce}));
    std::array<char, 64 * 1024> buf{};
    while (!s->closed) {
      boost::system::error_code ec;
      const std::size_t n = co_await s->socket.async_read_some(asio::buffer(buf), asio::redirect_error(use_awaitable, ec));
      if (ec) {
        if (s->closed) co_return;
        if (dec.buffered() > 0)
          spdlog::warn("connection from {} (rank {}) ended inside a frame ({} bytes pending)", s->peer, s->rank,
                       dec.buffered());
        drop(s, ec == asio::error::eof ? (dec.buffered() ? "truncated frame" : "peer closed the connection")
                                       : "read failed: " + ec.message());
        co_return;
      }
      s->last_heard = Clock::now();
      try {
        dec.feed(std::string_view(buf.data(), n));
        while (auto msg = dec.next()) {
          if (s->close_after_flush) break;
          if (!s->authed) {
            handle_hello(s, *msg, nonce);
            continue;
          }
          events.push(Event{Event::Kind::Message, s->id, s->rank, {}, proto::decode_worker_message(*msg), {}, s->peer});
        }
      } catch (const std::exception& e) {
        // The stream cannot be resynchronised after a bad frame: this connection ends, no other.
        if (!s->authed) {
          reject(s, "bad_message", e.what());
        } else {
          spdlog::warn("closing connection from {} (rank {}): {}", s->peer, s->rank, e.what());
          events.push(Event{Event::Kind::Rejected, s->id, s->rank, {}, {}, e.what(), s->peer});
          drop(s, e.what());
        }
        co_return;
      }
    }
  }

  std::shared_ptr<Session> find(SessionId id) {
    auto it = sessions.find(id);
    return it == sessions.end() ? nullptr : it->second;
  }
};

ResultServer::ResultServer(ServerOptions opts, EventQueue& events)
    : impl_(std::make_unique<Impl>(std::move(opts), events)) {}

ResultServer::~ResultServer() { stop(); }

void ResultServer::start() {
  auto& im = *impl_;
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(im.opts.listen.host, ec);
  if (ec) throw std::runtime_error("cannot listen on '" + im.opts.listen.host + "': not an IP address");
  tcp::endpoint ep(addr, im.opts.listen.port);
  im.acceptor.open(ep.protocol(), ec);
  if (!ec) im.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) im.acceptor.bind(ep, ec);
  if (!ec) im.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw std::runtime_error("cannot listen on " + im.opts.listen.str() + ": " + ec.message());
  asio::co_spawn(im.io, im.accept_loop(), asio::detached);
  im.thread = std::thread([&im] { im.io.run(); });
}

void ResultServer::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  asio::post(impl_->io, [im = impl_.get()] {
    boost::system::error_code ec;
    im->acceptor.close(ec);
    for (auto& [id, s] : im->sessions) s->shut("coordinator stopping");
    im->sessions.clear();
    im->io.stop();
  });
  impl_->thread.join();
}

net::Endpoint ResultServer::local_endpoint() const {
  auto ep = impl_->acceptor.local_endpoint();
  return {ep.address().to_string(), ep.port()};
}

void ResultServer::send(SessionId id, nlohmann::json msg) {
  asio::post(impl_->io, [im = impl_.get(), id, m = std::move(msg)] {
    if (auto s = im->find(id); s && !s->closed) im->send_msg(s, m);
  });
}

void ResultServer::ack(SessionId id, std::uint64_t seq) { send(id, proto::wrap(proto::Ack{seq})); }

void ResultServer::close(SessionId id, const std::string& reason) {
  asio::post(impl_->io, [im = impl_.get(), id, reason] {
    if (auto s = im->find(id)) im->drop(s, reason);
  });
}

}  // namespace kiln::coord
