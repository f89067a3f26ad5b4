#include "coordinator/server.hpp"

#include <boost/asio.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <deque>
#include <map>

#include <sys/resource.h>

#include "common/auth.hpp"
#include "common/channel.hpp"
#include "common/text.hpp"

namespace kiln::coord {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

using DecodeStrand = asio::strand<asio::thread_pool::executor_type>;

struct Session : std::enable_shared_from_this<Session> {
  Session(tcp::socket s, SessionId id, DecodeStrand strand)
      : socket(std::move(s)), write_signal(socket.get_executor()), strand(std::move(strand)), id(id) {
    write_signal.expires_at(Clock::time_point::max());
    boost::system::error_code ec;
    auto ep = socket.remote_endpoint(ec);
    ip = ec ? "?" : ep.address().to_string();
    peer = ec ? "?" : ip + ":" + std::to_string(ep.port());
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
  // "rank 3", or "ranks 8-15" for a connection carrying a node's ranks, for log lines.
  std::string who() const {
    if (ranks.empty()) return "not authenticated";
    if (ranks.size() == 1) return "rank " + std::to_string(ranks.front());
    return "ranks " + std::to_string(ranks.front()) + ".." + std::to_string(ranks.back());
  }

  tcp::socket socket;
  asio::steady_timer write_signal;
  // The session's frames are decoded off the I/O thread, in order, on this strand of the decode
  // pool; its Left and Rejected events go through it too, so they follow its last message.
  DecodeStrand strand;
  std::atomic<bool> poisoned{false};  // a frame failed to decode: drop the rest
  std::deque<std::string> outbox;
  SessionId id;
  std::string peer;
  std::vector<int> ranks;    // what the hello named, once it verified
  std::string ip;            // the peer's address, for the per-address cap
  std::string nonce;         // our challenge
  proto::Channel channel;    // set once the hello verified
  bool authed = false;
  bool closed = false;
  bool close_after_flush = false;
  std::string close_reason;
  Clock::time_point started = Clock::now();
  Clock::time_point last_heard = Clock::now();
  Clock::time_point next_beat = Clock::now();
};

}  // namespace

struct ResultServer::Impl {
  Impl(ServerOptions o, EventQueue& q) : opts(std::move(o)), events(q), acceptor(io), room_signal(io) {
    room_signal.expires_at(Clock::time_point::max());
    events.on_room([this] { asio::post(io, [this] { room_signal.cancel(); }); });
  }

  ServerOptions opts;
  EventQueue& events;
  asio::io_context io;
  tcp::acceptor acceptor;
  asio::steady_timer room_signal;  // readers paused on a full event queue wait on it
  asio::thread_pool decoders{2};
  // Bytes of frames handed to the decode pool and not decoded yet: bounded like the event queue.
  static constexpr std::size_t kMaxDecodingBytes = 8u << 20;
  std::atomic<std::size_t> decoding{0};
  std::array<char, 64 * 1024> read_buf{};
  std::thread thread;
  std::map<SessionId, std::shared_ptr<Session>> sessions;
  std::map<int, SessionId> rank_owner;
  ResultServer::RankPlaces places;  // empty: a hello's ranks are the campaign's (rename_ranks)
  std::map<std::string, int> unauthed_by_ip;
  int unauthed = 0;
  SessionId next_id = 1;
  bool stopped = false;
  RateLimitedLog accept_log{std::chrono::seconds(5)};
  RateLimitedLog refuse_log{std::chrono::seconds(5)};

  // Out of descriptors: wait and try again, with one log line per few seconds, instead of
  // spinning on accept (which logged millions of lines at full CPU).
  awaitable<void> back_off(std::chrono::milliseconds& delay, const boost::system::error_code& ec) {
    if (auto n = accept_log.tick())
      spdlog::warn("accept failed: {} ({} time(s)); backing off {} ms", ec.message(), n, delay.count());
    asio::steady_timer t(io);
    t.expires_after(delay);
    boost::system::error_code ignored;
    co_await t.async_wait(asio::redirect_error(use_awaitable, ignored));
    delay = std::min(delay * 2, std::chrono::milliseconds(1000));
  }

  // Whether a new connection may stay: the allocation's addresses only, and bounded numbers of
  // peers that have not authenticated yet.
  std::string refuse_reason(const Session& s) const {
    if (!opts.allowed_peers.empty() && !opts.allowed_peers.count(s.ip)) return "address not in the allocation";
    if (unauthed >= opts.max_unauthenticated) return "too many unauthenticated connections";
    auto it = unauthed_by_ip.find(s.ip);
    if (it != unauthed_by_ip.end() && it->second >= opts.max_unauthenticated_per_address)
      return "too many unauthenticated connections from this address";
    return "";
  }

  awaitable<void> accept_loop() {
    auto delay = std::chrono::milliseconds(50);
    for (;;) {
      boost::system::error_code ec;
      tcp::socket sock = co_await acceptor.async_accept(asio::redirect_error(use_awaitable, ec));
      if (ec == asio::error::operation_aborted) co_return;
      if (ec) {
        co_await back_off(delay, ec);
        continue;
      }
      delay = std::chrono::milliseconds(50);
      sock.set_option(tcp::no_delay(true), ec);
      auto s = std::make_shared<Session>(std::move(sock), next_id++, asio::make_strand(decoders));
      if (auto why = refuse_reason(*s); !why.empty()) {
        if (auto n = refuse_log.tick()) spdlog::warn("refusing connection from {}: {} ({} time(s))", s->peer, why, n);
        events.push(Event{Event::Kind::Rejected, s->id, {}, {}, why, s->peer});
        s->shut(why);
        continue;
      }
      ++unauthed;
      ++unauthed_by_ip[s->ip];
      sessions[s->id] = s;
      asio::co_spawn(io, reader(s), asio::detached);
      asio::co_spawn(io, writer(s), asio::detached);
    }
  }

  void leave_unauthed(Session& s) {
    if (s.authed || s.closed) return;
    --unauthed;
    if (--unauthed_by_ip[s.ip] <= 0) unauthed_by_ip.erase(s.ip);
  }

  void send_msg(const std::shared_ptr<Session>& s, const nlohmann::json& msg) {
    s->queue(s->channel.ready() ? s->channel.seal(msg, opts.max_frame) : proto::encode_frame(msg, opts.max_frame));
  }

  // Refuses a peer: one error frame, then close. Logged, and reported as Rejected.
  void reject(const std::shared_ptr<Session>& s, const std::string& code, const std::string& why) {
    spdlog::warn("closing connection from {}: {}", s->peer, printable(why));
    events.push(Event{Event::Kind::Rejected, s->id, {}, {}, why, s->peer});
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
    leave_unauthed(*s);
    if (s->authed) {
      asio::post(s->strand, [this, id = s->id, why, peer = s->peer] { events.push(Event{Event::Kind::Left, id, {}, {}, why, peer}); });
      for (int r : s->ranks)
        if (auto it = rank_owner.find(r); it != rank_owner.end() && it->second == s->id) rank_owner.erase(it);
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

  // Deadlines of every session, from one timer (a timer per session cost a core at 10,000
  // connections): the handshake, the peer's silence, and our own heartbeat, which lets a worker
  // notice a coordinator that is gone (its watchdog).
  awaitable<void> sweep_loop() {
    asio::steady_timer t(io);
    const auto beat = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts.heartbeat_s));
    for (;;) {
      t.expires_after(std::chrono::milliseconds(250));
      boost::system::error_code ec;
      co_await t.async_wait(asio::redirect_error(use_awaitable, ec));
      if (ec == asio::error::operation_aborted || stopped) co_return;
      const auto now = Clock::now();
      std::vector<std::shared_ptr<Session>> late;
      for (auto& [id, s] : sessions) {
        if (s->closed) continue;
        if (!s->authed ? now - s->started > std::chrono::duration<double>(opts.handshake_timeout_s)
                       : now - s->last_heard > std::chrono::duration<double>(opts.idle_timeout_s)) {
          late.push_back(s);
        } else if (s->authed && now >= s->next_beat && !s->close_after_flush) {
          send_msg(s, proto::wrap(proto::Heartbeat{0.0}));
          s->next_beat = now + beat;
        }
      }
      for (auto& s : late) {
        if (!s->authed) {
          spdlog::warn("closing connection from {}: no valid hello within {:.0f} s", s->peer, opts.handshake_timeout_s);
          events.push(Event{Event::Kind::Rejected, s->id, {}, {}, "handshake timeout", s->peer});
          drop(s, "handshake timeout");
        } else {
          drop(s, "no heartbeat for " + std::to_string(static_cast<int>(opts.idle_timeout_s)) + " s");
        }
      }
    }
  }

  // The hello's MAC is checked over its exact bytes before any of its JSON is parsed.
  void handle_hello(const std::shared_ptr<Session>& s, const std::string& body) {
    proto::Hello h;
    try {
      h = proto::open_hello(opts.secret, s->nonce, body);
    } catch (const proto::AuthFailure&) {
      reject(s, "auth_failed", "authentication failed (wrong secret)");
      return;
    } catch (const std::exception& e) {
      reject(s, "bad_message", e.what());
      return;
    }
    if (h.version != proto::kProtocolVersion) {
      reject(s, "version_mismatch", "protocol version " + std::to_string(h.version) + " (coordinator speaks " +
                                        std::to_string(proto::kProtocolVersion) + ")");
      return;
    }
    std::vector<int> renamed;
    if (!places.empty()) {
      for (std::size_t i = 0; i < h.ranks.size(); ++i) {
        const int local = h.info_of(i).local_rank;
        const auto it = places.find({h.host, local});
        if (it == places.end()) {
          reject(s, "bad_rank", "no rank of this campaign ran on " + printable(h.host) + " as local rank " +
                                    std::to_string(local) + " before the workers restarted");
          return;
        }
        renamed.push_back(it->second);
      }
      for (std::size_t i = 0; i < h.ranks.size(); ++i) {
        h.ranks[i] = renamed[i];
        if (h.rank_info.empty()) h.info.world_rank = renamed[i];
        else h.rank_info[i].world_rank = renamed[i];
      }
    }
    for (int r : h.ranks) {
      if (r < 0 || r >= opts.world_size) {
        reject(s, "bad_rank", "rank " + std::to_string(r) + " outside 0.." + std::to_string(opts.world_size - 1));
        return;
      }
      if (rank_owner.count(r)) {
        reject(s, "duplicate_rank", "rank " + std::to_string(r) + " is already connected");
        return;
      }
    }
    // A node may call itself by its full name where SLURM uses the short one.
    if (!opts.allowed_hosts.empty() && !opts.allowed_hosts.count(h.host) &&
        !opts.allowed_hosts.count(h.host.substr(0, h.host.find('.')))) {
      reject(s, "bad_host", "host '" + h.host + "' is not a node of this campaign");
      return;
    }
    leave_unauthed(*s);
    s->authed = true;
    s->ranks = h.ranks;
    std::sort(s->ranks.begin(), s->ranks.end());
    for (int r : h.ranks) rank_owner[r] = s->id;
    s->queue(proto::seal_welcome(opts.secret, s->nonce, h.client_nonce, proto::Welcome{opts.run_id, opts.heartbeat_s, renamed}));
    s->channel = proto::Channel(opts.secret, s->nonce, h.client_nonce, proto::Channel::Side::Coordinator);
    s->next_beat = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts.heartbeat_s));
    events.push(Event{Event::Kind::Joined, s->id, std::move(h), {}, {}, s->peer});
  }

  // While the campaign thread has a full queue, read nothing more: the socket's buffers fill and
  // TCP slows the worker down, instead of this process buffering without bound.
  bool no_room() const { return events.full() || decoding.load() > kMaxDecodingBytes; }

  awaitable<void> wait_for_room(const std::shared_ptr<Session>& s) {
    while (no_room() && !s->closed && !stopped) {
      // Woken when the campaign thread makes room (EventQueue::on_room), or after 100 ms at most.
      if (room_signal.expiry() == Clock::time_point::max() || room_signal.expiry() < Clock::now())
        room_signal.expires_after(std::chrono::milliseconds(100));
      boost::system::error_code ec;
      co_await room_signal.async_wait(asio::redirect_error(use_awaitable, ec));
    }
  }

  // An authenticated peer sent a frame that fails its MAC or does not decode: nothing more of it is
  // taken, the campaign hears of it (Rejected, after the messages already decoded, then Left), and
  // the connection ends. On the I/O thread.
  void close_bad(const std::shared_ptr<Session>& s, const std::string& why) {
    if (s->closed) return;
    spdlog::warn("closing connection from {} ({}): {}", s->peer, s->who(), printable(why));
    s->poisoned = true;
    asio::post(s->strand, [this, id = s->id, why, peer = s->peer] {
      events.push(Event{Event::Kind::Rejected, id, {}, {}, why, peer});
    });
    drop(s, why);
  }

  // An authenticated frame, MAC already checked here (sequence numbers are checked in arrival
  // order), is decoded on the session's strand of the decode pool: JSON parsing is most of the
  // coordinator's work per record, and one I/O thread could not keep up with it alone.
  void decode_later(const std::shared_ptr<Session>& s, std::string body) {
    const std::size_t bytes = body.size();
    decoding.fetch_add(bytes);
    asio::post(s->strand, [this, s, bytes, body = std::move(body)] {
      if (!s->poisoned) {
        try {
          auto msg = proto::decode_worker_payload(std::string_view(body).substr(proto::kMacSize));
          // A heartbeat only proves the peer alive, which reading it did (last_heard): the
          // campaign thread is woken for it only when it carries the ranks' progress.
          const auto* beat = std::get_if<proto::Heartbeat>(&msg);
          if (!beat || !beat->progress.empty())
            events.push(Event{Event::Kind::Message, s->id, {}, std::move(msg), {}, s->peer});
        } catch (const std::exception& e) {
          s->poisoned = true;  // now: frames already queued behind this one are dropped
          asio::post(io, [this, s, why = std::string(e.what())] { close_bad(s, why); });
        }
      }
      const auto before = decoding.fetch_sub(bytes);
      if (before > kMaxDecodingBytes && before - bytes <= kMaxDecodingBytes) asio::post(io, [this] { room_signal.cancel(); });
    });
  }

  // Frames from one read: the hello before authentication, then authenticated frames.
  void take_frames(const std::shared_ptr<Session>& s, proto::FrameDecoder& dec) {
    while (auto body = dec.next_body()) {
      if (s->close_after_flush || s->closed) break;
      if (!s->authed) {
        handle_hello(s, *body);
        if (s->authed) dec.set_max_frame(opts.max_frame);
        continue;
      }
      s->channel.open_payload(*body);  // throws on a bad MAC
      decode_later(s, std::move(*body));
    }
  }

  awaitable<void> reader(std::shared_ptr<Session> s) {
    proto::FrameDecoder dec(proto::kPreAuthMaxFrame);
    s->nonce = auth::random_hex(32);
    send_msg(s, proto::wrap(proto::Challenge{proto::kProtocolVersion, s->nonce}));
    s->socket.non_blocking(true);
    while (!s->closed) {
      co_await wait_for_room(s);
      // Wait for data, then read it into the one buffer all sessions share: a buffer per
      // connection would cost 64 KiB x 12,500 node connections.
      boost::system::error_code ec;
      co_await s->socket.async_wait(tcp::socket::wait_read, asio::redirect_error(use_awaitable, ec));
      std::size_t n = 0;
      if (!ec) n = s->socket.read_some(asio::buffer(read_buf), ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) continue;
      if (ec) {
        if (s->closed) co_return;
        if (dec.buffered() > 0)
          spdlog::warn("connection from {} ({}) ended inside a frame ({} bytes pending)", s->peer, s->who(),
                       dec.buffered());
        drop(s, ec == asio::error::eof ? (dec.buffered() ? "truncated frame" : "peer closed the connection")
                                       : "read failed: " + ec.message());
        co_return;
      }
      s->last_heard = Clock::now();
      try {
        dec.feed(std::string_view(read_buf.data(), n));
        take_frames(s, dec);
      } catch (const std::exception& e) {
        // The stream cannot be resynchronised after a bad frame: this connection ends, no other.
        if (!s->authed) {
          reject(s, "bad_message", e.what());
        } else {
          close_bad(s, e.what());
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
  asio::co_spawn(im.io, im.sweep_loop(), asio::detached);
  im.thread = std::thread([&im] { im.io.run(); });
}

void ResultServer::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  asio::post(impl_->io, [im = impl_.get()] {
    boost::system::error_code ec;
    im->acceptor.close(ec);
    im->stopped = true;
    for (auto& [id, s] : im->sessions) s->shut("coordinator stopping");
    im->sessions.clear();
    im->io.stop();
  });
  impl_->thread.join();
  impl_->decoders.stop();
  impl_->decoders.join();
  impl_->events.on_room(nullptr);
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

void ResultServer::send_text(SessionId id, std::string payload) {
  asio::post(impl_->io, [im = impl_.get(), id, p = std::move(payload)] {
    if (auto s = im->find(id); s && !s->closed && s->channel.ready()) s->queue(s->channel.seal_text(p, im->opts.max_frame));
  });
}

void ResultServer::ack(SessionId id, std::uint64_t seq) { send(id, proto::wrap(proto::Ack{seq})); }

void ResultServer::rename_ranks(RankPlaces places) {
  asio::post(impl_->io, [im = impl_.get(), p = std::move(places)]() mutable { im->places = std::move(p); });
}

void ResultServer::close(SessionId id, const std::string& reason) {
  asio::post(impl_->io, [im = impl_.get(), id, reason] {
    if (auto s = im->find(id)) im->drop(s, reason);
  });
}

long raise_file_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return -1;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
    ::getrlimit(RLIMIT_NOFILE, &rl);
  }
  return static_cast<long>(rl.rlim_cur);
}

}  // namespace kiln::coord
