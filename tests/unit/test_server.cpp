// The coordinator's server against real sockets on loopback: a good worker keeps working while
// peers sending oversize frames, truncated frames, random bytes or a wrong secret are cut off.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>

#include "common/auth.hpp"
#include "common/protocol.hpp"
#include "coordinator/server.hpp"

using namespace kiln;
using namespace kiln::coord;
using Clock = std::chrono::steady_clock;

namespace {

struct Client {
  int fd = -1;
  proto::FrameDecoder dec;
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
  void send(const nlohmann::json& j) { send_raw(proto::encode_frame(j)); }
  // Next message, or nullopt when the server closed the connection or 3 s passed.
  std::optional<nlohmann::json> recv() {
    const auto until = Clock::now() + std::chrono::seconds(3);
    char buf[4096];
    for (;;) {
      if (auto m = dec.next()) return m;
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
  void authenticate(const std::string& secret, int rank) {
    auto ch = recv();
    REQUIRE(ch);
    auto c = proto::unwrap<proto::Challenge>(*ch);
    proto::Hello h;
    h.rank = rank;
    h.world_size = 4;
    h.host = "test";
    h.client_nonce = auth::random_hex(8);
    h.mac = auth::hello_mac(secret, c.nonce, h.client_nonce, rank);
    send(proto::wrap(h));
    auto w = recv();
    REQUIRE(w);
    REQUIRE(proto::type_of(*w) == proto::MsgType::Welcome);
    CHECK(proto::unwrap<proto::Welcome>(*w).mac == auth::welcome_mac(secret, c.nonce, h.client_nonce));
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

// The good client sends a result and must get its ack, proving its connection is unaffected.
void good_client_still_works(Fixture& f, Client& good, std::uint64_t seq) {
  proto::ResultMsg m;
  m.seq = seq;
  m.result.test = "t";
  m.result.host = "h";
  m.result.rank = 0;
  m.result.metric = "m";
  m.result.unit = "";
  good.send(proto::wrap(m));
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
    auto ch = proto::unwrap<proto::Challenge>(*bad.recv());
    proto::Hello h;
    h.rank = 2;
    h.world_size = 4;
    h.host = "evil";
    h.client_nonce = "c";
    h.mac = auth::hello_mac("guess", ch.nonce, "c", 2);
    bad.send(proto::wrap(h));
    auto reply = bad.recv();
    REQUIRE(reply);
    CHECK(proto::type_of(*reply) == proto::MsgType::Error);
    CHECK(proto::unwrap<proto::Error>(*reply).code == "auth_failed");
    CHECK(bad.closed_by_server());
  }
  SECTION("a rank outside the world, and a duplicate rank") {
    Client out(f.port());
    auto ch = proto::unwrap<proto::Challenge>(*out.recv());
    proto::Hello h;
    h.rank = 9;
    h.world_size = 4;
    h.host = "x";
    h.client_nonce = "c";
    h.mac = auth::hello_mac(f.o.secret, ch.nonce, "c", 9);
    out.send(proto::wrap(h));
    CHECK(proto::unwrap<proto::Error>(*out.recv()).code == "bad_rank");
    Client dup(f.port());
    auto ch2 = proto::unwrap<proto::Challenge>(*dup.recv());
    h.rank = 0;
    h.mac = auth::hello_mac(f.o.secret, ch2.nonce, "c", 0);
    dup.send(proto::wrap(h));
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
