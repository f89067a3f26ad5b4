#include "worker/relay.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "common/channel.hpp"
#include "common/text.hpp"

namespace kiln::worker {

namespace {
constexpr double kRelayHeartbeatS = 1.0;            // the agent's heartbeat to its local ranks
constexpr std::size_t kMaxQueuedBytes = 64u << 20;  // to a local rank that does not read

int poll_ms(Clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(ms, 0, 200));
}

void say(int rank, const std::string& what) {
  std::fprintf(stderr, "kiln-worker[%d]: node agent: %s\n", rank, what.c_str());
  std::fflush(stderr);
}

std::int64_t round_of(const Record& r) {
  return std::visit([](const auto& v) { return v.round_id; }, r);
}
}  // namespace

struct NodeAgent::Peer {
  int fd = -1;
  int rank = -1;  // -1 until its hello
  NodeInfo info;
  proto::FrameDecoder decoder{proto::kPreAuthMaxFrame};
  std::string out;                  // bytes not yet written to it
  std::uint64_t next_local = 1;     // the local seq its next record must have
  bool finished = false;            // it said bye
  bool gone = false;
  bool warned_late = false;
};

void RelayClient::connect(const std::string& name, const relay::Hello& me, Clock::time_point deadline) {
  std::string why;
  fd_ = relay::connect_socket(name, deadline, why);
  if (fd_ < 0) throw LinkError("cannot reach the node agent: " + why);
  write_all_blocking(relay::encode_hello(me), deadline);
  const auto first = proto::parse_body(read_one_blocking(deadline));
  if (proto::type_of(first) == proto::MsgType::Error)
    throw LinkError("the node agent refused us: " + printable(first.value("message", std::string("?"))));
  const auto w = proto::unwrap<proto::Welcome>(first);
  if (!w.ranks.empty()) campaign_rank_ = w.ranks.front();
  ready(w.heartbeat_s);
}

NodeAgent::NodeAgent(int listen_fd, AgentSetup setup) : listen_fd_(listen_fd), setup_(std::move(setup)) {
  if (::pipe2(notify_, O_CLOEXEC | O_NONBLOCK) != 0) throw LinkError("pipe failed");
}

NodeAgent::~NodeAgent() {
  stopping_ = true;
  if (hub_.joinable()) {
    (void)!::write(notify_[1], "x", 1);
    hub_.join();
  }
  if (link_) link_->close();
  for (auto& p : peers_)
    if (p->fd >= 0) ::close(p->fd);
  for (int fd : {listen_fd_, notify_[0], notify_[1]})
    if (fd >= 0) ::close(fd);
}

void NodeAgent::connect() {
  const auto timeout = std::chrono::milliseconds(static_cast<long long>(setup_.connect_timeout_s * 1000));
  gather_hellos(Clock::now() + timeout);
  ::close(listen_fd_);  // nobody else may join once the hello is sent
  listen_fd_ = -1;
  const LinkIdentity who = identity();
  link_ = std::make_unique<CoordinatorLink>(setup_.coordinator, setup_.secret, who);
  link_->notify(notify_[1]);
  link_->connect(timeout);
  // Renamed by the coordinator (a restart that lost a node): each local rank is told its name,
  // and is known by it from now on.
  const auto& names = link_->names();  // parallel to who.ranks (CoordinatorLink checks)
  if (!names.empty()) {
    campaign_rank_ = names.front();
    std::map<int, int> name_of;
    for (std::size_t i = 0; i < names.size(); ++i) name_of[who.ranks[i]] = names[i];
    for (auto& p : peers_) p->rank = name_of.at(p->rank);
  }
  for (auto& p : peers_) {
    proto::Welcome w{link_->run_id(), kRelayHeartbeatS};
    if (!names.empty()) w.ranks = {p->rank};
    queue_to(*p, relay::frame(proto::wrap(w)));
  }
}

// The local ranks connect and say who they are; the agent waits for all of them, or until the
// deadline, then speaks for those that came. A rank that is not one of the node's is refused.
void NodeAgent::gather_hellos(Clock::time_point deadline) {
  const std::size_t want = setup_.local_ranks.size() - 1;
  std::size_t have = 0;
  std::vector<std::unique_ptr<Peer>> waiting;
  while (have < want && Clock::now() < deadline) {
    std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
    for (auto& p : waiting) fds.push_back({p->fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), poll_ms(deadline));
    std::string why;
    if (fds[0].revents & POLLIN)
      if (const int fd = relay::accept_same_uid(listen_fd_, why); fd >= 0) waiting.push_back(std::make_unique<Peer>(Peer{fd}));
    if (!why.empty()) say(setup_.self.rank, why);
    std::vector<std::unique_ptr<Peer>> still;  // fds[i + 1] is waiting[i] as it was polled
    for (std::size_t i = 0; i < waiting.size(); ++i) {
      if (i + 1 < fds.size() && fds[i + 1].revents && take_hello(*waiting[i])) {
        if (waiting[i]->rank >= 0) ++have, peers_.push_back(std::move(waiting[i]));
        continue;
      }
      still.push_back(std::move(waiting[i]));
    }
    waiting = std::move(still);
  }
  for (auto& p : waiting) ::close(p->fd);
  if (have < want)
    say(setup_.self.rank, std::to_string(want - have) + " of the node's ranks never joined the relay; connecting without them");
}

// Reads what a waiting peer sent. False while its hello is incomplete; a bad or foreign hello
// closes it (fd -1).
bool NodeAgent::take_hello(Peer& p) {
  char buf[4096];
  const ssize_t n = ::recv(p.fd, buf, sizeof buf, 0);
  try {
    if (n <= 0) throw std::runtime_error("closed before its hello");
    p.decoder.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    const auto body = p.decoder.next_body();
    if (!body) return false;
    const auto h = relay::decode_hello(*body);
    const auto& mine = setup_.local_ranks;
    const bool ours = std::find(mine.begin() + 1, mine.end(), h.rank) != mine.end();
    const bool dup = std::any_of(peers_.begin(), peers_.end(), [&](const auto& q) { return q->rank == h.rank; });
    if (!ours || dup) throw std::runtime_error("rank " + std::to_string(h.rank) + " is not a rank of this node, or joined twice");
    p.rank = h.rank;
    p.info = h.info;
    p.decoder.set_max_frame(proto::kDefaultMaxFrame);
    return true;
  } catch (const std::exception& e) {
    say(setup_.self.rank, std::string("refused a local rank: ") + e.what());
    ::close(p.fd);
    p.fd = -1;
    p.rank = -1;
    return true;
  }
}

// The hello for the node: the agent first, then the ranks that came, in local-rank order, each
// with its own view (its local rank, the GPUs it sees).
LinkIdentity NodeAgent::identity() const {
  LinkIdentity who = setup_.self;
  std::vector<const Peer*> order;
  for (const auto& p : peers_) order.push_back(p.get());
  std::sort(order.begin(), order.end(), [](const Peer* a, const Peer* b) { return a->info.local_rank < b->info.local_rank; });
  who.ranks = {setup_.self.rank};
  who.rank_info = {setup_.self.info};
  for (const Peer* p : order) {
    who.ranks.push_back(p->rank);
    who.rank_info.push_back(p->info);
    who.rank_info.back().world_rank = p->rank;
  }
  return who;
}

void NodeAgent::start(ProgressSource own) {
  link_->progress_source([this, own = std::move(own)] {
    std::vector<proto::RankProgress> all;
    if (own) all = own();
    std::lock_guard lk(progress_mu_);
    for (const auto& [rank, p] : peer_progress_) all.push_back(p);
    return all;
  });
  link_->start();
  hub_ = std::thread([this] { hub_loop(); });
}

void NodeAgent::hub_loop() {
  auto next_beat = Clock::now();
  while (!stopping_) hub_turn(next_beat);
  // Last words to the local ranks (the bye, the last acks), bounded.
  for (const auto until = Clock::now() + std::chrono::seconds(2); Clock::now() < until;) {
    bool left = false;
    for (auto& p : peers_)
      if (!p->gone && !p->out.empty()) left = true, serve(*p, POLLOUT);
    if (!left) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// One turn of the hub: what the coordinator said goes out to the local ranks, what they said goes
// into the connection.
void NodeAgent::hub_turn(Clock::time_point& next_beat) {
  std::vector<pollfd> fds{{notify_[0], POLLIN, 0}};
  for (auto& p : peers_)
    fds.push_back({p->gone ? -1 : p->fd, static_cast<short>(POLLIN | (p->out.empty() ? 0 : POLLOUT)), 0});
  ::poll(fds.data(), fds.size(), poll_ms(next_beat));
  char drain[256];
  while (::read(notify_[0], drain, sizeof drain) > 0) {
  }
  fan_out_commands();
  relay_acks();
  if (Clock::now() >= next_beat) {
    const auto beat = relay::frame(proto::wrap(proto::Heartbeat{0.0}));
    for (auto& p : peers_) queue_to(*p, beat);
    next_beat = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kRelayHeartbeatS));
  }
  for (std::size_t i = 0; i < peers_.size(); ++i)
    if (!peers_[i]->gone) serve(*peers_[i], static_cast<short>(fds[i + 1].revents | POLLOUT));
  if (everyone_finished()) all_finished_ = true;
}

void NodeAgent::fan_out_commands() {
  while (auto cmd = link_->next_command(Clock::now())) {
    if (cmd->value("type", std::string()) == "round") round_ = cmd->value("id", std::int64_t{-1});
    const auto bytes = relay::frame(*cmd);
    for (auto& p : peers_) queue_to(*p, bytes);
    std::lock_guard lk(mu_);
    inbox_.push_back(std::move(*cmd));
    cv_.notify_all();
  }
  if (link_->closed()) {
    std::lock_guard lk(mu_);
    cv_.notify_all();
  }
}

void NodeAgent::relay_acks() {
  const auto acked = link_->acked_seq();
  if (acked <= acked_seen_) return;
  acked_seen_ = acked;
  for (auto [who, local] : book_.acked(acked))
    for (auto& p : peers_)
      if (p->rank == who) queue_to(*p, relay::frame(proto::wrap(proto::Ack{local})));
}

void NodeAgent::queue_to(Peer& p, const std::string& bytes) {
  if (p.gone) return;
  if (p.out.size() + bytes.size() > kMaxQueuedBytes) return drop(p, "it has not read its relay for too long");
  p.out += bytes;
}

// Writes what is queued for a local rank and reads what it sent.
void NodeAgent::serve(Peer& p, short revents) {
  if (!p.out.empty() && (revents & POLLOUT)) {
    const ssize_t n = ::send(p.fd, p.out.data(), p.out.size(), MSG_NOSIGNAL);
    if (n > 0) p.out.erase(0, static_cast<std::size_t>(n));
    else if (n < 0 && errno != EAGAIN && errno != EINTR) return drop(p, std::string("write failed: ") + std::strerror(errno));
  }
  if (!(revents & (POLLIN | POLLHUP | POLLERR))) return;
  char buf[16384];
  const ssize_t n = ::recv(p.fd, buf, sizeof buf, 0);
  if (n == 0) return drop(p, "its relay closed");
  if (n < 0) {
    if (errno != EAGAIN && errno != EINTR) drop(p, std::string("read failed: ") + std::strerror(errno));
    return;
  }
  try {
    p.decoder.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    while (!p.gone)
      if (auto body = p.decoder.next_body()) take_from(p, *body);
      else break;
  } catch (const std::exception& e) {
    drop(p, std::string("it sent ") + printable(e.what()));
  }
}

// One message from a local rank. Records and a done must be its own; a bye says it is finished
// (the node's bye is the agent's to send); anything else goes on to the coordinator.
void NodeAgent::take_from(Peer& p, std::string_view body) {
  auto msg = proto::decode_worker_payload(body);
  if (auto* b = std::get_if<proto::Records>(&msg)) return relay_records(p, *b);
  if (auto* d = std::get_if<proto::Done>(&msg)) {
    if (d->rank != p.rank) throw proto::ProtocolError("a done for rank " + std::to_string(d->rank));
    link_->send(proto::wrap(proto::Done{d->round_id, d->rank, book_.done_seq(p.rank, d->last_seq)}));
  } else if (std::holds_alternative<proto::Bye>(msg)) {
    p.finished = true;
  } else if (auto* er = std::get_if<proto::Error>(&msg)) {
    link_->send(proto::wrap(*er));
  } else if (auto* hb = std::get_if<proto::Heartbeat>(&msg)) {
    std::lock_guard lk(progress_mu_);
    for (const auto& prog : hb->progress)
      if (prog.rank == p.rank) peer_progress_[p.rank] = prog;  // a rank speaks only for itself
  }
}

// A local rank's batch goes into the connection record by record, as received. A record of a
// round that is over (a rank that hung past its deadline, lost since) is not sent: the coordinator
// would close the whole node's connection for it.
void NodeAgent::relay_records(Peer& p, proto::Records& b) {
  const std::uint64_t first = b.last_seq - b.records.size() + 1;
  if (first != p.next_local) throw proto::ProtocolError("records out of sequence");
  for (std::size_t i = 0; i < b.records.size(); ++i) {
    const auto& rec = b.records[i];
    if (std::visit([](const auto& v) { return v.rank; }, rec) != p.rank) throw proto::ProtocolError("a record of another rank");
    if (round_of(rec) != round_.load()) {
      book_.dropped(p.rank, first + i);
      if (!std::exchange(p.warned_late, true)) say(setup_.self.rank, "dropped rank " + std::to_string(p.rank) + "'s records of a round that is over");
      continue;
    }
    book_.relayed(p.rank, first + i, link_->send_record_line(std::move(b.lines[i])));
  }
  p.next_local = b.last_seq + 1;
}

// A local rank that is gone: the others go on; the coordinator sees it miss its round.
void NodeAgent::drop(Peer& p, const std::string& why) {
  if (p.gone) return;
  p.gone = true;
  ::close(p.fd);
  p.fd = -1;
  p.out.clear();
  book_.forget(p.rank);
  if (!p.finished) say(setup_.self.rank, "lost local rank " + std::to_string(p.rank) + ": " + why);
}

bool NodeAgent::everyone_finished() const {
  return own_finished_ && std::all_of(peers_.begin(), peers_.end(), [](const auto& p) { return p->finished || p->gone; });
}

std::optional<nlohmann::json> NodeAgent::next_command(Clock::time_point deadline) {
  std::unique_lock lk(mu_);
  cv_.wait_until(lk, deadline, [&] { return !inbox_.empty() || closed(); });
  if (inbox_.empty()) return std::nullopt;
  auto m = std::move(inbox_.front());
  inbox_.pop_front();
  return m;
}

std::uint64_t NodeAgent::send_record(const Record& r) {
  if (round_of(r) != round_.load()) return own_last_;  // see relay_records
  own_last_ = link_->send_record(r);
  return own_last_;
}

void NodeAgent::send(const nlohmann::json& msg) {
  if (msg.value("type", std::string()) != "bye") return link_->send(msg);
  own_finished_ = true;  // the node's bye waits for the other ranks (close())
  (void)!::write(notify_[1], "x", 1);
}

bool NodeAgent::wait_acked(Clock::time_point deadline) { return link_->wait_acked_to(own_last_, deadline); }

// The node's connection ends once every local rank has finished or is gone (bounded: a local
// rank waits at most 30 s for its acks) and everything is acknowledged; then its bye.
void NodeAgent::close() {
  if (!link_) return;
  const auto deadline = Clock::now() + std::chrono::seconds(45);
  while (!all_finished_ && !link_->closed() && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (!all_finished_) say(setup_.self.rank, "closing the node's connection before every local rank finished");
  link_->wait_acked(deadline);
  link_->send(proto::wrap(proto::Bye{"done"}));
  stopping_ = true;
  (void)!::write(notify_[1], "x", 1);
  if (hub_.joinable()) hub_.join();
  link_->close();
}

}  // namespace kiln::worker
