#include "coordinator/campaign.hpp"

#include <unistd.h>

#include <atomic>

#include <cstdio>
#include <iostream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "common/auth.hpp"
#include "common/hostlist.hpp"
#include "coordinator/catalog.hpp"
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
  if (!opts_.quiet) std::cerr << "kiln: " << line << std::endl;
}

std::set<int> Campaign::live_ranks() const {
  std::set<int> out;
  for (const auto& [r, st] : ranks_)
    if (st.joined && !st.lost) out.insert(r);
  return out;
}

void Campaign::handle(Event& e, std::vector<std::pair<SessionId, std::uint64_t>>& acks) {
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
  if (it == ranks_.end()) return;
  RankState& st = it->second;
  try {
    switch (proto::type_of(e.msg)) {
      case proto::MsgType::Result: {
        auto m = proto::unwrap<proto::ResultMsg>(e.msg);
        // The authenticated session, not the message, says who sent it.
        m.result.rank = e.rank;
        if (m.result.host.empty()) m.result.host = st.host;
        if (m.result.entity.kind.empty()) m.result.entity = {"rank", std::to_string(e.rank)};
        store_->append(m.result);
        acks.emplace_back(e.session, m.seq);
        ++st.results;
        ++st.by_status[to_string(m.result.status)];
        if (current_ && m.result.round_id == current_->round.id) current_->results.push_back(std::move(m.result));
        return;
      }
      case proto::MsgType::Done: {
        auto d = proto::unwrap<proto::Done>(e.msg);
        if (current_ && d.round_id == current_->round.id) current_->done.insert(e.rank);
        return;
      }
      case proto::MsgType::Error: {
        auto er = proto::unwrap<proto::Error>(e.msg);
        spdlog::warn("rank {} on {} reports {}: {}", e.rank, st.host, er.code, er.message);
        st.lost_reason = er.code + ": " + er.message;
        return;
      }
      case proto::MsgType::Bye:
        st.said_bye = true;
        return;
      case proto::MsgType::Heartbeat:
        return;
      default:
        throw proto::ProtocolError("unexpected message type");
    }
  } catch (const std::exception& ex) {
    spdlog::warn("closing rank {}'s connection: malformed message: {}", e.rank, ex.what());
    server_->close(e.session, std::string("malformed message: ") + ex.what());
  }
}

void Campaign::pump(Clock::time_point until) {
  auto batch = events_.take_all(until);
  std::vector<std::pair<SessionId, std::uint64_t>> acks;
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
  rounds_.push_back(RoundRecord{round, reason, phase, 0.0, live, {}, {}, {}});
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
               std::to_string(current_->results.size()) + " results");
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
  std::vector<Finding> out;
  for (int r = 0; r < opts_.ranks; ++r) {
    auto it = ranks_.find(r);
    if (it == ranks_.end() || !it->second.joined) {
      out.push_back(make_finding("rank.missing", {"rank", std::to_string(r)},
                                 "rank " + std::to_string(r) + " never connected to the coordinator"));
    } else if (it->second.lost && it->second.lost_reason != "bye") {
      out.push_back(make_finding("rank.lost", {"rank", std::to_string(r)},
                                 "rank " + std::to_string(r) + " on " + it->second.host + " was lost: " +
                                     it->second.lost_reason,
                                 nlohmann::json::array({{{"host", it->second.host}, {"reason", it->second.lost_reason}}})));
    }
  }
  // Results that did not pass become findings, one per (code, entity). A test names the catalog
  // code in extra.finding (or extra.problems[].code); otherwise the code is test.<status>.
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<const Result*>> bad;
  // Only the plan's rounds make findings here; the planner judges the localization rounds.
  auto judged_by_planner = [](const RoundRecord& rr) { return rr.phase == Phase::Localize; };
  for (const auto& rr : rounds_) {
    if (judged_by_planner(rr)) continue;
    for (const auto& r : rr.results) {
      if (r.status != Status::Fail && r.status != Status::Error && r.status != Status::Timeout) continue;
      if (r.metric == "status" && r.status == Status::Fail) continue;  // the measurement itself is the evidence
      std::vector<std::string> codes;
      if (r.extra.is_object() && r.extra.contains("problems") && r.extra["problems"].is_array())
        for (const auto& p : r.extra["problems"])
          if (p.is_object() && p.contains("code")) codes.push_back(p["code"].get<std::string>());
      if (codes.empty() && r.extra.is_object() && r.extra.contains("finding") && r.extra["finding"].is_string())
        codes.push_back(r.extra["finding"].get<std::string>());
      if (codes.empty()) codes.push_back("test." + to_string(r.status));
      for (const auto& c : codes) bad[{c, r.entity.kind, r.entity.id}].push_back(&r);
    }
  }
  for (const auto& [key, rs] : bad) {
    const auto& [code, kind, id] = key;
    nlohmann::json ev = nlohmann::json::array();
    for (std::size_t i = 0; i < rs.size() && i < 5; ++i) ev.push_back(*rs[i]);
    const Result& first = *rs.front();
    std::string summary = first.test + " " + to_string(first.status) + " on " + kind + " " + id + " (" + first.host + ")";
    if (!first.reason.empty()) summary += ": " + first.reason;
    if (rs.size() > 1) summary += " [" + std::to_string(rs.size()) + " results]";
    out.push_back(make_finding(code, {kind, id}, summary, ev));
  }
  for (const auto& rr : rounds_)
    for (int r : judged_by_planner(rr) ? std::set<int>{} : rr.missing) {
      auto it = ranks_.find(r);
      if (it != ranks_.end() && it->second.lost) continue;  // already a rank.lost finding
      out.push_back(make_finding("test.timeout", {"rank", std::to_string(r)},
                                 "rank " + std::to_string(r) + " did not finish round " + std::to_string(rr.round.id) +
                                     " before its deadline",
                                 nlohmann::json::array({{{"round", rr.round.id}, {"duration_s", rr.duration_s}}})));
    }
  out.insert(out.end(), extra_findings_.begin(), extra_findings_.end());
  return out;
}

nlohmann::json Campaign::report(const std::string& verdict, const std::string& error) const {
  using nlohmann::json;
  json nodes = json::array();
  std::map<std::string, std::vector<int>> by_host;
  for (const auto& [r, st] : ranks_)
    if (st.joined) by_host[st.host].push_back(r);
  for (const auto& [host, rs] : by_host) {
    json info = ranks_.at(rs.front()).info;
    nodes.push_back({{"host", host}, {"ranks", rs}, {"info", info}});
  }
  std::map<std::string, std::uint64_t> by_status;
  std::map<std::string, std::map<std::string, std::uint64_t>> by_test;
  std::uint64_t total = 0;
  for (const auto& rr : rounds_)
    for (const auto& r : rr.results) {
      ++total;
      const auto s = to_string(r.status);
      ++by_status[s];
      ++by_test[r.test][s];
    }
  json ranks = json::array();
  for (int r = 0; r < opts_.ranks; ++r) {
    auto it = ranks_.find(r);
    if (it == ranks_.end()) {
      ranks.push_back({{"rank", r}, {"state", "missing"}});
      continue;
    }
    const auto& st = it->second;
    ranks.push_back({{"rank", r},
                     {"host", st.host},
                     {"state", st.lost && st.lost_reason != "bye" ? "lost" : "ok"},
                     {"results", st.results},
                     {"by_status", st.by_status.empty() ? json::object() : json(st.by_status)}});
  }
  json rounds = json::array();
  for (const auto& rr : rounds_)
    rounds.push_back({{"id", rr.round.id},
                      {"tests", rr.round.tests},
                      {"groups", rr.round.groups},
                      {"reason", rr.reason},
                      {"duration_s", rr.duration_s},
                      {"done", rr.done},
                      {"missing", rr.missing},
                      {"results", rr.results.size()}});
  std::vector<std::string> hosts;
  for (const auto& [h, _] : by_host) hosts.push_back(h);
  json rep = {{"schema_version", kSchemaVersion},
              {"run_id", opts_.run_id},
              {"verdict", verdict},
              {"launcher", launcher_.name()},
              {"started", std::chrono::duration<double>(started_.time_since_epoch()).count()},
              {"duration_s", std::chrono::duration<double>(std::chrono::system_clock::now() - started_).count()},
              {"hostlist", hosts.empty() ? std::string() : hostlist::compress(hosts)},
              {"nodes", nodes},
              {"ranks", ranks},
              {"results", {{"total", total},
                           {"by_status", by_status.empty() ? json::object() : json(by_status)},
                           {"by_test", by_test.empty() ? json::object() : json(by_test)}}},
              {"rounds", rounds},
              {"findings", verdict == "error" && !error.empty() ? json::array() : json(findings())},
              {"rejected_connections", rejected_},
              {"localization", localization_}};
  if (!error.empty()) rep["error"] = error;
  if (launch_end_) rep["launch"] = {{"ok", launch_end_->ok}, {"state", launch_end_->state}};
  return rep;
}

void Campaign::write_report_and_summary(const std::string& verdict, const std::string& error) {
  const auto rep = report(verdict, error);
  write_json_atomic(opts_.out / "report.json", rep);
  std::ostringstream os;
  std::string up = verdict;
  for (auto& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  os << "\nkiln run " << opts_.run_id << ": " << up << " - " << rep["nodes"].size() << " node(s), "
     << opts_.ranks << " rank(s), " << rounds_.size() << " round(s), " << rep["results"]["total"] << " results in "
     << static_cast<int>(rep["duration_s"].get<double>() + 0.5) << " s\n";
  if (!error.empty()) os << "  error: " << error << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-5s %-20s %-7s %7s %5s %5s %5s  %s\n", "rank", "host", "state", "results",
                "pass", "skip", "bad", "headline");
  os << line;
  for (const auto& r : rep["ranks"]) {
    const int rank = r["rank"];
    if (r["state"] == "missing") {
      std::snprintf(line, sizeof line, "  %-5d %-20s %-7s\n", rank, "-", "missing");
      os << line;
      continue;
    }
    const auto& bs = r["by_status"];
    const int bad = bs.value("fail", 0) + bs.value("error", 0) + bs.value("timeout", 0);
    // Headline: the busbw at the largest message size this rank measured.
    std::string headline;
    std::int64_t best_size = -1;
    for (const auto& rr : rounds_)
      for (const auto& res : rr.results)
        if (res.rank == rank && res.metric == "busbw" && res.size_bytes && *res.size_bytes > best_size) {
          best_size = *res.size_bytes;
          char h[96];
          std::snprintf(h, sizeof h, "%s busbw %.2f %s @ %lld B", res.test.c_str(), res.value, res.unit.c_str(),
                        static_cast<long long>(best_size));
          headline = h;
        }
    std::snprintf(line, sizeof line, "  %-5d %-20s %-7s %7llu %5d %5d %5d  %s\n", rank,
                  r.value("host", std::string("-")).c_str(), r["state"].get<std::string>().c_str(),
                  static_cast<unsigned long long>(r.value("results", 0ull)), bs.value("pass", 0), bs.value("skip", 0),
                  bad, headline.c_str());
    os << line;
  }
  const auto& fs_ = rep["findings"];
  if (fs_.empty()) {
    os << "  findings: none\n";
  } else {
    os << "  findings (" << fs_.size() << "):\n";
    for (const auto& f : fs_)
      os << "   - [" << f["severity"].get<std::string>() << "] " << f["code"].get<std::string>() << " "
         << f["entity"]["kind"].get<std::string>() << " " << f["entity"]["id"].get<std::string>() << ": "
         << f["summary"].get<std::string>() << "\n     next: " << f["next_step"].get<std::string>() << "\n";
  }
  os << "  results: " << (opts_.out / "results.jsonl").string() << "\n  report:  " << (opts_.out / "report.json").string()
     << "\n";
  std::cout << os.str() << std::flush;
}

int Campaign::run() {
  started_ = std::chrono::system_clock::now();
  const fs::path secret_file = opts_.out / "secret";
  const std::string secret = auth::create_secret_file(secret_file);
  store_ = std::make_unique<ResultStore>(opts_.out);
  ServerOptions so;
  so.listen = opts_.listen;
  so.secret = secret;
  so.run_id = opts_.run_id;
  so.world_size = opts_.ranks;
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
