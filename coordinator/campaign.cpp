// The campaign's rounds and messages: every record kept on disk before it is acknowledged, every
// round journaled when it starts and when it ends. Starting, resuming and ending a campaign are in
// campaign_session.cpp.
#include "coordinator/campaign.hpp"

#include <unistd.h>

#include <atomic>
#include <iostream>

#include <spdlog/spdlog.h>

#include "common/text.hpp"
#include "coordinator/journal.hpp"
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

Campaign::Campaign(CampaignOptions opts, Launcher& launcher) : opts_(std::move(opts)), launcher_(launcher) {}
Campaign::~Campaign() {
  if (server_) server_->stop();
}

void Campaign::progress(const std::string& line) const {
  if (!opts_.quiet) std::cerr << "kiln: " << printable(line, 2000) << std::endl;
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

void Campaign::handle(Event& e, Acks& acks) {
  switch (e.kind) {
    case Event::Kind::Joined: {
      auto& st = ranks_[e.rank];
      st.rank = e.rank;
      st.host = e.hello.host;
      st.session = e.session;
      st.joined = true;
      st.lost = false;
      st.info = e.hello.info;
      journal("joined", {{"rank", e.rank}, {"host", st.host}, {"info", st.info}}, false);
      progress("rank " + std::to_string(e.rank) + " on " + st.host + " connected (" +
               std::to_string(live_ranks().size()) + "/" + std::to_string(opts_.ranks) + ")");
      return;
    }
    case Event::Kind::Left: {
      auto it = ranks_.find(e.rank);
      if (it == ranks_.end() || it->second.session != e.session) return;
      if (!it->second.lost) {
        it->second.lost = true;
        // After our bye, or theirs, leaving is the normal end of a worker.
        it->second.lost_reason = ending_ || it->second.said_bye ? "bye" : e.reason;
        if (!ending_) progress("lost rank " + std::to_string(e.rank) + " on " + it->second.host + ": " + e.reason);
      }
      return;
    }
    case Event::Kind::Rejected:
      ++rejected_;
      return;
    case Event::Kind::Message:
      break;
  }
  auto it = ranks_.find(e.rank);
  // Nothing more is taken from a connection once it is closed for cause (events already queued
  // from it included).
  if (it == ranks_.end() || it->second.session != e.session || it->second.lost) return;
  RankState& st = it->second;
  std::visit([&](auto& m) { on_message(e, st, m, acks); }, e.msg);
}

// The authenticated session says who sent a record: a record that claims another rank or host,
// an entity its node does not own, or a round that is not running is not stored, and the
// connection is closed (the rank is then lost, which is a finding).
bool Campaign::owned(const Event& e, RankState& st, int rank, const std::string& host, const Entity* entity,
                     std::int64_t round_id) {
  std::string why;
  if (rank != e.rank || host != st.host)
    why = "a record for rank " + std::to_string(rank) + " on '" + host + "'";
  else if (entity && !may_report(*entity, e.rank, st.host))
    why = "a record about " + entity->kind + " '" + entity->id + "', which is not on its node";
  else if (!current_ || round_id != current_->round.id)
    why = "a record for round " + std::to_string(round_id) + ", which is not running";
  if (why.empty()) return true;
  spdlog::warn("closing rank {}'s connection: it sent {}", e.rank, printable(why));
  st.lost = true;
  st.lost_reason = "it sent " + printable(why);
  server_->close(e.session, st.lost_reason);
  return false;
}

// Writes a record to results.jsonl (synced before it is acknowledged, in pump) and files it with
// its round. False when the disk refused it: it is not acknowledged, and the campaign stops.
bool Campaign::keep(Record rec, RankState& st) {
  if (!storage_error_.empty()) return false;
  try {
    store_->append(rec);
  } catch (const StorageError& e) {
    storage_failed(e.what());
    return false;
  }
  attach(std::move(rec), st);
  return true;
}

// A record is counted in the round it names (owned() lets through only the current round's), so
// that the report counts what results.jsonl holds; only what judgement reads is kept in memory.
void Campaign::attach(Record rec, RankState& st) {
  if (auto* r = std::get_if<Result>(&rec)) st.counts.add(*r);
  const auto id = std::visit([](const auto& v) { return v.round_id; }, rec);
  for (auto it = rounds_.rbegin(); it != rounds_.rend(); ++it) {
    if (it->round.id != id) continue;
    if (auto* r = std::get_if<Result>(&rec)) {
      ++it->result_count;
      ++it->by_test[r->test][to_string(r->status)];
      if (analysis::kept_for_judgement(*it, *r)) it->results.push_back(std::move(*r));
    } else {
      it->ends.push_back(std::get<CheckEnd>(std::move(rec)));
    }
    return;
  }
  if (auto* r = std::get_if<Result>(&rec)) unattached_.push_back(std::move(*r));
}

void Campaign::on_message(const Event& e, RankState& st, proto::ResultMsg& m, Acks& acks) {
  if (!owned(e, st, m.result.rank, m.result.host, &m.result.entity, m.result.round_id)) return;
  if (keep(std::move(m.result), st)) acks.emplace_back(e.session, m.seq);
}

void Campaign::on_message(const Event& e, RankState& st, proto::EndMsg& m, Acks& acks) {
  if (!owned(e, st, m.end.rank, m.end.host, nullptr, m.end.round_id)) return;
  if (keep(std::move(m.end), st)) acks.emplace_back(e.session, m.seq);
}

void Campaign::on_message(const Event& e, RankState&, proto::Done& d, Acks&) {
  if (current_ && d.round_id == current_->round.id) current_->done.insert(e.rank);
}

void Campaign::on_message(const Event& e, RankState& st, proto::Error& er, Acks&) {
  spdlog::warn("rank {} on {} reports {}: {}", e.rank, st.host, printable(er.code, 64), printable(er.message));
  st.lost_reason = printable(er.code, 64) + ": " + printable(er.message);
}

void Campaign::on_message(const Event&, RankState& st, proto::Bye&, Acks&) { st.said_bye = true; }
void Campaign::on_message(const Event&, RankState&, proto::Heartbeat&, Acks&) {}

// Every rank lost mid-campaign goes to the journal once, whoever noticed it (a closed connection,
// a missed deadline, a record it did not own), so that kiln report sees the fates the campaign saw.
void Campaign::journal_losses() {
  for (auto& [r, st] : ranks_) {
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
  if (!launch_end_) launch_end_ = launcher_.poll();
}

bool Campaign::wait_for_workers() {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(opts_.connect_timeout_s));
  auto last_note = Clock::now();
  std::string last_progress;
  while (static_cast<int>(live_ranks().size()) < opts_.ranks) {
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
  for (int r : current_->expected)
    if (!current_->done.count(r)) current_->missing.insert(r);
  // A rank that did not finish within the round's deadline and slack is dead or hung: leave it
  // out of later rounds rather than waiting for it again, and say so.
  for (int r : current_->missing) {
    auto& st = ranks_.at(r);
    if (st.lost || cut) continue;  // an interrupted round proves nothing about its ranks
    st.lost = true;
    st.lost_reason = "did not finish round " + std::to_string(id) + " within its deadline";
    progress("lost rank " + std::to_string(r) + " on " + st.host + ": " + st.lost_reason);
    server_->close(st.session, st.lost_reason);
  }
  journal_losses();
  current_->duration_s = seconds_since(start);
  if (!cut) {
    journal("round_end", {{"id", id}, {"done", current_->done}, {"missing", current_->missing},
                          {"duration_s", current_->duration_s}}, true);
    current_->finished = storage_error_.empty();  // judged only once the journal says it ended
  }
  progress("round " + std::to_string(id) + (current_->finished ? " ended: " : " cut short: ") +
           std::to_string(current_->done.size()) + "/" + std::to_string(current_->expected.size()) +
           " ranks done, " + std::to_string(current_->result_count) + " results; " +
           std::to_string(store_->count()) + " records on disk");
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
  if (storage_error_.empty()) {
    const auto msg = proto::wrap(round);
    for (int r : live) server_->send(ranks_.at(r).session, msg);
  }
  const double budget = round.deadline_s * static_cast<double>(std::max<std::size_t>(1, round.tests.size())) + 15.0;
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(budget));
  std::size_t shown = 0;
  auto last_note = Clock::now();
  bool cut = false;  // ended by the job, a signal or the disk, not by its ranks or its deadline
  for (;;) {
    std::set<int> waiting;
    for (int r : current_->expected)
      if (!current_->done.count(r) && !ranks_.at(r).lost) waiting.insert(r);
    if (waiting.empty() || Clock::now() >= deadline) break;
    if (launch_end_ || stopping()) {
      cut = true;
      break;
    }
    pump(std::min(deadline, Clock::now() + std::chrono::milliseconds(500)));
    if (current_->done.size() != shown || seconds_since(last_note) > 10) {
      shown = current_->done.size();
      last_note = Clock::now();
      progress("round " + std::to_string(round.id) + ": " + std::to_string(shown) + "/" +
               std::to_string(current_->expected.size()) + " ranks done, " +
               std::to_string(current_->result_count) + " results");
    }
  }
  end_round(cut, start);
  RoundRecord out = *current_;
  current_ = nullptr;
  return out;
}

void Campaign::say_goodbye(const std::string& reason, std::chrono::seconds wait) {
  ending_ = true;
  for (int r : live_ranks()) server_->send(ranks_.at(r).session, proto::wrap(proto::Bye{reason}));
  // Workers close after their last result is acknowledged; wait for that, then for the launcher.
  const auto deadline = Clock::now() + wait;
  while (Clock::now() < deadline) {
    bool any = false;
    for (const auto& [r, st] : ranks_) any |= st.joined && !st.lost;
    if (!any) break;
    pump(std::min(deadline, Clock::now() + std::chrono::milliseconds(200)));
  }
  for (auto& [r, st] : ranks_)
    if (st.joined && !st.lost) {
      st.lost = true;  // did not leave cleanly, but the campaign is over: not a finding
      st.lost_reason = "bye";
    }
  pump(Clock::now());
  auto end = launcher_.finish(wait);
  if (!launch_end_) launch_end_ = end;
}

}  // namespace kiln::coord
