// kiln-load: many fake workers that speak kiln's real protocol (challenge, sealed hello, session
// MACs, heartbeats, record batches, done, acks) from one process, against a coordinator started
// with `kiln run --launcher none`. It measures what the coordinator sustains: results per second
// acknowledged, and the ack latency. Each connection carries --ranks-per-conn ranks of one fake
// node, as a node agent would. With --spoof it plays one hostile authenticated rank instead (the
// integration tests use that). No GPU, no MPI: every result is made up.
//
//   kiln-load --campaign RUN_DIR --ranks N [--first-rank R] [--ranks-per-conn C] [--results K]
//             [--batch B] [--window W] [--rate R] [--duration S]
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
#include <deque>
#include <map>
#include <optional>
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
  int ranks_per_conn = 1;  // ranks one connection carries (at most ranks_per_node: one node each)
  int results = 100;       // results per check per rank
  int batch = 64;          // records per frame at most
  int window = 2;          // unacknowledged frames per connection at most
  std::string spoof;       // host | rank | entity | round | text | "" (behave)
  double duration_s = 0;   // stop after this long (0: at the coordinator's bye)
  double rate = 0;         // results per second over all ranks (0: as fast as acks allow)
  bool quiet = false;
};

struct Conn {
  int fd = -1;
  std::vector<int> ranks;
  std::string host;
  enum class State { Challenge, Welcome, Ready, Closed } state = State::Challenge;
  proto::FrameDecoder dec{proto::kPreAuthMaxFrame};
  proto::Channel chan;
  std::string nonce, client_nonce;
  std::string out;
  std::uint64_t seq = 0;
  struct InFlight {
    std::uint64_t last_seq;
    std::size_t records;
    Clock::time_point sent;
  };
  std::deque<InFlight> unacked;  // frames, in order
  std::deque<std::pair<std::int64_t, std::vector<std::string>>> rounds;  // queued work: round id, tests
  std::size_t test = 0;  // where the front round is: test, result index, rank
  int result = 0;
  std::size_t rank = 0;
  Clock::time_point next_beat = Clock::now();
  bool watching_write = false;
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
  std::string result_text(const Conn& c, int rank, std::int64_t round, const std::string& test, int i) const;
  std::optional<std::string> next_line(Conn& c);
  void report(bool final) const;

  Options o_;
  net::Endpoint ep_;
  std::string secret_;
  int ep_fd_ = -1;
  std::vector<std::unique_ptr<Conn>> conns_;
  Stats st_;
  int open_ = 0;
  int reconnects_ = 0;
  std::size_t rotate_ = 0;
  Clock::time_point next_beats_{};
  double tokens_ = 0;  // results that may be sent now under --rate
  Clock::time_point refilled_ = Clock::now();
};

void Load::open_all() {
  // Connections never straddle two fake nodes.
  for (int i = 0; i < o_.ranks;) {
    auto c = std::make_unique<Conn>();
    const int first = o_.first_rank + i;
    const int node = first / o_.ranks_per_node;
    const int end = std::min({o_.first_rank + o_.ranks, first + o_.ranks_per_conn, (node + 1) * o_.ranks_per_node});
    for (int r = first; r < end; ++r) c->ranks.push_back(r);
    i += end - first;
    c->host = "fake" + std::to_string(node);
    c->fd = connect_to(ep_, static_cast<int>(conns_.size()));
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
  if (c.watching_write == want_write) return;  // one epoll_ctl per change, not per send
  c.watching_write = want_write;
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

// About 100 KB of terminal control sequences: clear screen, set the window title, move the cursor,
// ring the bell, and a C1 control, as a hostile peer would put in any text field.
std::string escapes() {
  std::string s;
  while (s.size() < 100000) s += "\x1b[2J\x1b]0;owned\x07\x1b[1;1H\x07\xc2\x9b" "31m\r";
  return s;
}

// One record line, as a worker's runner would make it. Built by hand when behaving (the
// generator must cost far less than the coordinator it loads); through JSON when spoofing.
std::string Load::result_text(const Conn& c, int rank, std::int64_t round, const std::string& test, int i) const {
  if (o_.spoof.empty()) {
    const auto r = std::to_string(rank);
    std::string s;
    s.reserve(256);
    s.append(R"({"record":"result","test":")").append(test).append(R"(","host":")").append(c.host);
    s.append(R"(","rank":)").append(r).append(R"(,"entity":{"kind":"rank","id":")").append(r);
    s.append(R"("},"metric":"busbw","value":)").append(std::to_string(100 + i % 7));
    s.append(R"(,"unit":"GB/s","status":"pass","round_id":)").append(std::to_string(round));
    s.append(R"(,"group_id":0,"size_bytes":1048576,"ts":0.0})");
    return s;
  }
  json r = {{"record", "result"}, {"test", test}, {"host", c.host}, {"rank", rank},
            {"entity", {{"kind", "rank"}, {"id", std::to_string(rank)}}}, {"metric", "busbw"},
            {"value", 100.0 + i % 7}, {"unit", "GB/s"}, {"status", "pass"}, {"round_id", round}, {"group_id", 0},
            {"size_bytes", 1 << 20}, {"ts", 0.0}};
  if (o_.spoof == "host") r["host"] = "victim";
  if (o_.spoof == "rank") r["rank"] = rank == 0 ? c.ranks.back() + 1 : 0;
  if (o_.spoof == "round") r["round_id"] = round + 1000;
  if (o_.spoof == "text") {  // its own records, but 100 KB of terminal escapes where text goes
    r["status"] = "fail";
    r["reason"] = escapes();
    r["metric"] = escapes().substr(0, 4000);
    r["problems"] = json::array({{{"code", "\x1b]0;owned\x07"}, {"what", escapes()}}});
  }
  if (o_.spoof == "entity") {
    r["entity"] = {{"kind", "gpu"}, {"id", "victim/gpu0"}};
    r["status"] = "fail";
    r["problems"] = json::array({{{"code", "gpu.hang"}, {"what", "spoofed"}}});
  }
  return r.dump();
}

// The front round's next record: every rank's results for a check, then every rank's end of it;
// nullopt when the round has nothing more to send (its dones follow).
std::optional<std::string> Load::next_line(Conn& c) {
  auto& [round, tests] = c.rounds.front();
  if (c.test >= tests.size()) return std::nullopt;
  const int rank = c.ranks[c.rank];
  std::string line;
  if (c.result < o_.results) {
    line = result_text(c, rank, round, tests[c.test], c.result);
  } else {
    CheckEnd e;
    e.test = tests[c.test];
    e.host = c.host;
    e.rank = rank;
    e.round_id = round;
    line = proto::record_line(e);
  }
  if (++c.rank == c.ranks.size()) {
    c.rank = 0;
    if (c.result++ == o_.results) {
      c.result = 0;
      ++c.test;
    }
  }
  return line;
}

// Sends the queued rounds' records in batches, keeping at most `window` frames unacknowledged.
void Load::pump(Conn& c) {
  if (c.state != Conn::State::Ready) return;
  const auto now = Clock::now();
  if (now >= c.next_beat) {
    c.out += c.chan.seal(proto::wrap(proto::Heartbeat{0.0}));
    c.next_beat = now + std::chrono::seconds(2);
  }
  while (!c.rounds.empty() && c.unacked.size() < static_cast<std::size_t>(o_.window) && (o_.rate <= 0 || tokens_ >= 1)) {
    std::vector<std::string> batch;
    while (batch.size() < static_cast<std::size_t>(o_.batch) && (o_.rate <= 0 || tokens_ >= 1)) {
      auto line = next_line(c);
      if (!line) break;
      batch.push_back(std::move(*line));
      tokens_ -= 1;
    }
    if (!batch.empty()) {
      c.seq += batch.size();
      c.out += c.chan.seal_text(proto::encode_records(c.seq, batch));
      c.unacked.push_back({c.seq, batch.size(), Clock::now()});
      if (st_.sent == 0) st_.first_send = c.unacked.back().sent;
      st_.sent += batch.size();
      continue;
    }
    // The round's records are all out: each rank says it is done.
    if (o_.spoof == "text") c.out += c.chan.seal(proto::wrap(proto::Error{escapes(), escapes()}));
    for (int r : c.ranks) c.out += c.chan.seal(proto::wrap(proto::Done{c.rounds.front().first, r, c.seq}));
    c.rounds.pop_front();
    c.test = 0;
    ++st_.rounds;
  }
  flush(c);
}

void Load::on_message(Conn& c, const json& m) {
  switch (proto::type_of(m)) {
    case proto::MsgType::Ack: {  // every frame up to seq
      const auto seq = proto::unwrap<proto::Ack>(m).seq;
      st_.last_ack = Clock::now();
      while (!c.unacked.empty() && c.unacked.front().last_seq <= seq) {
        st_.latency_ms.push_back(std::chrono::duration<float, std::milli>(st_.last_ack - c.unacked.front().sent).count());
        st_.acked += c.unacked.front().records;
        c.unacked.pop_front();
      }
      return;
    }
    case proto::MsgType::Round: {  // only the id and the checks: fake ranks need no groups
      std::vector<std::string> tests;
      for (const auto& t : m.at("tests")) tests.push_back(t.at("key").get<std::string>());
      c.rounds.emplace_back(m.at("id").get<std::int64_t>(), tests);
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
      c.fd = connect_to(ep_, c.ranks.front() + ++reconnects_);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.ptr = &c;
      c.watching_write = false;
      if (c.fd >= 0) ::epoll_ctl(ep_fd_, EPOLL_CTL_ADD, c.fd, &ev);
      else --open_;
      return;
    }
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      if (c.state != Conn::State::Closed && !o_.quiet)
        std::fprintf(stderr, "kiln-load: rank %d: connection closed by the coordinator\n", c.ranks.front());
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
      h.ranks = c.ranks;
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
  std::printf("%s ranks %d connections %d sent %llu acked %llu rounds %llu in %.1f s: %.0f acked/s, ack latency p50 %.2f ms p99 %.2f ms\n",
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
        std::fprintf(stderr, "kiln-load: rank %d: %s\n", c.ranks.front(), e.what());
        c.state = Conn::State::Closed;
      }
    }
    if (o_.rate > 0) {
      const auto now = Clock::now();
      tokens_ = std::min(o_.rate * 0.05 + 1, tokens_ + o_.rate * std::chrono::duration<double>(now - refilled_).count());
      refilled_ = now;
    }
    // Connections with work, from a rotating start so that --rate shares its tokens fairly.
    const auto now = Clock::now();
    const bool beats = now >= next_beats_;
    if (beats) next_beats_ = now + std::chrono::milliseconds(250);
    const std::size_t n_conns = conns_.size();
    for (std::size_t k = 0; k < n_conns; ++k) {
      auto& c = *conns_[(k + rotate_) % n_conns];
      if (c.fd < 0 || c.state != Conn::State::Ready) continue;
      const bool work = !c.rounds.empty() && c.unacked.size() < static_cast<std::size_t>(o_.window) &&
                        (o_.rate <= 0 || tokens_ >= 1);
      if (work || (beats && now >= c.next_beat)) pump(c);
    }
    if (n_conns) rotate_ = (rotate_ + 1) % n_conns;
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
      "ranks-per-conn", po::value(&o.ranks_per_conn)->default_value(o.ranks_per_conn),
      "ranks one connection carries, as a node agent would (at most --ranks-per-node)")(
      "results", po::value(&o.results)->default_value(o.results), "results per check per rank")(
      "batch", po::value(&o.batch)->default_value(o.batch), "records per frame at most")(
      "window", po::value(&o.window)->default_value(o.window), "unacknowledged frames per connection at most")(
      "duration", po::value(&o.duration_s)->default_value(o.duration_s), "stop after this many seconds (0: at bye)")(
      "rate", po::value(&o.rate)->default_value(o.rate), "results per second over all ranks (0: as fast as acks allow)")(
      "spoof", po::value(&o.spoof), "play a hostile rank: host, rank, entity, round or text (terminal escapes)")(
      "quiet", po::bool_switch(&o.quiet), "final line only");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    if (vm.count("help")) {
      std::cout << desc;
      return 0;
    }
    po::notify(vm);
    if (o.ranks < 1 || o.first_rank < 0 || o.ranks_per_node < 1 || o.ranks_per_conn < 1 || o.batch < 1 ||
        o.window < 1 || o.results < 0)
      throw po::error("--ranks, --ranks-per-node, --ranks-per-conn, --batch and --window must be positive");
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
