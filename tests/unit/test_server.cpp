// The coordinator's server against real sockets on loopback: a good worker keeps working while
// peers sending oversize frames, truncated frames, random bytes or a wrong secret are cut off.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <thread>

#include "common/auth.hpp"
#include "common/channel.hpp"
#include "common/protocol.hpp"
#include "coordinator/server.hpp"

using namespace kiln;
using namespace kiln::coord;
using Clock = std::chrono::steady_clock;

namespace {

struct Client {
  int fd = -1;
  proto::FrameDecoder dec;
  proto::Channel chan;
  std::string nonce, client_nonce;
  explicit Client(std::uint16_t port) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  }
  ~Client() { ::close(fd); }
  void send_raw(const std::string& b) { REQUIRE(::send(fd, b.data(), b.size(), MSG_NOSIGNAL) == (ssize_t)b.size()); }
  // Sealed with the session's MAC once authenticated, plain before.
  void send(const nlohmann::json& j) { send_raw(chan.ready() ? chan.seal(j) : proto::encode_frame(j)); }
  // Next message, or nullopt when the server closed the connection or 3 s passed.
  // Skips the server's heartbeats.
  std::optional<nlohmann::json> recv() {
    for (;;) {
      auto b = recv_body();
      if (!b) return std::nullopt;
      auto m = chan.ready() ? chan.open(*b) : proto::parse_body(*b);
      if (proto::type_of(m) != proto::MsgType::Heartbeat) return m;
    }
  }
  std::optional<std::string> recv_body() {
    const auto until = Clock::now() + std::chrono::seconds(3);
    char buf[4096];
    for (;;) {
      if (auto m = dec.next_body()) return m;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) {
        if (Clock::now() > until) return std::nullopt;
        continue;
      }
      const auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return std::nullopt;
      dec.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    }
  }
  // True when the server closes the connection within 3 s (skipping messages it sends first).
  bool closed_by_server() {
    const auto until = Clock::now() + std::chrono::seconds(3);
    char buf[4096];
    while (Clock::now() < until) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return true;
    }
    return false;
  }
  // Reads the challenge and sends a hello sealed with `secret`.
  proto::Hello hello(const std::string& secret, int rank, const std::string& host = "test") {
    return hello_ranks(secret, {rank}, host);
  }
  proto::Hello hello_ranks(const std::string& secret, std::vector<int> ranks, const std::string& host = "test",
                           std::vector<NodeInfo> rank_info = {}) {
    auto ch = recv();
    REQUIRE(ch);
    nonce = proto::unwrap<proto::Challenge>(*ch).nonce;
    proto::Hello h;
    h.ranks = std::move(ranks);
    h.rank_info = std::move(rank_info);
    h.world_size = 4;
    h.host = host;
    h.client_nonce = client_nonce = auth::random_hex(32);
    send_raw(proto::seal_hello(secret, nonce, h));
    return h;
  }
  void authenticate(const std::string& secret, int rank) { authenticate_ranks(secret, {rank}); }
  void authenticate_ranks(const std::string& secret, std::vector<int> ranks) {
    hello_ranks(secret, std::move(ranks));
    auto w = recv_body();
    REQUIRE(w);
    CHECK(proto::open_welcome(secret, nonce, client_nonce, *w).run_id == "t");
    chan = proto::Channel(secret, nonce, client_nonce, proto::Channel::Side::Worker);
  }
};

struct Fixture {
  EventQueue q;
  ServerOptions o;
  std::unique_ptr<ResultServer> srv;
  Fixture() {
    o.secret = "sekrit";
    o.run_id = "t";
    o.world_size = 4;
    o.max_frame = 64 * 1024;
    o.handshake_timeout_s = 2;
    srv = std::make_unique<ResultServer>(o, q);
    srv->start();
  }
  std::uint16_t port() const { return srv->local_endpoint().port; }
  std::vector<Event> drain(double seconds) {
    std::vector<Event> all;
    const auto until = Clock::now() + std::chrono::milliseconds(static_cast<int>(seconds * 1000));
    while (Clock::now() < until) {
      auto b = q.take_all(std::min(until, Clock::now() + std::chrono::milliseconds(50)));
      all.insert(all.end(), b.begin(), b.end());
    }
    return all;
  }
};

std::string result_line(int rank) {
  Result r;
  r.test = "t";
  r.host = "h";
  r.rank = rank;
  r.metric = "m";
  return proto::record_line(r);
}

// The good client sends a result and must get its ack, proving its connection is unaffected.
void good_client_still_works(Fixture& f, Client& good, std::uint64_t seq) {
  good.send_raw(good.chan.seal_text(proto::encode_records(seq, {result_line(0)})));
  SessionId sid = 0;
  for (auto& e : f.drain(0.5))
    if (e.kind == Event::Kind::Message) sid = e.session;
  REQUIRE(sid != 0);
  f.srv->ack(sid, seq);
  auto a = good.recv();
  REQUIRE(a);
  CHECK(proto::unwrap<proto::Ack>(*a).seq == seq);
}

}  // namespace

TEST_CASE("bad peers lose their own connection and nothing else", "[server]") {
  Fixture f;
  Client good(f.port());
  good.authenticate(f.o.secret, 0);
  f.drain(0.2);

  SECTION("a frame over the size limit") {
    Client bad(f.port());
    REQUIRE(bad.recv());  // challenge
    bad.send_raw(proto::encode_header(10u << 20));
    CHECK(bad.closed_by_server());
  }
  SECTION("an authenticated rank sending an oversize frame") {
    Client bad(f.port());
    bad.authenticate(f.o.secret, 1);
    bad.send_raw(proto::encode_header(1u << 30) + "xx");
    CHECK(bad.closed_by_server());
  }
  SECTION("a truncated frame then silence") {
    Client bad(f.port());
    REQUIRE(bad.recv());
    bad.send_raw(proto::encode_header(100) + "{\"type\":");
    CHECK(bad.closed_by_server());  // the handshake deadline ends it
  }
  SECTION("random bytes") {
    Client bad(f.port());
    std::mt19937 rng(42);
    std::string junk(4096, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    bad.send_raw(junk);
    CHECK(bad.closed_by_server());
  }
  SECTION("a wrong secret") {
    Client bad(f.port());
    bad.hello("guess", 2, "evil");
    auto reply = bad.recv();
    REQUIRE(reply);
    CHECK(proto::type_of(*reply) == proto::MsgType::Error);
    CHECK(proto::unwrap<proto::Error>(*reply).code == "auth_failed");
    CHECK(bad.closed_by_server());
  }
  SECTION("a rank outside the world, and a duplicate rank") {
    Client out(f.port());
    out.hello(f.o.secret, 9, "x");
    CHECK(proto::unwrap<proto::Error>(*out.recv()).code == "bad_rank");
    Client dup(f.port());
    dup.hello(f.o.secret, 0, "x");
    CHECK(proto::unwrap<proto::Error>(*dup.recv()).code == "duplicate_rank");
  }
  SECTION("a message a worker may not send") {
    Client bad(f.port());
    bad.authenticate(f.o.secret, 3);
    bad.send(proto::wrap(proto::Round{}));
    CHECK(bad.closed_by_server());
  }
  good_client_still_works(f, good, 11);
}

TEST_CASE("listening on a bad address is a clear error", "[server]") {
  EventQueue q;
  ServerOptions o;
  o.listen = {"not-an-ip", 0};
  ResultServer s(o, q);
  CHECK_THROWS_WITH(s.start(), Catch::Contains("not-an-ip"));
}

namespace {
long rss_kib() {
  long pages = 0, rss = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f) {
    if (std::fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
    std::fclose(f);
  }
  return rss * (::sysconf(_SC_PAGESIZE) / 1024);
}
double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}
}  // namespace

TEST_CASE("hostile peers before authentication cannot crash, flood or bloat the server", "[server][hostile]") {
  Fixture f;
  Client good(f.port());
  good.authenticate(f.o.secret, 0);
  f.drain(0.2);

  SECTION("a hello nested 300,000 deep with a wrong MAC is refused before it is parsed") {
    Client bad(f.port());
    REQUIRE(bad.recv());
    const std::string deep = std::string(300000, '[') + std::string(300000, ']');
    // Bigger than the 16 KiB allowed before authentication: refused from its header alone.
    bad.send_raw(proto::encode_header(static_cast<std::uint32_t>(32 + deep.size())) + std::string(32, 'x') + deep);
    CHECK(bad.closed_by_server());
  }
  SECTION("a small deep hello with a valid MAC is refused by the depth limit") {
    Client bad(f.port());
    bad.nonce = proto::unwrap<proto::Challenge>(*bad.recv()).nonce;
    const std::string deep = "{\"a\":" + std::string(5000, '[') + std::string(5000, ']') + "}";
    bad.send_raw(proto::encode_header(static_cast<std::uint32_t>(32 + deep.size())) +
                 proto::mac(f.o.secret, "hello|" + bad.nonce, deep) + deep);
    auto reply = bad.recv();
    REQUIRE(reply);
    CHECK(proto::unwrap<proto::Error>(*reply).message.find("deeper") != std::string::npos);
  }
  SECTION("a hello whose bytes were altered fails its MAC: the MAC covers every field") {
    Client bad(f.port());
    bad.nonce = proto::unwrap<proto::Challenge>(*bad.recv()).nonce;
    proto::Hello h;
    h.ranks = {1};
    h.world_size = 4;
    h.host = "nodeA";
    h.client_nonce = auth::random_hex(32);
    auto frame = proto::seal_hello(f.o.secret, bad.nonce, h);
    frame.replace(frame.find("nodeA"), 5, "nodeB");
    bad.send_raw(frame);
    CHECK(proto::unwrap<proto::Error>(*bad.recv()).code == "auth_failed");
  }
  SECTION("60 connections holding unfinished frames cost little memory") {
    const long before = rss_kib();
    std::vector<std::unique_ptr<Client>> holders;
    for (int i = 0; i < 60; ++i) {
      holders.push_back(std::make_unique<Client>(f.port()));
      holders.back()->send_raw(proto::encode_header(4u << 20) + std::string(8192, 'x'));
    }
    int closed = 0;
    for (auto& c : holders) closed += c->closed_by_server() ? 1 : 0;
    CHECK(closed == 60);  // a 4 MiB frame before authentication is refused from its header
    CHECK(rss_kib() - before < 8 * 1024);
  }
  good_client_still_works(f, good, 21);
}

TEST_CASE("unauthenticated connections are capped per address", "[server][hostile]") {
  EventQueue q;
  ServerOptions o;
  o.secret = "s";
  o.run_id = "t";
  o.world_size = 2;
  o.max_unauthenticated_per_address = 4;
  ResultServer srv(o, q);
  srv.start();
  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(std::make_unique<Client>(srv.local_endpoint().port));
    REQUIRE(idle.back()->recv());  // each gets its challenge
  }
  Client fifth(srv.local_endpoint().port);
  CHECK_FALSE(fifth.recv());  // closed at once, no challenge
  idle.clear();               // once they are gone, a worker gets in again
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Client ok(srv.local_endpoint().port);
  ok.authenticate("s", 1);
}

TEST_CASE("every frame after the handshake carries a MAC over its sequence", "[server][hostile]") {
  Fixture f;
  Client w(f.port());
  w.authenticate(f.o.secret, 0);
  proto::Heartbeat hb;
  SECTION("an altered frame") {
    auto frame = w.chan.seal(proto::wrap(proto::Bye{"abc"}));
    frame[frame.size() - 3] ^= 1;
    w.send_raw(frame);
    CHECK(w.closed_by_server());
  }
  SECTION("a replayed frame") {
    const auto frame = w.chan.seal(proto::wrap(hb));
    w.send_raw(frame);
    w.send_raw(frame);
    CHECK(w.closed_by_server());
  }
  SECTION("an injected frame without the session's MAC") {
    w.send_raw(proto::encode_frame(proto::wrap(hb)));
    CHECK(w.closed_by_server());
  }
  SECTION("frames in order are accepted") {
    for (int i = 0; i < 5; ++i) w.send(proto::wrap(hb));
    CHECK_FALSE(w.closed_by_server());
  }
}

TEST_CASE("out of descriptors, the server backs off instead of spinning", "[server][hostile]") {
  rlimit old{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &old) == 0);
  EventQueue q;
  ServerOptions o;
  o.secret = "s";
  o.run_id = "t";
  o.world_size = 2;
  o.max_unauthenticated_per_address = 1000;
  o.handshake_timeout_s = 30;
  ResultServer srv(o, q);
  srv.start();
  // Leave room for about 40 more descriptors: the clients below take them, then the server's
  // accepts fail with EMFILE while connections wait in the backlog.
  int highest = 0;
  for (int fd = 0; fd < 4096; ++fd)
    if (::fcntl(fd, F_GETFD) != -1) highest = fd;
  rlimit low = old;
  low.rlim_cur = static_cast<rlim_t>(highest + 40);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  std::vector<int> fds;
  for (int i = 0; i < 60; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(srv.local_endpoint().port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    fds.push_back(fd);
  }
  const double cpu0 = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double used = cpu_seconds() - cpu0;
  CHECK(used < 0.5);  // it spun at 100% of a core before
  for (int fd : fds) ::close(fd);
  ::setrlimit(RLIMIT_NOFILE, &old);
  Client ok(srv.local_endpoint().port);  // and recovers once descriptors are free
  ok.authenticate("s", 1);
}

TEST_CASE("one connection carries a node's ranks, and its records in batches", "[server]") {
  Fixture f;
  Client node(f.port());
  node.authenticate_ranks(f.o.secret, {1, 2, 3});
  Client dup(f.port());
  dup.hello(f.o.secret, 2, "x");  // rank 2 is already carried by the node's connection
  CHECK(proto::unwrap<proto::Error>(*dup.recv()).code == "duplicate_rank");
  node.send_raw(node.chan.seal_text(proto::encode_records(3, {result_line(1), result_line(2), result_line(3)})));
  std::vector<int> joined;
  std::size_t records = 0;
  SessionId sid = 0;
  for (auto& e : f.drain(0.5)) {
    if (e.kind == Event::Kind::Joined) joined = e.hello.ranks;
    if (e.kind == Event::Kind::Message) {
      records += std::get<proto::Records>(e.msg).records.size();
      sid = e.session;
    }
  }
  CHECK(joined == std::vector<int>{1, 2, 3});
  CHECK(records == 3);
  f.srv->ack(sid, 3);
  CHECK(proto::unwrap<proto::Ack>(*node.recv()).seq == 3);
  SECTION("a batch with one malformed record closes the connection and none of it is passed on") {
    node.send_raw(node.chan.seal_text(proto::encode_records(5, {result_line(1), R"({"record":"result","rank":"x"})"})));
    CHECK(node.closed_by_server());
    bool message = false, rejected = false;
    for (auto& e : f.drain(0.5)) {
      message |= e.kind == Event::Kind::Message;
      rejected |= e.kind == Event::Kind::Rejected;
    }
    CHECK_FALSE(message);
    CHECK(rejected);
  }
}

TEST_CASE("a campaign thread that falls behind slows the workers down instead of filling memory", "[server][load]") {
  Fixture f;
  Client node(f.port());
  node.authenticate_ranks(f.o.secret, {0});
  f.drain(0.2);
  // 700 batches of 300 records (about 30 MB) while nobody takes events.
  std::vector<std::string> lines(300, result_line(0));
  std::vector<std::string> frames;
  for (int b = 1; b <= 700; ++b) frames.push_back(node.chan.seal_text(proto::encode_records(b * 300ull, lines), 4u << 20));
  ::fcntl(node.fd, F_SETFL, ::fcntl(node.fd, F_GETFL) | O_NONBLOCK);
  std::size_t frame = 0, off = 0;
  const auto until = Clock::now() + std::chrono::seconds(3);
  while (frame < frames.size() && Clock::now() < until) {
    const auto n = ::send(node.fd, frames[frame].data() + off, frames[frame].size() - off, MSG_NOSIGNAL);
    if (n > 0 && (off += static_cast<std::size_t>(n)) == frames[frame].size()) ++frame, off = 0;
    if (n < 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // The server stopped reading near its mark: the rest waits in TCP buffers, on the worker's side.
  // Over the mark by at most what was being decoded when it was reached (8 MiB of frames).
  CHECK(f.q.held() <= EventQueue::kHighWater + (8u << 20) / lines[0].size() + 2000);
  CHECK(frame < frames.size());
  INFO("held " << f.q.held() << " records, " << frame << " of 700 frames sent");
  // Once the campaign thread takes events again, everything arrives, in order.
  std::uint64_t last = 0, got = 0;
  const auto end = Clock::now() + std::chrono::seconds(20);
  while (got < 210000 && Clock::now() < end) {
    for (; frame < frames.size();) {
      const auto n = ::send(node.fd, frames[frame].data() + off, frames[frame].size() - off, MSG_NOSIGNAL);
      if (n <= 0) break;
      if ((off += static_cast<std::size_t>(n)) == frames[frame].size()) ++frame, off = 0;
    }
    for (auto& e : f.q.take_all(Clock::now() + std::chrono::milliseconds(20)))
      if (e.kind == Event::Kind::Message) {
        const auto& b = std::get<proto::Records>(e.msg);
        CHECK(b.last_seq == last + 300);
        last = b.last_seq;
        got += b.records.size();
      }
  }
  CHECK(got == 210000);
}

TEST_CASE("after a restart that lost a node, ranks keep their campaign names by host and local rank", "[server][restart]") {
  Fixture f;
  // Before: node a had ranks 0,1 and node c ranks 2,3 (node b, between them, is gone). The new
  // step numbers c's ranks 0,1 and a's 2,3: each is named by its place.
  f.srv->rename_ranks({{{"a", 0}, 0}, {{"a", 1}, 1}, {{"c", 0}, 2}, {{"c", 1}, 3}});
  auto info = [](int local) {
    NodeInfo n;
    n.local_rank = local;
    return n;
  };
  Client c(f.port());
  c.hello_ranks(f.o.secret, {0, 1}, "c", {info(0), info(1)});
  auto w = c.recv_body();
  REQUIRE(w);
  const auto welcome = proto::open_welcome(f.o.secret, c.nonce, c.client_nonce, *w);
  CHECK(welcome.ranks == std::vector<int>{2, 3});
  std::vector<int> joined;
  for (auto& e : f.drain(0.3))
    if (e.kind == Event::Kind::Joined) joined = e.hello.ranks;
  CHECK(joined == std::vector<int>{2, 3});
  SECTION("a rank on a place the campaign never had is refused, and says why") {
    Client stranger(f.port());
    stranger.hello_ranks(f.o.secret, {2}, "b", {info(0)});
    const auto e = proto::unwrap<proto::Error>(*stranger.recv());
    CHECK(e.code == "bad_rank");
    CHECK(e.message.find("on b as local rank 0") != std::string::npos);
  }
  SECTION("a second hello for a place already back is a duplicate") {
    Client again(f.port());
    again.hello_ranks(f.o.secret, {3}, "c", {info(1)});
    CHECK(proto::unwrap<proto::Error>(*again.recv()).code == "duplicate_rank");
  }
}
