// `kiln ingest`: a user's own job (jobs/kiln-user-job.sh) recorded as a kiln run directory. The
// task log is read into typed records (user_job.cpp), written as a finished one-round campaign
// (campaign.json, journal.jsonl, results.jsonl), and `kiln report` then builds its report, so
// that the records go through the same reader, judgement and history import as a kiln run's.
#include <boost/program_options.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "common/checks.hpp"
#include "common/ingested.hpp"
#include "common/protocol.hpp"
#include "coordinator/cli.hpp"
#include "coordinator/expectations.hpp"
#include "coordinator/journal.hpp"
#include "coordinator/store.hpp"
#include "coordinator/user_job.hpp"

namespace kiln::cli {

namespace po = boost::program_options;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kIngestUsage =
    "usage: kiln ingest RUN_DIR --from LOG [--test KEY] [--ranks N] [--seconds S] [--match NAME:UNIT:REGEX]...\n\n"
    "Records a user's own job as a kiln run: reads LOG, the task log jobs/kiln-user-job.sh writes (each\n"
    "line RANK<TAB>HOST<TAB>TEXT, and a KILN_EXIT line per task), creates RUN_DIR, writes one result per\n"
    "task and metric (the median of the task's KILN_METRIC values, with samples, min and max) and each\n"
    "task's end, and builds the report as kiln report does. A task passes only when it exited 0 and\n"
    "printed at least one metric and no broken KILN_METRIC line; else its result is error, with the\n"
    "reason. The contract (KILN_METRIC {\"name\":...,\"value\":...,\"unit\":...}) is in docs/user-job.md.";

struct IngestArgs {
  std::string dir, from, test = "model.user_job";
  int ranks = 0;
  double seconds = 0;
  std::vector<std::string> match;
};

// Returns the error, or ""; help set when --help was given. Throws boost::program_options::error.
std::string parse_ingest(const std::vector<std::string>& args, IngestArgs& a, bool& help) {
  po::options_description desc(std::string(kIngestUsage) + "\n\noptions");
  desc.add_options()("help,h", "show this help")("from", po::value(&a.from)->value_name("LOG"),
                                                 "the task log (- reads stdin)")(
      "test", po::value(&a.test)->default_value(a.test), "the check key the records are under")(
      "ranks", po::value(&a.ranks)->default_value(0), "tasks the job started (nodes x tasks per node); a task that wrote nothing is an error")(
      "seconds", po::value(&a.seconds)->default_value(0), "how long the job ran")(
      "match", po::value(&a.match)->composing(),
      "NAME:UNIT:REGEX: also take the number in the REGEX's first group as metric NAME (for a job that cannot print KILN_METRIC)");
  std::vector<std::string> words;
  const auto vm = parse_with_words(args, desc, words, 1);
  if (vm.count("help")) {
    std::cout << desc << "\nExit codes: 0 pass, 1 fail (a task did not pass), 2 bad input.\n";
    help = true;
    return "";
  }
  if (words.empty()) return "name the run directory to create (RUN_DIR)";
  a.dir = words[0];
  if (a.from.empty()) return "--from LOG is required";
  const auto* spec = find_check(a.test);
  if (!spec || !ingested_check(a.test)) return "--test " + a.test.substr(0, 64) + " is not a check kiln ingest records (model.user_job)";
  if (a.ranks < 0 || a.ranks > coord::kUserJobMaxRanks) return "--ranks must be 0.." + std::to_string(coord::kUserJobMaxRanks);
  if (!(a.seconds >= 0 && a.seconds < 1e9)) return "--seconds must be a duration in seconds";
  return "";
}

// campaign.json and journal.jsonl of a finished one-round campaign over the job's tasks.
void write_campaign(const IngestArgs& a, const coord::UserJobLog& log, int ranks, bool passed, double now) {
  const fs::path dir = a.dir;
  coord::write_json_atomic(dir / "campaign.json", json{{"schema_version", kSchemaVersion},
                                                       {"run_id", dir.filename().string()},
                                                       {"ranks", ranks},
                                                       {"launcher", "user-job"},
                                                       {"config", {{"tests", a.test}}},
                                                       // not judged against a spec: its figures are the user's
                                                       {"expectations", coord::expectations_record({"none", "", "", "", a.test})}});
  coord::Journal journal(dir, 1);
  journal.note("session", {{"ts", now - a.seconds}, {"coordinator", "kiln ingest"}, {"resumed", false}});
  std::vector<int> all, done;
  for (int r = 0; r < ranks; ++r) all.push_back(r);
  for (const auto& [rank, t] : log.tasks) {
    NodeInfo info;
    info.host = t.host, info.world_rank = rank, info.world_size = ranks;
    journal.note("joined", {{"rank", rank}, {"host", t.host}, {"info", info}});
    done.push_back(rank);
  }
  journal.note("round", {{"id", 1}, {"tests", {proto::TestSpec{a.test, json::object()}}}, {"groups", {all}},
                         {"reason", "the user's job"}, {"phase", "plan"}, {"plan_index", 0}, {"expected", all}});
  journal.note("round_end", {{"id", 1}, {"done", done}, {"missing", json::array()}, {"duration_s", a.seconds}});
  journal.note("end", {{"verdict", passed ? "pass" : "fail"}, {"error", ""}, {"duration_s", a.seconds}});
  journal.sync();
}

}  // namespace

int cmd_ingest(const std::vector<std::string>& args) {
  IngestArgs a;
  bool help = false;
  std::string bad_args;
  try {
    bad_args = parse_ingest(args, a, help);
  } catch (const po::error& e) {
    bad_args = e.what();
  }
  if (!bad_args.empty()) return fail(bad_args + " (see kiln ingest --help)");
  if (help) return 0;
  coord::UserJobLog log;
  try {
    std::vector<coord::MatchRule> rules;
    for (const auto& m : a.match) rules.push_back(coord::parse_match_rule(m));
    std::ifstream file;
    if (a.from != "-") {
      file.open(a.from, std::ios::binary);
      if (!file) return fail("cannot read the task log " + a.from);
    }
    log = coord::parse_user_job_log(a.from == "-" ? std::cin : file, rules);
  } catch (const std::exception& e) {
    return fail(std::string(e.what()) + " (see kiln ingest --help)");
  }
  int ranks = std::max(a.ranks, log.tasks.empty() ? 1 : log.tasks.rbegin()->first + 1);
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const auto records = coord::user_job_records(log, a.test, ranks, a.seconds, 1, now);
  bool passed = true;
  for (const auto& r : records)
    if (const auto* e = std::get_if<CheckEnd>(&r)) passed = passed && e->status == Status::Pass;
  try {
    coord::create_run_dir(a.dir);
    {
      coord::ResultStore store(a.dir);
      for (const auto& r : records) store.append(r);
      store.sync();
    }
    write_campaign(a, log, ranks, passed, now);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  if (log.cut_lines)
    std::cerr << "kiln: " << log.cut_lines << " log line(s) longer than " << coord::kUserJobMaxLine << " bytes were cut\n";
  return cmd_report({a.dir, "--quiet"});
}

}  // namespace kiln::cli
