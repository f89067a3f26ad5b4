#include "coordinator/campaign.hpp"

#include <unistd.h>

#include <atomic>

#include <cstdio>
#include <iostream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "common/auth.hpp"
#include "common/hostlist.hpp"
#include "common/text.hpp"
#include "coordinator/report.hpp"
#include "coordinator/server.hpp"
#include "coordinator/store.hpp"

namespace kiln::coord {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {
// Set from a signal handler (SIGINT/SIGTERM), so it has to be a lock-free global.
std::atomic<int> g_stop_signal{0};
}  // namespace

void request_stop(int signal_number) { g_stop_signal.store(signal_number); }
int stop_requested() { return g_stop_signal.load(); }

namespace {
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string local_hostname() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}
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

void Campaign::on_message(const Event& e, RankState& st, proto::ResultMsg& m, Acks& acks) {
  if (!owned(e, st, m.result.rank, m.result.host, &m.result.entity, m.result.round_id)) return;
  store_->append(m.result);
  acks.emplace_back(e.session, m.seq);
  ++st.results;
  ++st.by_status[to_string(m.result.status)];
  ++current_->result_count;
  ++current_->by_test[m.result.test][to_string(m.result.status)];
  if (m.result.metric == "busbw" && m.result.size_bytes && *m.result.size_bytes > st.headline_size) {
    st.headline_size = *m.result.size_bytes;
    char h[96];
    std::snprintf(h, sizeof h, "%s busbw %.2f %s @ %lld B", m.result.test.c_str(), m.result.value,
                  m.result.unit.c_str(), static_cast<long long>(st.headline_size));
    st.headline = h;
  }
  if (kept_for_judgement(*current_, m.result)) current_->results.push_back(std::move(m.result));
}

void Campaign::on_message(const Event& e, RankState& st, proto::EndMsg& m, Acks& acks) {
  if (!owned(e, st, m.end.rank, m.end.host, nullptr, m.end.round_id)) return;
  store_->append(m.end);
  acks.emplace_back(e.session, m.seq);
  current_->ends.push_back(std::move(m.end));
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

void Campaign::pump(Clock::time_point until) {
  auto batch = events_.take_all(until);
  Acks acks;
  for (auto& e : batch) handle(e, acks);
  if (!acks.empty()) {
    store_->sync();  // on disk before anyone is told it is safe
    for (auto [s, seq] : acks) server_->ack(s, seq);
  }
  if (!launch_end_) launch_end_ = launcher_.poll();
}

bool Campaign::wait_for_workers() {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(opts_.connect_timeout_s));
  auto last_note = Clock::now();
  std::string last_progress;
  while (static_cast<int>(live_ranks().size()) < opts_.ranks) {
    if (Clock::now() >= deadline || stop_requested()) return false;
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

RoundRecord Campaign::run_round(proto::Round round, const std::string& reason, Phase phase) {
  round.id = next_round_id_++;
  const auto live = live_ranks();
  if (round.groups.empty()) round.groups.push_back(std::vector<int>(live.begin(), live.end()));
  RoundRecord rec;
  rec.round = round;
  rec.reason = reason;
  rec.phase = phase;
  rec.expected = live;
  rounds_.push_back(std::move(rec));
  current_ = &rounds_.back();
  std::string names;
  for (const auto& t : round.tests) names += (names.empty() ? "" : ",") + t.key;
  progress("round " + std::to_string(round.id) + ": " + names + " on " + std::to_string(live.size()) + " ranks, " +
           std::to_string(round.groups.size()) + " group(s)" + (reason.empty() ? "" : " - " + reason));
  const auto start = Clock::now();
  const auto msg = proto::wrap(round);
  for (int r : live) server_->send(ranks_.at(r).session, msg);
  const double budget = round.deadline_s * static_cast<double>(std::max<std::size_t>(1, round.tests.size())) + 15.0;
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(budget));
  std::size_t shown = 0;
  auto last_note = Clock::now();
  for (;;) {
    std::set<int> waiting;
    for (int r : current_->expected)
      if (!current_->done.count(r) && !ranks_.at(r).lost) waiting.insert(r);
    if (waiting.empty() || Clock::now() >= deadline || launch_end_ || stop_requested()) break;
    pump(std::min(deadline, Clock::now() + std::chrono::milliseconds(500)));
    if (current_->done.size() != shown || seconds_since(last_note) > 10) {
      shown = current_->done.size();
      last_note = Clock::now();
      progress("round " + std::to_string(round.id) + ": " + std::to_string(shown) + "/" +
               std::to_string(current_->expected.size()) + " ranks done, " +
               std::to_string(current_->result_count) + " results");
    }
  }
  // Late results already queued still belong to this round.
  pump(Clock::now());
  for (int r : current_->expected)
    if (!current_->done.count(r)) current_->missing.insert(r);
  // A rank that did not finish within the round's deadline and slack is dead or hung: leave it
  // out of later rounds rather than waiting for it again, and say so.
  for (int r : current_->missing) {
    auto& st = ranks_.at(r);
    if (st.lost || stop_requested()) continue;  // an interrupted round proves nothing about its ranks
    st.lost = true;
    st.lost_reason = "did not finish round " + std::to_string(round.id) + " within its deadline";
    progress("lost rank " + std::to_string(r) + " on " + st.host + ": " + st.lost_reason);
    server_->close(st.session, st.lost_reason);
  }
  current_->duration_s = seconds_since(start);
  RoundRecord out = *current_;
  current_ = nullptr;
  return out;
}

void Campaign::say_goodbye() {
  ending_ = true;
  for (int r : live_ranks()) server_->send(ranks_.at(r).session, proto::wrap(proto::Bye{"campaign finished"}));
  // Workers close after their last result is acknowledged; wait for that, then for the launcher.
  const auto deadline = Clock::now() + std::chrono::seconds(20);
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
  auto end = launcher_.finish(std::chrono::seconds(20));
  if (!launch_end_) launch_end_ = end;
}

std::vector<Finding> Campaign::findings() const {
  std::vector<analysis::RankFate> fates;
  for (const auto& [r, st] : ranks_)
    fates.push_back({r, st.host, st.joined, st.lost && st.lost_reason != "bye", st.lost_reason});
  auto out = analysis::judge_plan(opts_.ranks, fates, rounds_);
  out.insert(out.end(), extra_findings_.begin(), extra_findings_.end());
  return out;
}


Report Campaign::report(const std::string& verdict, const std::string& error) const {
  Report rep;
  rep.run_id = opts_.run_id;
  rep.verdict = verdict;
  rep.error = error;
  rep.launcher = launcher_.name();
  rep.started = std::chrono::duration<double>(started_.time_since_epoch()).count();
  rep.duration_s = std::chrono::duration<double>(std::chrono::system_clock::now() - started_).count();
  std::map<std::string, std::vector<int>> by_host;
  for (const auto& [r, st] : ranks_)
    if (st.joined) by_host[st.host].push_back(r);
  std::vector<std::string> hosts;
  for (const auto& [host, rs] : by_host) {
    rep.nodes.push_back({host, rs, ranks_.at(rs.front()).info});
    hosts.push_back(host);
  }
  rep.hostlist = hosts.empty() ? std::string() : hostlist::compress(hosts);
  for (const auto& rr : rounds_) {
    rep.results_total += rr.result_count;
    for (const auto& [test, by_status] : rr.by_test)
      for (const auto& [status, n] : by_status) {
        rep.results_by_status[status] += n;
        rep.results_by_test[test][status] += n;
      }
    for (const auto& e : rr.ends) ++rep.checks_by_test[e.test][to_string(e.status)];
    rep.rounds.push_back({rr.round.id, rr.round.tests, rr.round.groups, rr.reason,
                          rr.phase == Phase::Localize ? "localize" : "plan", rr.duration_s,
                          std::vector<int>(rr.done.begin(), rr.done.end()),
                          std::vector<int>(rr.missing.begin(), rr.missing.end()), rr.result_count});
  }
  for (int r = 0; r < opts_.ranks; ++r) {
    auto it = ranks_.find(r);
    if (it == ranks_.end()) {
      rep.ranks.push_back({r, "", "missing", 0, {}, ""});
      continue;
    }
    const auto& st = it->second;
    rep.ranks.push_back({r, st.host, st.lost && st.lost_reason != "bye" ? "lost" : "ok", st.results, st.by_status,
                         st.headline});
  }
  if (!(verdict == "error" && !error.empty())) rep.findings = findings();
  rep.rejected_connections = rejected_;
  rep.localization = localization_;
  if (launch_end_) rep.launch = LaunchRow{launch_end_->ok, launch_end_->state};
  return rep;
}

void Campaign::write_report_and_summary(const std::string& verdict, const std::string& error) {
  const auto rep = report(verdict, error);
  write_json_atomic(opts_.out / "report.json", rep);
  std::cout << render_summary(rep, (opts_.out / "results.jsonl").string(), (opts_.out / "report.json").string())
            << std::flush;
}

int Campaign::run() {
  started_ = std::chrono::system_clock::now();
  const fs::path secret_file = opts_.out / "secret";
  const std::string secret = auth::create_secret_file(secret_file);
  store_ = std::make_unique<ResultStore>(opts_.out);  // locks the run: one coordinator at a time
  fsync_dir(opts_.out);  // the names of the secret and results.jsonl survive a crash
  ServerOptions so;
  so.listen = opts_.listen;
  so.secret = secret;
  so.run_id = opts_.run_id;
  so.world_size = opts_.ranks;
  so.allowed_hosts = opts_.allowed_hosts;
  so.allowed_peers = opts_.allowed_peers;
  const long files = raise_file_limit();
  if (files > 0 && files < opts_.ranks + 64)
    spdlog::warn("the open-file limit is {}, fewer than {} ranks need; raise it (ulimit -n)", files, opts_.ranks);
  server_ = std::make_unique<ResultServer>(so, events_);
  server_->start();
  auto ep = server_->local_endpoint();
  std::string host = opts_.advertise_host;
  if (host.empty()) host = (ep.host == "0.0.0.0" || ep.host == "::") ? local_hostname() : ep.host;
  const std::string coordinator = host + ":" + std::to_string(ep.port);
  write_json_atomic(opts_.out / "campaign.json", {{"schema_version", kSchemaVersion},
                                                  {"run_id", opts_.run_id},
                                                  {"coordinator", coordinator},
                                                  {"secret_file", fs::absolute(secret_file).string()},
                                                  {"ranks", opts_.ranks},
                                                  {"launcher", launcher_.name()}});
  progress("run " + opts_.run_id + ": listening on " + coordinator + ", launching " + std::to_string(opts_.ranks) +
           " rank(s) with " + launcher_.name());
  LaunchRequest req{coordinator, fs::absolute(secret_file), opts_.out, opts_.worker, opts_.ranks, opts_.launcher_args};
  try {
    launcher_.launch(req);
  } catch (const std::exception& e) {
    write_report_and_summary("error", std::string("launch failed: ") + e.what());
    return 2;
  }
  // Ctrl-C or a scheduler's SIGTERM: stop the workers (scancel on SLURM), keep what arrived, say so.
  auto interrupted = [&] {
    if (!stop_requested()) return false;
    progress("interrupted by signal " + std::to_string(stop_requested()) + ": stopping the workers");
    launch_end_ = launcher_.finish(std::chrono::seconds(0));
    write_report_and_summary("error", "interrupted by signal " + std::to_string(stop_requested()) +
                                          "; results received so far are kept");
    return true;
  };
  if (!wait_for_workers()) {
    if (interrupted()) return 2;
    std::string why;
    if (launch_end_)
      why = "the " + launcher_.name() + " job ended (" + launch_end_->state + ") before all workers connected";
    else
      why = "only " + std::to_string(live_ranks().size()) + " of " + std::to_string(opts_.ranks) +
            " workers connected within " + std::to_string(static_cast<int>(opts_.connect_timeout_s)) + " s" +
          (launcher_.progress().empty() ? "" : " (" + launcher_.progress() + ")");  // e.g. job 7 PENDING (Resources)
    if (live_ranks().empty()) {
      launch_end_ = launcher_.finish(std::chrono::seconds(2));
      write_report_and_summary("error", why + " (see " + (opts_.out / "workers.log").string() + ")");
      return 2;
    }
    progress(why + "; going on with the ranks that did");
  }
  for (const auto& t : opts_.tests) {
    proto::Round round;
    round.tests = {t};
    round.deadline_s = opts_.test_deadline_s;
    run_round(round, "");
    if ((launch_end_ && !launch_end_->ok) || live_ranks().empty() || stop_requested()) break;  // nobody left to run it
  }
  if (interrupted()) return 2;
  if (opts_.localize && !(launch_end_ && !launch_end_->ok)) {
    auto [found, section] = opts_.localize(*this);
    extra_findings_.insert(extra_findings_.end(), found.begin(), found.end());
    localization_ = std::move(section);
    if (interrupted()) return 2;
  }
  // Every rank gone before our bye: the job ended under us (scancel, a node failure, a time
  // limit). The launcher may see that a poll or two later; wait briefly so the report says so.
  for (const auto until = Clock::now() + std::chrono::seconds(10);
       !launch_end_ && live_ranks().empty() && Clock::now() < until;)
    pump(std::min(until, Clock::now() + std::chrono::milliseconds(200)));
  if (launch_end_ && !launch_end_->ok) {
    say_goodbye();
    write_report_and_summary("error", "the " + launcher_.name() +
                                          " job ended before the campaign finished: " + launch_end_->state);
    return 2;
  }
  say_goodbye();
  const auto fs_ = findings();
  const bool job_failed = launch_end_ && !launch_end_->ok && live_ranks().empty() && fs_.empty();
  const std::string verdict = fs_.empty() && !job_failed ? "pass" : "fail";
  write_report_and_summary(verdict, "");
  return verdict == "pass" ? 0 : 1;
}

}  // namespace kiln::coord
