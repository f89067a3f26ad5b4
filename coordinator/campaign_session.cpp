// A coordinator session of a campaign: opening the run directory (or taking a campaign over from
// a coordinator that died, for kiln resume), running the plan and the localization, and ending
// with a report whatever happened: a signal, the job ending, or a disk that refuses writes.
#include <unistd.h>

#include <iostream>

#include <spdlog/spdlog.h>

#include "common/auth.hpp"
#include "coordinator/campaign.hpp"
#include "coordinator/history_db.hpp"
#include "coordinator/journal.hpp"
#include "coordinator/report.hpp"
#include "coordinator/report_html.hpp"
#include "coordinator/run_dir.hpp"
#include "coordinator/server.hpp"
#include "coordinator/store.hpp"

namespace kiln::coord {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string local_hostname() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Room kept for report.json when the disk fills: its size grows with the ranks (rows, nodes,
// findings with evidence).
std::uint64_t reserve_bytes(int ranks) {
  return std::min<std::uint64_t>(64ull << 20, (1ull << 20) + 8192ull * static_cast<std::uint64_t>(std::max(ranks, 0)));
}

// "; rank 3 on node2 ended first (Killed), and SLURM ended the job step with it" or "".
std::string first_ends_text(const std::vector<FirstEnd>& first) {
  if (first.empty()) return "";
  std::string who;
  for (const auto& e : first)
    who += (who.empty() ? "" : ", ") + ("rank " + std::to_string(e.rank) + " on " + e.host + " (" + e.how + ")");
  return "; " + who + " ended first, and SLURM ended the job step with " + (first.size() > 1 ? "them" : "it");
}

}  // namespace

// Takes over a campaign whose coordinator died: its rounds (finished ones are not run again), the
// round ids it used (never reused), the localization if it had finished.
void Campaign::restore(const LoadedRun& run) {
  rounds_ = run.rounds;
  // Counted already (result_count, by_test, each rank's counts): keep only what judgement reads.
  for (auto& rr : rounds_)
    std::erase_if(rr.results, [&](const Result& r) {
      return !analysis::kept_for_judgement(rr, r) && !analysis::kept_for_expectations(opts_.expect, r);
    });
  std::int64_t max_id = 0;
  for (const auto& rr : rounds_) max_id = std::max(max_id, rr.round.id);
  for (const auto& r : run.unattached) max_id = std::max(max_id, r.round_id);
  if (run.journal) {
    max_id = std::max(max_id, run.journal->max_round_id);
    plan_done_ = run.journal->plan_done;
    localized_before_ = run.journal->localized;
    session_ = run.journal->sessions + 1;
    if (run.journal->first_ts > 0)
      started_ = std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::duration<double>(run.journal->first_ts)));
  }
  next_round_id_ = max_id + 1;
}

void Campaign::open_run_dir() {
  const fs::path secret_file = opts_.out / "secret";
  const std::string secret =
      opts_.resume ? auth::read_secret_file(secret_file) : auth::create_secret_file(secret_file);
  store_ = std::make_unique<ResultStore>(opts_.out);  // locks the run: one coordinator at a time
  if (store_->torn_bytes() > 0)
    progress("cut off a torn last line of results.jsonl (" + std::to_string(store_->torn_bytes()) +
             " bytes, never acknowledged)");
  journal_ = std::make_unique<Journal>(opts_.out, session_);
  reserve_ = std::make_unique<SpaceReserve>(opts_.out, reserve_bytes(opts_.ranks));
  if (!reserve_->held()) spdlog::warn("could not set disk space aside for the report in {}", opts_.out.string());
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
  coordinator_ = host + ":" + std::to_string(ep.port);
  json campaign = opts_.spec.is_object() ? opts_.spec : json::object();
  campaign.update({{"schema_version", kSchemaVersion},
                   {"run_id", opts_.run_id},
                   {"coordinator", coordinator_},
                   {"secret_file", fs::absolute(secret_file).string()},
                   {"ranks", opts_.ranks},
                   {"launcher", launcher_.name()},
                   {"leaves", opts_.leaves}});
  write_json_atomic(opts_.out / "campaign.json", campaign);
  fsync_dir(opts_.out);  // the secret's name, and the logs' when they were created
  const double ts = opts_.resume ? unix_now() : std::chrono::duration<double>(started_.time_since_epoch()).count();
  journal("session", {{"ts", ts}, {"coordinator", coordinator_}, {"resumed", opts_.resume != nullptr}}, true);
}

namespace {
// A rank that dies of a signal before any worker connected: seen in 1 of 20 drill campaigns on the
// testbed, in Open MPI's start-up (MPI_Init_thread or the first collective), with the other ranks
// left waiting for it. Worth one more start; a worker that exits with an error is not.
bool crashed(const std::string& how) {
  for (const char* s : {"Segmentation fault", "Bus error", "Aborted", "Illegal instruction", "Floating point exception"})
    if (how.find(s) != std::string::npos) return true;
  return false;
}
}  // namespace

// No worker connected and a rank crashed at start: the job is ended and launched once more. The
// crash is kept for the report (launch_retries) and its progress line.
bool Campaign::retry_crashed_start(const LaunchRequest& req) {
  if (!launch_retries_.empty() || !live_ranks().empty() || stop_requested() || !storage_error_.empty()) return false;
  // Read while the job may still run (the other ranks wait in MPI start-up): nothing is ended unless
  // a crash is there to launch again after.
  std::vector<FirstEnd> crashes;
  for (const auto& e : launch_end_ ? launch_end_->first_ends : launcher_.task_ends())
    if (crashed(e.how)) crashes.push_back(e);
  if (crashes.empty()) return false;
  const auto end = launch_end_ ? *launch_end_ : launcher_.finish(std::chrono::seconds(2));
  std::string who;
  for (const auto& e : crashes)
    who += (who.empty() ? "" : ", ") + ("rank " + std::to_string(e.rank) + " on " + e.host + " (" + e.how + ")");
  const std::string why = who + " ended before any worker connected (" + end.state + "); the workers were launched once more";
  progress(why);
  json ev = {{"why", why}, {"state", end.state}, {"first_ends", crashes}};
  journal("launch_retry", ev, true);
  launch_retries_.push_back(std::move(ev));
  launch_end_.reset();
  try {
    launcher_.launch(req);
  } catch (const std::exception& e) {
    launch_end_ = LaunchEnd{false, std::string("launch failed: ") + e.what()};
    return false;
  }
  journal_launched();
  return true;
}

int Campaign::run() {
  started_ = std::chrono::system_clock::now();
  if (opts_.resume) restore(*opts_.resume);
  open_run_dir();
  progress("run " + opts_.run_id + (opts_.resume ? " (resumed, session " + std::to_string(session_) + ")" : "") +
           ": listening on " + coordinator_ + ", launching " + std::to_string(opts_.ranks) + " rank(s) with " +
           launcher_.name());
  if (opts_.resume && opts_.resume->journal) {
    const auto stopped = launcher_.stop_earlier(opts_.resume->journal->launched);
    if (!stopped.empty()) progress(stopped);
  }
  const fs::path secret_file = fs::absolute(opts_.out / "secret");
  LaunchRequest req{coordinator_, secret_file, opts_.out, opts_.worker, opts_.ranks, opts_.launcher_args};
  try {
    launcher_.launch(req);
  } catch (const std::exception& e) {
    return write_report_and_summary(std::string("launch failed: ") + e.what());
  }
  launch_req_ = req;
  journal_launched();
  bool connected = wait_for_workers();
  if (!connected && retry_crashed_start(req)) connected = wait_for_workers();
  if (!connected) {
    if (stop_requested()) return end_interrupted();
    if (!storage_error_.empty()) return end_on_storage_error();
    std::string why;
    if (launch_end_)
      why = "the " + launcher_.name() + " job ended (" + launch_end_->state + ") before all workers connected";
    else
      why = "only " + std::to_string(live_ranks().size()) + " of " + std::to_string(opts_.ranks) +
            " workers connected within " + std::to_string(static_cast<int>(opts_.connect_timeout_s)) + " s" +
            (launcher_.progress().empty() ? "" : " (" + launcher_.progress() + ")");  // e.g. job 7 PENDING (Resources)
    if (live_ranks().empty()) {
      launch_end_ = launcher_.finish(std::chrono::seconds(2));
      return write_report_and_summary(why + " (see " + (opts_.out / "workers.log").string() + ")");
    }
    progress(why + "; going on with the ranks that did");
  }
  return run_rounds();
}

// What kiln resume stops if this coordinator dies: the newest launch (after a restart, too).
void Campaign::journal_launched() {
  json launched = launcher_.identity();
  if (!launched.is_object()) launched = json::object();
  launched["launcher"] = launcher_.name();
  journal("launched", launched, true);
}

int Campaign::run_rounds() {
  for (std::size_t i = 0; i < opts_.tests.size(); ++i) {
    if (plan_done_.count(static_cast<int>(i))) continue;  // finished before kiln resume
    proto::Round round;
    round.tests = {opts_.tests[i]};
    round.deadline_s = opts_.test_deadline_s;
    run_round(round, "", Phase::Plan, static_cast<int>(i));
    if ((launch_end_ && !launch_end_->ok) || live_ranks().empty() || stopping()) break;  // nobody left to run it
  }
  if (!storage_error_.empty()) return end_on_storage_error();
  if (stop_requested()) return end_interrupted();
  if (opts_.localize && !localized_before_ && !(launch_end_ && !launch_end_->ok)) {
    auto [found, section] = opts_.localize(*this);
    if (!storage_error_.empty()) return end_on_storage_error();
    if (stop_requested()) return end_interrupted();
    journal("localized", {{"findings", found}, {"section", section}}, true);
    extra_findings_ = std::move(found);
    localization_ = std::move(section);
    localized_now_ = true;
    if (!storage_error_.empty()) return end_on_storage_error();
  }
  // Every rank gone before our bye: the job ended under us (scancel, a node failure, a time
  // limit). The launcher may see that a poll or two later; wait briefly so the report says so.
  for (const auto until = Clock::now() + std::chrono::seconds(10);
       !launch_end_ && live_ranks().empty() && Clock::now() < until;)
    pump(std::min(until, Clock::now() + std::chrono::milliseconds(200)));
  const bool job_ended = launch_end_ && !launch_end_->ok;
  say_goodbye("campaign finished", std::chrono::seconds(20));
  if (job_ended)
    return write_report_and_summary("the " + launcher_.name() + " job ended before the campaign finished: " +
                                    launch_end_->state + first_ends_text(launch_end_->first_ends));
  return write_report_and_summary("");
}

// Ctrl-C or a scheduler's SIGTERM: stop the workers (scancel on SLURM), keep what arrived, say so.
int Campaign::end_interrupted() {
  const std::string sig = std::to_string(stop_requested());
  progress("interrupted by signal " + sig + ": stopping the workers");
  launch_end_ = launcher_.finish(std::chrono::seconds(0));
  return write_report_and_summary("interrupted by signal " + sig + "; results received so far are kept");
}

// The disk refused a write or a sync: nothing more can be kept, so nothing more is asked for. The
// workers are told why and stopped; the space set aside at the start makes room for the report.
int Campaign::end_on_storage_error() {
  say_goodbye("the coordinator cannot store results: " + storage_error_, std::chrono::seconds(2));
  reserve_->release();
  return write_report_and_summary("cannot store results: " + storage_error_ +
                                  "; every result acknowledged before it is in results.jsonl (kiln resume " +
                                  opts_.out.string() + " continues the campaign once there is room)");
}

ReportInput Campaign::report_input(const std::string& error) const {
  ReportInput in = opts_.resume ? coord::report_input(*opts_.resume) : ReportInput{};
  in.run_id = opts_.run_id;
  in.launcher = launcher_.name();
  in.error = error;
  in.started = std::chrono::duration<double>(started_.time_since_epoch()).count();
  in.duration_s = std::chrono::duration<double>(std::chrono::system_clock::now() - started_).count();
  in.expected_ranks = opts_.ranks;
  in.sessions = session_;
  in.fleet.merge(fleet_);
  in.fleet.set_leaves(leaves_of(opts_.leaves));
  // Earlier sessions' ranks, updated with this session's: a rank that came back is the one this
  // session saw; one that did not is lost to the campaign.
  std::map<int, RankSeen> seen;
  for (auto& k : in.ranks) seen[k.rank] = std::move(k);
  for (auto& [r, k] : seen)
    if (k.joined && !ranks_.count(r) && !k.lost) {
      k.lost = true;
      k.lost_reason = "did not connect again after kiln resume";
    }
  for (const auto& [r, st] : ranks_) {
    auto& k = seen[r];
    k.rank = r;
    k.counts.merge(st.counts);
    if (!st.joined) continue;
    k.joined = true;
    k.host = st.host;
    k.info = st.info;
    if (st.lost && st.lost_reason != "bye") {
      k.lost = true;
      k.lost_reason = st.lost_reason;
    } else if (!st.earlier_loss.empty()) {
      k.lost = true;
      k.lost_reason = st.earlier_loss;
    }
  }
  in.ranks.clear();
  for (auto& [r, k] : seen) in.ranks.push_back(std::move(k));
  in.unattached.insert(in.unattached.end(), unattached_.begin(), unattached_.end());
  if (localized_now_) {
    in.localization = localization_;
    in.extra_findings.insert(in.extra_findings.end(), extra_findings_.begin(), extra_findings_.end());
  }
  if (launch_end_) in.launch = LaunchRow{launch_end_->ok, launch_end_->state};
  in.launch_failed = launch_end_ && !launch_end_->ok && live_ranks().empty();
  if (launch_end_ && !launch_end_->ok) in.first_ends = launch_end_->first_ends;
  in.rejected += rejected_;
  in.restarts.insert(in.restarts.end(), restarts_now_.begin(), restarts_now_.end());
  in.launch_retries = launch_retries_;
  in.expect = opts_.expect;
  return in;
}

int Campaign::write_report_and_summary(const std::string& error) {
  const fs::path report_path = opts_.out / "report.json";
  Report rep;
  try {
    rep = build_report(report_input(error), rounds_);
  } catch (const std::exception& e) {  // only a bug gets here: keep a report that says so
    rep.run_id = opts_.run_id;
    rep.launcher = launcher_.name();
    rep.verdict = "error";
    rep.error = (error.empty() ? "" : error + "; ") + "the report could not be built: " + e.what();
  }
  // The journal's end first: if kiln dies before report.json is in place, kiln report rebuilds it.
  if (journal_) try {
      journal_->record("end", {{"verdict", rep.verdict}, {"error", rep.error}, {"duration_s", rep.duration_s},
                               {"launch", rep.launch ? json{{"ok", rep.launch->ok}, {"state", rep.launch->state}} : json(nullptr)},
                               {"launch_failed", launch_end_ && !launch_end_->ok && live_ranks().empty()}, {"rejected", rep.rejected_connections},
                               {"first_ends", launch_end_ ? launch_end_->first_ends : std::vector<FirstEnd>{}}});
    } catch (const std::exception& e) {
      spdlog::warn("could not journal the end of the campaign: {}", e.what());
    }
  std::optional<RunSummary> history;
  if (!opts_.history.empty()) history = compare_with_history(rep, opts_.history, opts_.regression, opts_.out, opts_.plan_name);
  int code = exit_code(rep);
  try {
    write_json_atomic(report_path, rep);
  } catch (const std::exception& e) {
    std::cerr << "kiln: error: could not write " << report_path.string() << ": " << e.what()
              << "; results.jsonl holds every acknowledged result, and `kiln report " << opts_.out.string()
              << "` rebuilds the report once there is room" << std::endl;
    code = 2;
  }
  if (auto e = write_report_html(opts_.out / "report.html", rep, opts_.out / "results.jsonl"); !e.empty())
    spdlog::warn("could not write {}: {}", (opts_.out / "report.html").string(), e);
  write_exports(opts_.out, rep, opts_.exports);  // JUnit, Prometheus, Influx beside it; only warns
  if (history) record_history(opts_.history, *history);
  std::cout << render_summary(rep, (opts_.out / "results.jsonl").string(), report_path.string()) << std::flush;
  return code;
}

}  // namespace kiln::coord
