// The campaign's rounds and messages: every record kept on disk before it is acknowledged, every
// round journaled when it starts and when it ends. Starting, resuming and ending a campaign are in
// campaign_session.cpp.
#include "coordinator/campaign.hpp"

#include <unistd.h>

#include <atomic>
#include <iostream>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "common/text.hpp"
#include "coordinator/journal.hpp"
#include "coordinator/progress_line.hpp"
#include "coordinator/server.hpp"
#include "coordinator/store.hpp"

namespace kiln::coord {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

namespace {
// Set from a signal handler (SIGINT/SIGTERM), so it has to be a lock-free global.
std::atomic<int> g_stop_signal{0};
}  // namespace

void request_stop(int signal_number) { g_stop_signal.store(signal_number); }
int stop_requested() { return g_stop_signal.load(); }

namespace {
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

Campaign::Campaign(CampaignOptions opts, Launcher& launcher)
    : opts_(std::move(opts)), launcher_(launcher), tty_(::isatty(STDERR_FILENO) == 1 && std::getenv("TERM") != nullptr) {}
Campaign::~Campaign() {
  if (server_) server_->stop();
}

void Campaign::progress(const std::string& line) const {
  if (opts_.quiet) return;
  if (status_shown_) std::cerr << "\r\033[K";  // the status line gives way; the next update redraws it
  status_shown_ = false;
  std::cerr << "kiln: " << printable(line, 2000) << std::endl;
}

int Campaign::rounds_estimate() const {
  std::set<std::string> hosts;
  for (const auto& [r, st] : ranks_)
    if (st.joined) hosts.insert(st.host);
  const int units = hosts.size() >= 2 ? static_cast<int>(hosts.size()) : 0;
  return static_cast<int>(opts_.tests.size()) + (opts_.localize ? localize_rounds_estimate(units) : 0);
}

std::string Campaign::estimate_text(std::int64_t round_id) const {
  const int k = rounds_estimate();
  const double elapsed = first_round_ ? seconds_since(*first_round_) : 0.0;
  const double eta = eta_seconds(elapsed, rounds_done_, k);
  std::string out = k >= round_id ? "round " + std::to_string(round_id) + " of about " + std::to_string(k) : "";
  if (eta >= 0 && k >= round_id) out += ", about " + clock_text(eta) + " left";
  return out;
}

void Campaign::show_status(std::int64_t round_id, const std::string& plain) {
  if (opts_.quiet) return;
  if (!tty_) return progress(plain);
  StatusFigures f;
  f.round = round_id;
  f.rounds_estimate = rounds_estimate();
  f.done = current_ ? current_->done.size() : 0;
  f.expected = current_ ? current_->expected.size() : 0;
  f.results = store_ ? store_->count() : 0;
  f.elapsed_s = first_round_ ? seconds_since(*first_round_) : 0.0;
  f.eta_s = eta_seconds(f.elapsed_s, rounds_done_, f.rounds_estimate);
  std::cerr << "\r\033[Kkiln: " << status_text(f) << std::flush;
  status_shown_ = true;
}

// Each connection is sent the round with only the groups its ranks are in: one group of 100,000
// ranks sent whole to 12,500 node connections would be gigabytes.
void Campaign::send_round(const proto::Round& round, const std::set<int>& live) {
  std::vector<std::string> encoded;
  std::unordered_map<int, std::vector<std::size_t>> groups_of;
  for (std::size_t g = 0; g < round.groups.size(); ++g) {
    encoded.push_back(proto::encode_group(g, round.groups[g]));
    for (int r : round.groups[g]) groups_of[r].push_back(g);
  }
  for (auto session : sessions_of(live)) {
    std::set<std::size_t> which;
    for (int r : sessions_.count(session) ? sessions_.at(session) : std::vector<int>{})
      if (auto it = groups_of.find(r); it != groups_of.end()) which.insert(it->second.begin(), it->second.end());
    server_->send_text(session, proto::round_payload(round, {which.begin(), which.end()}, encoded));
  }
}

// The connections that carry these ranks, each once.
std::set<SessionId> Campaign::sessions_of(const std::set<int>& ranks) const {
  std::set<SessionId> out;
  for (int r : ranks) out.insert(ranks_.at(r).session);
  return out;
}

std::set<int> Campaign::live_ranks() const {
  std::set<int> out;
  for (const auto& [r, st] : ranks_)
    if (st.joined && !st.lost) out.insert(r);
  return out;
}

void Campaign::storage_failed(const std::string& what) {
  if (!storage_error_.empty()) return;
  storage_error_ = what;
  progress("storage error: " + what + "; stopping the campaign");
}

// Journal events that must be on disk before the campaign goes on (a round about to be sent, a
// round ended) are synced now; the others (joined, lost) with the next batch of acknowledgements.
void Campaign::journal(const std::string& event, json fields, bool sync_now) {
  if (!storage_error_.empty()) return;
  try {
    journal_->note(event, std::move(fields));
    journal_dirty_ = !sync_now;
    if (sync_now) journal_->sync();
  } catch (const StorageError& e) {
    storage_failed(e.what());
  }
}

// Connections come and go with their ranks: a worker rank carries itself, a node agent its node.
void Campaign::joined(const Event& e) {
  auto& mine = sessions_[e.session];
  for (std::size_t i = 0; i < e.hello.ranks.size(); ++i) {
    const int r = e.hello.ranks[i];
    auto& st = ranks_[r];
    if (!st.joined || st.lost) ++live_;
    if (st.lost && st.lost_reason != "bye" && st.earlier_loss.empty()) st.earlier_loss = st.lost_reason;
    st.rank = r;
    st.host = e.hello.host;
    st.session = e.session;
    st.joined = true;
    st.lost = false;
    st.said_bye = false;  // a rank back after a restart
    st.info = e.hello.info_of(i);  // a node agent's hello says each rank's own place and GPUs
    mine.push_back(r);
    NodeInfo node = st.info;
    node.host = st.host;
    fleet_.add_node(node);
    journal("joined", {{"rank", r}, {"host", st.host}, {"info", st.info}}, false);
  }
  // One line per connection while there are few; a count every few seconds when there are many.
  const std::string counts = "(" + std::to_string(live_) + "/" + std::to_string(opts_.ranks) + ")";
  if (opts_.ranks <= 64) {
    progress((mine.size() == 1 ? "rank " + std::to_string(mine.front()) : std::to_string(mine.size()) + " ranks") +
             " on " + e.hello.host + " connected " + counts);
  } else if (live_ == opts_.ranks || seconds_since(last_join_note_) > 5) {
    last_join_note_ = Clock::now();
    progress(std::to_string(live_) + " of " + std::to_string(opts_.ranks) + " ranks connected");
  }
}

void Campaign::lose(RankState& st, const std::string& reason) {
  if (st.lost) return;
  st.lost = true;
  st.lost_reason = reason;
  newly_lost_.push_back(st.rank);
  if (st.joined) --live_;
}

void Campaign::left(const Event& e) {
  auto it = sessions_.find(e.session);
  if (it == sessions_.end()) return;
  for (int r : it->second) {
    auto& st = ranks_.at(r);
    if (st.session != e.session || st.lost) continue;
    // After our bye, or theirs, leaving is the normal end of a worker.
    const bool bye = ending_ || restarting_ || st.said_bye;
    lose(st, bye ? "bye" : e.reason);
    if (!bye) progress("lost rank " + std::to_string(r) + " on " + st.host + ": " + e.reason);
  }
  sessions_.erase(it);
}

void Campaign::handle(Event& e, Acks& acks) {
  switch (e.kind) {
    case Event::Kind::Joined:
      joined(e);
      return;
    case Event::Kind::Left:
      left(e);
      return;
    case Event::Kind::Rejected:
      ++rejected_;
      return;
    case Event::Kind::Message:
      break;
  }
  // Nothing more is taken from a connection once it is closed for cause (events already queued
  // from it included).
  auto it = sessions_.find(e.session);
  if (it == sessions_.end() || closed_.count(e.session)) return;
  std::visit([&](auto& m) { on_message(e, it->second, m, acks); }, e.msg);
}

// Closes a connection that broke the protocol or claimed what is not its own: every rank it
// carries is lost (a finding), and nothing more it sent is taken.
void Campaign::close_for_cause(SessionId session, const std::vector<int>& ranks, const std::string& why) {
  const auto who = ranks.size() == 1 ? "rank " + std::to_string(ranks.front()) + "'s connection"
                                     : "the connection of " + std::to_string(ranks.size()) + " ranks";
  spdlog::warn("closing {}: it sent {}", who, printable(why));
  for (int r : ranks) lose(ranks_.at(r), "it sent " + printable(why));
  closed_.insert(session);
  server_->close(session, "it sent " + printable(why));
}

// A node agent's connection carries its node's other ranks too: one dead or hung rank of the node
// must not take them down, so the connection closes only once none of its ranks is left.
void Campaign::close_if_all_lost(SessionId session, const std::string& why) {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  for (int r : it->second)
    if (!ranks_.at(r).lost) return;
  server_->close(session, why);
}

// The authenticated session says who sent a record: it must name one of the connection's ranks
// and that rank's host, an entity its node owns, and the running round.
std::string Campaign::not_owned(SessionId session, int rank, const std::string& host, const Entity* entity,
                                std::int64_t round_id) const {
  auto it = ranks_.find(rank);
  if (it == ranks_.end() || it->second.session != session || host != it->second.host)
    return "a record for rank " + std::to_string(rank) + " on '" + host + "'";
  if (entity && !may_report(*entity, rank, host))
    return "a record about " + entity->kind + " '" + entity->id + "', which is not on its node";
  if (!current_ || round_id != current_->round.id)
    return "a record for round " + std::to_string(round_id) + ", which is not running";
  return "";
}

// A batch is stored whole or not at all: one record that is not the connection's own closes it,
// and none of the batch is kept. Otherwise its lines go to results.jsonl as received, in one
// write, and are acknowledged together once synced (in pump).
void Campaign::on_message(const Event& e, std::vector<int>& mine, proto::Records& b, Acks& acks) {
  for (const auto& rec : b.records) {
    const auto why = std::visit(
        [&](const auto& v) {
          const Entity* entity = nullptr;
          if constexpr (std::is_same_v<std::decay_t<decltype(v)>, Result>) entity = &v.entity;
          return not_owned(e.session, v.rank, v.host, entity, v.round_id);
        },
        rec);
    if (!why.empty()) return close_for_cause(e.session, mine, why);
  }
  if (!storage_error_.empty()) return;
  try {
    store_->append_lines(b.lines);
  } catch (const StorageError& err) {
    storage_failed(err.what());  // not acknowledged: the worker still holds them
    return;
  }
  for (auto& rec : b.records) {
    const int rank = std::visit([](const auto& v) { return v.rank; }, rec);
    attach(std::move(rec), ranks_.at(rank));
  }
  acks.emplace_back(e.session, b.last_seq);
}

void Campaign::on_message(const Event& e, std::vector<int>& mine, proto::Done& d, Acks&) {
  if (std::find(mine.begin(), mine.end(), d.rank) == mine.end())
    return close_for_cause(e.session, mine, "a 'done' for rank " + std::to_string(d.rank));
  if (current_ && d.round_id == current_->round.id) current_->done.insert(d.rank);
}

void Campaign::on_message(const Event& e, std::vector<int>& mine, proto::Error& er, Acks&) {
  spdlog::warn("{} reports {}: {}", e.peer, printable(er.code, 64), printable(er.message));
  for (int r : mine) ranks_.at(r).lost_reason = printable(er.code, 64) + ": " + printable(er.message);
}

void Campaign::on_message(const Event&, std::vector<int>& mine, proto::Bye&, Acks&) {
  for (int r : mine) ranks_.at(r).said_bye = true;
}
// The ranks' progress, kept to tell, if a group check overruns, which members it waited for.
void Campaign::on_message(const Event&, std::vector<int>& mine, proto::Heartbeat& h, Acks&) {
  for (auto& p : h.progress)
    if (std::find(mine.begin(), mine.end(), p.rank) != mine.end()) ranks_.at(p.rank).progress = std::move(p);
}

// A record is counted in the round it names (not_owned() lets through only the current round's),
// so that the report counts what results.jsonl holds; only what judgement reads is kept in memory.
void Campaign::attach(Record rec, RankState& st) {
  if (auto* r = std::get_if<Result>(&rec)) st.counts.add(*r);
  const auto id = std::visit([](const auto& v) { return v.round_id; }, rec);
  for (auto it = rounds_.rbegin(); it != rounds_.rend(); ++it) {
    if (it->round.id != id) continue;
    if (auto* r = std::get_if<Result>(&rec)) {
      if (it->phase == Phase::Plan) fleet_.add_record(*r);
      ++it->result_count;
      ++it->by_test[r->test][to_string(r->status)];
      if (analysis::kept_for_judgement(*it, *r) || analysis::kept_for_expectations(opts_.expect, *r))
        it->results.push_back(std::move(*r));
    } else {
      it->ends.push_back(std::get<CheckEnd>(std::move(rec)));
    }
    return;
  }
  if (auto* r = std::get_if<Result>(&rec)) unattached_.push_back(std::move(*r));
}

// Every rank lost mid-campaign goes to the journal once, whoever noticed it (a closed connection,
// a missed deadline, a record it did not own), so that kiln report sees the fates the campaign saw.
void Campaign::journal_losses() {
  const auto newly = std::move(newly_lost_);  // not every rank: this runs once per pass of events
  newly_lost_.clear();
  for (int r : newly) {
    auto& st = ranks_.at(r);
    if (!st.lost || st.lost_reason == "bye" || st.loss_journaled) continue;
    st.loss_journaled = true;
    journal("lost", {{"rank", r}, {"host", st.host}, {"reason", st.lost_reason}}, false);
  }
}

void Campaign::pump(Clock::time_point until) {
  auto batch = events_.take_all(until);
  Acks acks;
  for (auto& e : batch) handle(e, acks);
  journal_losses();
  if (!acks.empty()) {
    try {
      store_->sync();  // on disk before anyone is told it is safe
      for (auto [s, seq] : acks) server_->ack(s, seq);
      spdlog::debug("{} record(s) on disk, acknowledged", store_->count());
    } catch (const StorageError& e) {
      storage_failed(e.what());  // not acknowledged: the worker still holds them
    }
  }
  if (journal_dirty_ && storage_error_.empty()) {
    try {
      journal_->sync();
      journal_dirty_ = false;
    } catch (const StorageError& e) {
      storage_failed(e.what());
    }
  }
  if (!launch_end_ && !restarting_) launch_end_ = launcher_.poll();  // a restart's end is no end
}

bool Campaign::wait_for_workers() {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(opts_.connect_timeout_s));
  auto last_note = Clock::now();
  std::string last_progress;
  while (live_ < opts_.ranks) {
    if (Clock::now() >= deadline || stopping()) return false;
    pump(std::min(deadline, Clock::now() + std::chrono::milliseconds(200)));
    if (launch_end_) return false;
    auto p = launcher_.progress();
    if (!p.empty() && (p != last_progress || seconds_since(last_note) > 10)) {
      progress(p);
      last_progress = p;
      last_note = Clock::now();
    }
  }
  return true;
}

namespace {
std::vector<proto::RankProgress> progress_list(const RoundRecord& rr) {
  std::vector<proto::RankProgress> out;
  for (const auto& [rank, p] : rr.progress) out.push_back(p);
  return out;
}
}  // namespace

// Closes the current round: late results, the ranks that did not finish (lost from now on), and
// the journal's round_end, which is what makes the round count when it is judged.
void Campaign::end_round(bool cut, Clock::time_point start) {
  const auto id = current_->round.id;
  // Late results already queued still belong to this round.
  pump(Clock::now());
  // Every rank gone at once: most likely the job ended under us, which the launcher may see a poll
  // or two later. Then the round was cut short, not failed by its ranks.
  for (const auto until = Clock::now() + std::chrono::seconds(10);
       !cut && !launch_end_ && live_ranks().empty() && Clock::now() < until;)
    pump(std::min(until, Clock::now() + std::chrono::milliseconds(200)));
  cut = cut || stopping() || (live_ranks().empty() && launch_end_ && !launch_end_->ok);
  for (int r : current_->expected) {
    if (!current_->done.count(r)) current_->missing.insert(r);
    const auto& p = ranks_.at(r).progress;
    if (p && p->round == id) {
      current_->progress[r] = *p;
      spdlog::debug("round {}: rank {} last said {} ops in {}, waiting on peer {}, stalled {:.1f} s", id, r, p->ops,
                    printable(p->check, 64), p->waiting_on, p->stalled_s);
    }
  }
  // A rank that did not finish within the round's deadline and slack is dead or hung: leave it
  // out of later rounds rather than waiting for it again, and say so.
  for (int r : current_->missing) {
    auto& st = ranks_.at(r);
    if (st.lost || cut) continue;  // an interrupted round proves nothing about its ranks
    lose(st, "did not finish round " + std::to_string(id) + " within its deadline");
    progress("lost rank " + std::to_string(r) + " on " + st.host + ": " + st.lost_reason);
    close_if_all_lost(st.session, st.lost_reason);
  }
  journal_losses();
  current_->duration_s = seconds_since(start);
  if (!cut) {
    journal("round_end", {{"id", id}, {"done", current_->done}, {"missing", current_->missing},
                          {"duration_s", current_->duration_s}, {"progress", progress_list(*current_)}}, true);
    current_->finished = storage_error_.empty();  // judged only once the journal says it ended
  }
  ++rounds_done_;
  const auto estimate = estimate_text(id);
  progress("round " + std::to_string(id) + (current_->finished ? " ended: " : " cut short: ") +
           std::to_string(current_->done.size()) + "/" + std::to_string(current_->expected.size()) +
           " ranks done, " + std::to_string(current_->result_count) + " results; " +
           std::to_string(store_->count()) + " records on disk" + (estimate.empty() ? "" : "; " + estimate));
}

RoundRecord Campaign::run_round(proto::Round round, const std::string& reason, Phase phase, int plan_index) {
  round.id = next_round_id_++;
  const auto live = live_ranks();
  if (round.groups.empty()) round.groups.push_back(std::vector<int>(live.begin(), live.end()));
  RoundRecord rec;
  rec.round = round;
  rec.reason = reason;
  rec.phase = phase;
  rec.expected = live;
  rec.finished = false;  // until the journal says it ended
  rounds_.push_back(std::move(rec));
  current_ = &rounds_.back();
  // On disk before any worker hears of it: a record naming this round always has its round.
  json ev = {{"id", round.id}, {"tests", round.tests}, {"groups", round.groups}, {"reason", reason},
             {"phase", phase == Phase::Localize ? "localize" : "plan"}, {"expected", live},
             {"deadline_s", round.deadline_s}};
  if (plan_index >= 0) ev["plan_index"] = plan_index;
  journal("round", std::move(ev), true);
  std::string names;
  for (const auto& t : round.tests) names += (names.empty() ? "" : ",") + t.key;
  progress("round " + std::to_string(round.id) + ": " + names + " on " + std::to_string(live.size()) + " ranks, " +
           std::to_string(round.groups.size()) + " group(s)" + (reason.empty() ? "" : " - " + reason));
  const auto start = Clock::now();
  if (!first_round_) first_round_ = start;
  if (storage_error_.empty()) {
    send_round(round, live);
  }
  const double budget = round.deadline_s * static_cast<double>(std::max<std::size_t>(1, round.tests.size())) + 15.0;
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(budget));
  std::size_t shown = 0;
  auto last_note = Clock::now();
  bool cut = false;  // ended by the job, a signal or the disk, not by its ranks or its deadline
  // The first rank still owed: a rank done or lost stays so, so the cursor only moves forward and
  // the whole wait costs O(ranks), not O(ranks) per batch of events.
  auto owed = current_->expected.begin();
  const auto settled = [&](int r) { return current_->done.count(r) || ranks_.at(r).lost; };
  for (;;) {
    while (owed != current_->expected.end() && settled(*owed)) ++owed;
    if (owed == current_->expected.end() || Clock::now() >= deadline) break;
    if (launch_end_ || stopping()) {
      cut = true;
      break;
    }
    pump(std::min(deadline, Clock::now() + std::chrono::milliseconds(500)));
    // Each change while there are few ranks; every few seconds when there are many.
    const bool changed = current_->done.size() != shown;
    if ((changed && (current_->expected.size() <= 64 || seconds_since(last_note) > 2)) || seconds_since(last_note) > 10) {
      shown = current_->done.size();
      last_note = Clock::now();
      show_status(round.id, "round " + std::to_string(round.id) + ": " + std::to_string(shown) + "/" +
                                std::to_string(current_->expected.size()) + " ranks done, " +
                                std::to_string(current_->result_count) + " results");
    }
  }
  end_round(cut, start);
  RoundRecord out = *current_;
  current_ = nullptr;
  if (out.finished) restart_if_untrusted(out);
  return out;
}

void Campaign::say_goodbye(const std::string& reason, std::chrono::seconds wait) {
  ending_ = true;
  for (auto session : sessions_of(live_ranks())) server_->send(session, proto::wrap(proto::Bye{reason}));
  // Workers close after their last result is acknowledged; wait for that, then for the launcher.
  const auto deadline = Clock::now() + wait;
  while (Clock::now() < deadline && live_ > 0) {
    pump(std::min(deadline, Clock::now() + std::chrono::milliseconds(200)));
  }
  for (auto& [r, st] : ranks_)
    if (st.joined && !st.lost) lose(st, "bye");  // did not leave cleanly, but the campaign is over: not a finding
  pump(Clock::now());
  auto end = launcher_.finish(wait);
  if (!launch_end_) launch_end_ = end;
}

}  // namespace kiln::coord
