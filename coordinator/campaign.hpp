// One campaign: wait for the workers, drive rounds, persist every result before acknowledging
// it, turn results into findings, write the report. Runs on the caller's thread; the
// ResultServer's I/O thread only feeds it events. Each round is written to RUN_DIR/journal.jsonl
// when it starts and when it ends, so that a campaign whose coordinator died can be reported on
// (`kiln report`) and continued (`kiln resume`: the same class, given the run so far).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/net.hpp"
#include "common/protocol.hpp"
#include "common/types.hpp"
#include "coordinator/history.hpp"
#include "coordinator/analysis/fleet.hpp"
#include "coordinator/analysis/expect.hpp"
#include "coordinator/analysis/judge.hpp"
#include "coordinator/events.hpp"
#include "coordinator/launcher.hpp"
#include "coordinator/report.hpp"
#include "coordinator/report_exports.hpp"

namespace kiln::coord {

struct LoadedRun;

struct CampaignOptions {
  std::filesystem::path out;
  std::string run_id;
  int ranks = 4;
  std::vector<proto::TestSpec> tests;  // the test plan: one round per test
  double test_deadline_s = 120.0;
  double connect_timeout_s = 60.0;
  net::Endpoint listen{"127.0.0.1", 0};
  std::string advertise_host;          // what workers dial; defaults to the listen host
  std::filesystem::path worker;
  std::vector<std::string> launcher_args;
  bool quiet = false;
  std::vector<std::string> expected_nodes;  // when known (SLURM), for missing-node findings
  nlohmann::json leaves = nlohmann::json::object();  // SLURM's leaf switches: {"leaf1": [hosts], ...}
  std::set<std::string> allowed_hosts;      // a hello must name one of these (SLURM: the candidate nodes)
  std::set<std::string> allowed_peers;      // when set, the only addresses that may connect
  // The localization phase, run after the test plan: returns its findings and its report section.
  std::function<std::pair<std::vector<Finding>, nlohmann::json>(class Campaign&)> localize;
  // How to run the campaign again (launcher, plan, options): kept in campaign.json for kiln resume.
  nlohmann::json spec = nlohmann::json::object();
  // What the nodes are judged against (--spec, the shipped profiles, or nothing).
  analysis::Expectations expect;
  // kiln resume: the campaign so far (read from the run directory). Its finished plan rounds are
  // not run again, its results are appended to, and the report covers every session.
  const LoadedRun* resume = nullptr;
  ExportTargets exports;  // copies of the exports outside the run directory (--prom-textfile)
  // The history database the run is recorded in at its end (empty: none), node.regressed's rule,
  // and the plan's name as the history shows it.
  std::filesystem::path history;
  RegressionConfig regression;
  std::string plan_name;
};

struct RankState {
  int rank = -1;
  std::string host;
  SessionId session = 0;
  bool joined = false;
  bool lost = false;
  bool said_bye = false;
  std::string lost_reason;
  NodeInfo info;
  RankCounts counts;  // what it measured in this session (its results are on disk, not kept)
  bool loss_journaled = false;
  std::optional<proto::RankProgress> progress;  // from its last heartbeat that carried one
  // Why it was lost before a restart brought it back (a killed worker runs again after a restart,
  // but its death is still a finding, as the journal says).
  std::string earlier_loss;
};

using analysis::Phase;
using analysis::RoundRecord;

class ResultServer;
class ResultStore;
class Journal;
class SpaceReserve;
struct ReportInput;

// Asks a running campaign to stop (from a SIGINT/SIGTERM handler): it stops its workers, writes
// the report with what it has, and returns 2.
void request_stop(int signal_number);
int stop_requested();

class Campaign {
 public:
  Campaign(CampaignOptions opts, Launcher& launcher);
  ~Campaign();
  // Runs the whole campaign; returns the exit code (0 pass, 1 fail or incomplete, 2 could not run).
  int run();

  // Runs one round over the live ranks and returns what came back. Exposed for the localization
  // phase, which drives rounds chosen by the planner.
  // plan_index: which test of the plan the round runs (plan rounds), so that kiln resume knows.
  RoundRecord run_round(proto::Round round, const std::string& reason, Phase phase = Phase::Plan,
                        int plan_index = -1);
  const std::map<int, RankState>& ranks() const { return ranks_; }
  // What the nodes are judged against (--spec, or the shipped profiles); localization takes its
  // reference figure from it.
  const analysis::Expectations& expectations() const { return opts_.expect; }
  // A signal or a storage error: run no more rounds.
  bool stopping() const { return stop_requested() != 0 || !storage_error_.empty(); }

 private:
  void open_run_dir();
  void restore(const LoadedRun& run);
  bool wait_for_workers();
  bool retry_crashed_start(const LaunchRequest& req);
  int run_rounds();
  int end_interrupted();
  int end_on_storage_error();
  void pump(std::chrono::steady_clock::time_point until);
  void end_round(bool cut, std::chrono::steady_clock::time_point start);
  using Acks = std::vector<std::pair<SessionId, std::uint64_t>>;
  void handle(Event& e, Acks& acks);
  void joined(const Event& e);
  void left(const Event& e);
  void lose(RankState& st, const std::string& reason);
  void close_for_cause(SessionId session, const std::vector<int>& ranks, const std::string& why);
  void close_if_all_lost(SessionId session, const std::string& why);
  std::string not_owned(SessionId session, int rank, const std::string& host, const Entity* entity,
                        std::int64_t round_id) const;
  void on_message(const Event& e, std::vector<int>& mine, proto::Records& m, Acks& acks);
  void on_message(const Event& e, std::vector<int>& mine, proto::Done& m, Acks& acks);
  void on_message(const Event& e, std::vector<int>& mine, proto::Error& m, Acks& acks);
  void on_message(const Event& e, std::vector<int>& mine, proto::Bye& m, Acks& acks);
  void on_message(const Event& e, std::vector<int>& mine, proto::Heartbeat& m, Acks& acks);
  void attach(Record rec, RankState& st);
  std::set<SessionId> sessions_of(const std::set<int>& ranks) const;
  void send_round(const proto::Round& round, const std::set<int>& live);
  void storage_failed(const std::string& what);
  void journal(const std::string& event, nlohmann::json fields, bool sync_now);
  void journal_losses();
  void say_goodbye(const std::string& reason, std::chrono::seconds wait);
  void journal_launched();
  // campaign_restart.cpp: after a round whose checks left MPI state untrusted.
  void restart_if_untrusted(const RoundRecord& rr);
  void rejoin(const std::set<int>& live);
  ReportInput report_input(const std::string& error) const;
  // Writes report.json and prints the summary; returns the exit code. Never throws: when the
  // report cannot be written it says so on stderr and returns 2.
  int write_report_and_summary(const std::string& error);
  void progress(const std::string& line) const;
  // A round's progress: one status line rewritten in place on a terminal, else a plain line.
  void show_status(std::int64_t round_id, const std::string& plain);
  std::string estimate_text(std::int64_t round_id) const;  // "round k of about K, about m:ss left"
  int rounds_estimate() const;
  std::set<int> live_ranks() const;

  CampaignOptions opts_;
  Launcher& launcher_;
  EventQueue events_;
  std::unique_ptr<ResultServer> server_;
  std::unique_ptr<ResultStore> store_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<SpaceReserve> reserve_;
  std::string storage_error_;  // the first write or sync the disk refused
  bool journal_dirty_ = false;
  int session_ = 1;
  std::string coordinator_;  // HOST:PORT the workers dial
  std::map<int, RankState> ranks_;
  std::map<SessionId, std::vector<int>> sessions_;  // each connection's ranks
  analysis::Fleet fleet_;                           // every node's figures and settings
  std::set<SessionId> closed_;                      // connections closed for cause
  int live_ = 0;                                    // ranks joined and not lost
  std::vector<int> newly_lost_;                     // lost since the journal last heard
  std::chrono::steady_clock::time_point last_join_note_{};
  std::vector<RoundRecord> rounds_;  // every round of the campaign, earlier sessions' too
  std::vector<Result> unattached_;   // results naming no round
  RoundRecord* current_ = nullptr;
  std::set<int> plan_done_;          // plan indexes whose round finished (earlier sessions)
  bool localized_before_ = false;    // an earlier session finished the localization
  std::vector<Finding> extra_findings_;
  std::optional<LaunchEnd> launch_end_;
  std::chrono::system_clock::time_point started_;
  std::uint64_t rejected_ = 0;
  std::int64_t next_round_id_ = 1;
  nlohmann::json localization_ = nullptr;
  bool localized_now_ = false;  // this session ran the localization to its end
  bool ending_ = false;
  std::optional<LaunchRequest> launch_req_;  // what was launched, to launch it again
  int restarts_ = 0;                          // this session's restarts of the workers
  std::vector<nlohmann::json> launch_retries_;  // start-up crashes launched again after (campaign_session.cpp)
  bool restarting_ = false;                   // ranks leaving now are coming back
  bool restart_refusal_said_ = false;
  std::vector<nlohmann::json> restarts_now_;  // this session's restart events, for the report
  bool tty_ = false;                          // stderr is a terminal: a status line
  mutable bool status_shown_ = false;         // the status line is on screen (no newline yet)
  std::optional<std::chrono::steady_clock::time_point> first_round_;
  std::int64_t rounds_done_ = 0;              // this session's finished rounds
};

}  // namespace kiln::coord
