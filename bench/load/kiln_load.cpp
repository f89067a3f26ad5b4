// kiln-load: many fake workers that speak kiln's real protocol (challenge, sealed hello, session
// MACs, heartbeats, results, ends, done, acks) from one process, against a coordinator started with
// `kiln run --launcher none`. It measures what the coordinator sustains: results per second
// acknowledged, and the ack latency. With --spoof it plays one hostile authenticated rank instead
// (the integration tests use that). No GPU, no MPI: every result is made up.
//
//   kiln-load --campaign RUN_DIR --ranks N [--first-rank R] [--results K] [--batch B]
//
// One thread, epoll, non-blocking sockets. Connections use local source addresses 127.0.0.1-127.0.0.8
// in turn, so more than one address's worth of ephemeral ports is available.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "common/auth.hpp"
#include "common/channel.hpp"
#include "common/net.hpp"

namespace po = boost::program_options;
using namespace kiln;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

namespace {

struct Options {
  std::string campaign;    // run directory: campaign.json names the coordinator and the secret
  int ranks = 1;
  int first_rank = 0;
  int ranks_per_node = 8;
  int results = 100;       // results per check per rank
  int batch = 64;          // results sent before waiting for room (acks outstanding per rank)
  std::string spoof;       // host | rank | entity | round | "" (behave)
  double duration_s = 0;   // stop after this long (0: at the coordinator's bye)
  double rate = 0;         // results per second over all ranks (0: as fast as acks allow)
  bool quiet = false;
};

struct Conn {
  int fd = -1;
  int rank = 0;
  std::string host;
  enum class State { Challenge, Welcome, Ready, Closed } state = State::Challenge;
  proto::FrameDecoder dec{proto::kPreAuthMaxFrame};
  proto::Channel chan;
  std::string nonce, client_nonce;
  std::string out;
  std::uint64_t seq = 0;
  std::map<std::uint64_t, Clock::time_point> unacked;
  std::vector<std::pair<std::int64_t, std::vector<std::string>>> rounds;  // queued work: round id, tests
  int sent_in_check = 0;
  Clock::time_point next_beat = Clock::now();
};

struct Stats {
  std::uint64_t sent = 0, acked = 0, rounds = 0;
  std::vector<float> latency_ms;  // every ack's latency
  Clock::time_point start = Clock::now();
  Clock::time_point first_send{}, last_ack{};  // the window results/s is measured over
};

int connect_to(const net::Endpoint& ep, int index) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  src.sin_addr.s_addr = htonl(0x7f000001u + static_cast<std::uint32_t>(index % 8));
  ::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(ep.port);
  ::inet_pton(AF_INET, ep.host.c_str(), &dst.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  return fd;
}

class Load {
 public:
  Load(Options o, net::Endpoint ep, std::string secret) : o_(std::move(o)), ep_(std::move(ep)), secret_(std::move(secret)) {}
  int run();

 private:
  void open_all();
  void on_readable(Conn& c);
  void on_message(Conn& c, const json& m);
  void pump(Conn& c);
  void flush(Conn& c);
  void watch(Conn& c, bool want_write);
  void close_conn(Conn& c);
  std::string result_text(Conn& c, std::int64_t round, const std::string& test, int i);
  void report(bool final) const;

  Options o_;
  net::Endpoint ep_;
  std::string secret_;
  int ep_fd_ = -1;
  std::vector<std::unique_ptr<Conn>> conns_;
  Stats st_;
  int open_ = 0;
  int reconnects_ = 0;
  double tokens_ = 0;  // results that may be sent now under --rate
  Clock::time_point refilled_ = Clock::now();
};

void Load::open_all() {
  for (int i = 0; i < o_.ranks; ++i) {
    auto c = std::make_unique<Conn>();
    c->rank = o_.first_rank + i;
    c->host = "fake" + std::to_string(c->rank / o_.ranks_per_node);
    c->fd = connect_to(ep_, i);
    if (c->fd < 0) {
      std::fprintf(stderr, "kiln-load: cannot open connection %d: %s\n", i, std::strerror(errno));
      break;
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = c.get();
    ::epoll_ctl(ep_fd_, EPOLL_CTL_ADD, c->fd, &ev);
    conns_.push_back(std::move(c));
    ++open_;
  }
}

void Load::watch(Conn& c, bool want_write) {
  epoll_event ev{};
  ev.events = EPOLLIN | (want_write ? EPOLLOUT : 0);
  ev.data.ptr = &c;
  ::epoll_ctl(ep_fd_, EPOLL_CTL_MOD, c.fd, &ev);
}

// A connection that is over, by our bye or the coordinator's close.
void Load::close_conn(Conn& c) {
  c.state = Conn::State::Closed;
  ::epoll_ctl(ep_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  c.fd = -1;
  --open_;
}

void Load::flush(Conn& c) {
  while (!c.out.empty()) {
    const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n <= 0) break;
    c.out.erase(0, static_cast<std::size_t>(n));
  }
  watch(c, !c.out.empty());
}

std::string Load::result_text(Conn& c, std::int64_t round, const std::string& test, int i) {
  json r = {{"test", test}, {"host", c.host}, {"rank", c.rank}, {"entity", {{"kind", "rank"}, {"id", std::to_string(c.rank)}}},
            {"metric", "busbw"}, {"value", 100.0 + i % 7}, {"unit", "GB/s"}, {"status", "pass"},
            {"round_id", round}, {"group_id", 0}, {"size_bytes", 1 << 20}, {"ts", 0.0}};
  if (o_.spoof == "host") r["host"] = "victim";
  if (o_.spoof == "rank") r["rank"] = c.rank == 0 ? 1 : 0;
  if (o_.spoof == "round") r["round_id"] = round + 1000;
  if (o_.spoof == "entity") {
    r["entity"] = {{"kind", "gpu"}, {"id", "victim/gpu0"}};
    r["status"] = "fail";
    r["problems"] = json::array({{{"code", "gpu.hang"}, {"what", "spoofed"}}});
  }
  return json({{"type", "result"}, {"seq", ++c.seq}, {"result", r}}).dump();
}

// Sends the queued rounds' results, keeping at most `batch` unacknowledged per rank.
void Load::pump(Conn& c) {
  if (c.state != Conn::State::Ready) return;
  const auto now = Clock::now();
  if (now >= c.next_beat) {
    c.out += c.chan.seal(proto::wrap(proto::Heartbeat{0.0}));
    c.next_beat = now + std::chrono::seconds(2);
  }
  while (!c.rounds.empty() && c.unacked.size() < static_cast<std::size_t>(o_.batch) && (o_.rate <= 0 || tokens_ >= 1)) {
    tokens_ -= 1;
    auto& [round, tests] = c.rounds.front();
    if (tests.empty()) {
      c.out += c.chan.seal(proto::wrap(proto::Done{round, c.rank, c.seq}));
      c.rounds.erase(c.rounds.begin());
      ++st_.rounds;
      continue;
    }
    if (c.sent_in_check < o_.results) {
      c.out += c.chan.seal_text(result_text(c, round, tests.front(), c.sent_in_check++));
    } else {
      CheckEnd e;
      e.test = tests.front();
      e.host = c.host;
      e.rank = c.rank;
      e.round_id = round;
      c.out += c.chan.seal(proto::wrap(proto::EndMsg{++c.seq, e}));
      tests.erase(tests.begin());
      c.sent_in_check = 0;
    }
    c.unacked[c.seq] = Clock::now();
    if (st_.sent++ == 0) st_.first_send = c.unacked[c.seq];
  }
  flush(c);
}

void Load::on_message(Conn& c, const json& m) {
  switch (proto::type_of(m)) {
    case proto::MsgType::Ack: {
      const auto it = c.unacked.find(m.at("seq").get<std::uint64_t>());
      if (it == c.unacked.end()) return;
      st_.last_ack = Clock::now();
      st_.latency_ms.push_back(std::chrono::duration<float, std::milli>(st_.last_ack - it->second).count());
      c.unacked.erase(it);
      ++st_.acked;
      return;
    }
    case proto::MsgType::Round: {
      const auto r = proto::unwrap<proto::Round>(m);
      std::vector<std::string> tests;
      for (const auto& t : r.tests) tests.push_back(t.key);
      c.rounds.emplace_back(r.id, tests);
      return;
    }
    case proto::MsgType::Bye:
      c.out += c.chan.seal(proto::wrap(proto::Bye{"done"}));
      flush(c);
      close_conn(c);
      return;
    default:
      return;
  }
}

void Load::on_readable(Conn& c) {
  char buf[16384];
  for (;;) {
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if ((n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) && c.state == Conn::State::Challenge) {
      // Shed by the coordinator's cap on unauthenticated peers: come back, as a worker does.
      ::epoll_ctl(ep_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
      ::close(c.fd);
      c.dec = proto::FrameDecoder(proto::kPreAuthMaxFrame);
      c.fd = connect_to(ep_, c.rank + ++reconnects_);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.ptr = &c;
      if (c.fd >= 0) ::epoll_ctl(ep_fd_, EPOLL_CTL_ADD, c.fd, &ev);
      else --open_;
      return;
    }
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      if (c.state != Conn::State::Closed && !o_.quiet)
        std::fprintf(stderr, "kiln-load: rank %d: connection closed by the coordinator\n", c.rank);
      close_conn(c);
      return;
    }
    if (n < 0) break;
    c.dec.feed(std::string_view(buf, static_cast<std::size_t>(n)));
  }
  while (auto body = c.dec.next_body()) {
    if (c.state == Conn::State::Challenge) {
      c.nonce = proto::unwrap<proto::Challenge>(proto::parse_body(*body)).nonce;
      proto::Hello h;
      h.rank = c.rank;
      h.world_size = o_.first_rank + o_.ranks;
      h.host = c.host;
      h.client_nonce = c.client_nonce = auth::random_hex(32);
      c.out += proto::seal_hello(secret_, c.nonce, h);
      c.state = Conn::State::Welcome;
    } else if (c.state == Conn::State::Welcome) {
      proto::open_welcome(secret_, c.nonce, c.client_nonce, *body);
      c.chan = proto::Channel(secret_, c.nonce, c.client_nonce, proto::Channel::Side::Worker);
      c.dec.set_max_frame(proto::kDefaultMaxFrame);
      c.state = Conn::State::Ready;
    } else if (c.state == Conn::State::Ready) {
      on_message(c, c.chan.open(*body));
    }
  }
  if (c.state == Conn::State::Ready) pump(c);
  else flush(c);
}

void Load::report(bool final) const {
  auto lat = st_.latency_ms;
  const auto pct = [&](double p) {
    if (lat.empty()) return 0.0f;
    const auto k = static_cast<std::size_t>(p * static_cast<double>(lat.size() - 1));
    std::nth_element(lat.begin(), lat.begin() + static_cast<std::ptrdiff_t>(k), lat.end());
    return lat[k];
  };
  const double secs = st_.acked ? std::chrono::duration<double>(st_.last_ack - st_.first_send).count()
                                 : std::chrono::duration<double>(Clock::now() - st_.start).count();
  std::printf("%s ranks %d connected %d sent %llu acked %llu rounds %llu in %.1f s: %.0f acked/s, ack latency p50 %.2f ms p99 %.2f ms\n",
              final ? "kiln-load: final" : "kiln-load:", o_.ranks, open_, static_cast<unsigned long long>(st_.sent),
              static_cast<unsigned long long>(st_.acked), static_cast<unsigned long long>(st_.rounds), secs,
              static_cast<double>(st_.acked) / std::max(secs, 1e-9), pct(0.50), pct(0.99));
  std::fflush(stdout);
}

int Load::run() {
  ep_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  open_all();
  std::vector<epoll_event> evs(1024);
  auto next_report = Clock::now() + std::chrono::seconds(5);
  const auto stop_at = o_.duration_s > 0 ? Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                              std::chrono::duration<double>(o_.duration_s))
                                          : Clock::time_point::max();
  while (open_ > 0 && Clock::now() < stop_at) {
    const int n = ::epoll_wait(ep_fd_, evs.data(), static_cast<int>(evs.size()), o_.rate > 0 ? 2 : 100);
    for (int i = 0; i < n; ++i) {
      auto& c = *static_cast<Conn*>(evs[static_cast<std::size_t>(i)].data.ptr);
      if (c.fd < 0) continue;
      try {
        if (evs[static_cast<std::size_t>(i)].events & EPOLLOUT) flush(c);
        if (evs[static_cast<std::size_t>(i)].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(c);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "kiln-load: rank %d: %s\n", c.rank, e.what());
        c.state = Conn::State::Closed;
      }
    }
    if (o_.rate > 0) {
      const auto now = Clock::now();
      tokens_ = std::min(o_.rate * 0.05 + 1, tokens_ + o_.rate * std::chrono::duration<double>(now - refilled_).count());
      refilled_ = now;
    }
    for (auto& c : conns_)
      if (c->fd >= 0 && c->state == Conn::State::Ready && (!c->rounds.empty() || Clock::now() >= c->next_beat)) pump(*c);
    if (!o_.quiet && Clock::now() >= next_report) {
      report(false);
      next_report += std::chrono::seconds(5);
    }
  }
  report(true);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  po::options_description desc("usage: kiln-load --campaign RUN_DIR --ranks N [options]\n\noptions");
  desc.add_options()("help,h", "show this help")(
      "campaign", po::value(&o.campaign)->required(), "run directory of a `kiln run --launcher none` campaign")(
      "ranks", po::value(&o.ranks)->default_value(o.ranks), "fake ranks (one connection each)")(
      "first-rank", po::value(&o.first_rank)->default_value(o.first_rank), "rank of the first fake rank")(
      "ranks-per-node", po::value(&o.ranks_per_node)->default_value(o.ranks_per_node), "fake ranks per fake host")(
      "results", po::value(&o.results)->default_value(o.results), "results per check per rank")(
      "batch", po::value(&o.batch)->default_value(o.batch), "unacknowledged results per rank at most")(
      "duration", po::value(&o.duration_s)->default_value(o.duration_s), "stop after this many seconds (0: at bye)")(
      "rate", po::value(&o.rate)->default_value(o.rate), "results per second over all ranks (0: as fast as acks allow)")(
      "spoof", po::value(&o.spoof), "play a hostile rank: host, rank, entity or round")(
      "quiet", po::bool_switch(&o.quiet), "final line only");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    if (vm.count("help")) {
      std::cout << desc;
      return 0;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "kiln-load: error: %s\n", e.what());
    return 2;
  }
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &rl);
  try {
    std::ifstream in(o.campaign + "/campaign.json");
    const auto camp = json::parse(in);
    const auto ep = net::parse_endpoint(camp.at("coordinator").get<std::string>());
    const auto secret = auth::read_secret_file(camp.at("secret_file").get<std::string>());
    return Load(o, ep, secret).run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln-load: error: %s\n", e.what());
    return 2;
  }
}
