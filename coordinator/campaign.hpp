// One campaign: wait for the workers, drive rounds, persist every result before acknowledging
// it, turn results into findings, write the report. Runs on the caller's thread; the
// ResultServer's I/O thread only feeds it events.
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
#include "coordinator/analysis/judge.hpp"
#include "coordinator/events.hpp"
#include "coordinator/launcher.hpp"
#include "coordinator/report.hpp"

namespace kiln::coord {

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
  std::set<std::string> allowed_hosts;      // a hello must name one of these (SLURM: the candidate nodes)
  std::set<std::string> allowed_peers;      // when set, the only addresses that may connect
  // The localization phase, run after the test plan: returns its findings and its report section.
  std::function<std::pair<std::vector<Finding>, nlohmann::json>(class Campaign&)> localize;
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
  std::uint64_t results = 0;
  std::map<std::string, std::uint64_t> by_status;
  std::string headline;              // a sweep's figure at its largest size: what an operator looks at first
  std::int64_t headline_size = -1;
};

using analysis::Phase;
using analysis::RoundRecord;

class ResultServer;
class ResultStore;

// Asks a running campaign to stop (from a SIGINT/SIGTERM handler): it stops its workers, writes
// the report with what it has, and returns 2.
void request_stop(int signal_number);
int stop_requested();

class Campaign {
 public:
  Campaign(CampaignOptions opts, Launcher& launcher);
  ~Campaign();
  // Runs the whole campaign; returns the exit code (0 pass, 1 findings, 2 could not run).
  int run();

  // Runs one round over the live ranks and returns what came back. Exposed for the localization
  // phase, which drives rounds chosen by the planner.
  RoundRecord run_round(proto::Round round, const std::string& reason, Phase phase = Phase::Plan);
  const std::map<int, RankState>& ranks() const { return ranks_; }

 private:
  bool wait_for_workers();
  void pump(std::chrono::steady_clock::time_point until);
  using Acks = std::vector<std::pair<SessionId, std::uint64_t>>;
  void handle(Event& e, Acks& acks);
  bool owned(const Event& e, RankState& st, int rank, const std::string& host, const Entity* entity,
             std::int64_t round_id);
  void on_message(const Event& e, RankState& st, proto::ResultMsg& m, Acks& acks);
  void on_message(const Event& e, RankState& st, proto::EndMsg& m, Acks& acks);
  void on_message(const Event& e, RankState& st, proto::Done& m, Acks& acks);
  void on_message(const Event& e, RankState& st, proto::Error& m, Acks& acks);
  void on_message(const Event& e, RankState& st, proto::Bye& m, Acks& acks);
  void on_message(const Event& e, RankState& st, proto::Heartbeat& m, Acks& acks);
  void say_goodbye();
  std::vector<Finding> findings() const;
  Report report(const std::string& verdict, const std::string& error) const;
  void write_report_and_summary(const std::string& verdict, const std::string& error);
  void progress(const std::string& line) const;
  std::set<int> live_ranks() const;

  CampaignOptions opts_;
  Launcher& launcher_;
  EventQueue events_;
  std::unique_ptr<ResultServer> server_;
  std::unique_ptr<ResultStore> store_;
  std::map<int, RankState> ranks_;
  std::vector<RoundRecord> rounds_;
  RoundRecord* current_ = nullptr;
  std::vector<Finding> extra_findings_;
  std::optional<LaunchEnd> launch_end_;
  std::chrono::system_clock::time_point started_;
  std::uint64_t rejected_ = 0;
  std::int64_t next_round_id_ = 1;
  nlohmann::json localization_ = nullptr;
  bool ending_ = false;
};

}  // namespace kiln::coord
