// Run directories read back after what a campaign can go through: a coordinator that died
// mid-round (rebuilt from journal.jsonl), unreadable lines, rounds cut short (counted, never
// judged), sessions that ended in error (their lost ranks are not findings).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "common/auth.hpp"
#include "common/findings.hpp"
#include "coordinator/journal.hpp"
#include "coordinator/report.hpp"
#include "coordinator/run_dir.hpp"

using namespace kiln;
using namespace kiln::coord;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct RunDir {
  fs::path path = fs::temp_directory_path() / ("kiln-recover-" + auth::random_hex(4));
  RunDir() { fs::create_directories(path); }
  ~RunDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream out(path / name, std::ios::binary);
    out << text;
  }
};

std::string line(const json& j) { return j.dump() + "\n"; }

json result(int rank, std::int64_t round, const char* status = "pass") {
  return {{"record", "result"}, {"test", "mpi.all_reduce"}, {"host", "n" + std::to_string(rank)},
          {"rank", rank},       {"metric", "busbw"},          {"value", 1.5},
          {"unit", "GB/s"},     {"status", status},           {"round_id", round}};
}

json round_ev(std::int64_t id, int plan_index, const char* phase = "plan", int session = 1) {
  json e = {{"event", "round"}, {"session", session}, {"id", id},           {"phase", phase},
            {"expected", {0, 1}}, {"groups", {{0, 1}}}, {"tests", {{{"key", "mpi.all_reduce"}}}}};
  if (plan_index >= 0) e["plan_index"] = plan_index;
  return e;
}

json round_end(std::int64_t id, int session = 1) {
  return {{"event", "round_end"}, {"session", session}, {"id", id}, {"done", {0, 1}}, {"missing", json::array()}};
}

std::string campaign_json(int ranks, const std::string& tests) {
  return json({{"run_id", "r1"}, {"ranks", ranks}, {"launcher", "local"}, {"config", {{"tests", tests}}}}).dump();
}

std::string joined(int session = 1) {
  return line({{"event", "session"}, {"session", session}, {"ts", 1000.0}}) +
         line({{"event", "joined"}, {"session", session}, {"rank", 0}, {"host", "n0"}}) +
         line({{"event", "joined"}, {"session", session}, {"rank", 1}, {"host", "n1"}});
}

bool has(const std::vector<Finding>& fs, const std::string& code, const std::string& id) {
  for (const auto& f : fs)
    if (to_string(f.code) == code && f.entity.id == id) return true;
  return false;
}

}  // namespace

TEST_CASE("kiln report on a killed campaign: verdict error, how far it got, every record counted", "[recover]") {
  RunDir d;
  d.write("campaign.json", campaign_json(2, "host.inventory,mpi.all_reduce,mpi.all_reduce"));
  d.write("journal.jsonl", joined() + line(round_ev(1, 0)) + line(round_end(1)) + line(round_ev(2, 1)));
  // Round 2 never ended; the last line is a write the kill cut short.
  d.write("results.jsonl", line(result(0, 1)) + line(result(1, 1)) + line(result(0, 2, "fail")) + "{\"record\":\"res");
  const auto run = load_run(d.path);
  CHECK(run.torn_tail);
  CHECK(run.bad_lines == 0);
  REQUIRE(run.journal);
  CHECK(run.journal->plan_done == std::set<int>{0});
  CHECK(run.journal->max_round_id == 2);
  const auto rep = rebuild_report(d.path, run);
  CHECK(rep.verdict == "error");
  CHECK_THAT(rep.error, Catch::Contains("1 of 3 plan round(s) done") && Catch::Contains("kiln resume"));
  CHECK(rep.results_total == 3);
  CHECK(rep.results_not_judged == 1);
  REQUIRE(rep.rounds.size() == 2);
  CHECK(rep.rounds[0].finished);
  CHECK_FALSE(rep.rounds[1].finished);
  CHECK(exit_code(rep) == 2);
}

TEST_CASE("kiln report: an unreadable line is a result.invalid finding, not a lost report", "[recover]") {
  RunDir d;
  d.write("campaign.json", campaign_json(2, "mpi.all_reduce"));
  d.write("journal.jsonl", joined() + line(round_ev(1, 0)) + line(round_end(1)) +
                               line({{"event", "localized"}, {"session", 1}, {"findings", json::array()}}) +
                               line({{"event", "end"}, {"session", 1}, {"verdict", "pass"}}));
  auto bad = result(1, 1);
  bad["value"] = "fast";  // a string where a number belongs
  auto coded = result(0, 1, "fail");
  coded["problems"] = {{{"code", 5}}};
  // A line nested 300,000 deep (a hand edit, or a disk's garbage) is refused before it is parsed.
  const std::string deep = std::string(300000, '[') + std::string(300000, ']') + "\n";
  d.write("results.jsonl", line(result(0, 1)) + line(bad) + deep + line(coded));
  d.write("journal.jsonl", joined() + deep + line(round_ev(1, 0)) + line(round_end(1)) +
                               line({{"event", "localized"}, {"session", 1}, {"findings", json::array()}}) +
                               line({{"event", "end"}, {"session", 1}, {"verdict", "pass"}}));
  const auto run = load_run(d.path);
  CHECK(run.bad_lines == 2);
  const auto rep = rebuild_report(d.path, run);
  CHECK(rep.verdict == "fail");
  CHECK(has(rep.findings, "result.invalid", "1"));  // the unreadable line names rank 1
  CHECK(has(rep.findings, "result.invalid", "0"));  // the unknown code from rank 0
  CHECK(rep.unreadable_lines == 2);
  CHECK(exit_code(rep) == 1);
}

TEST_CASE("journal: what a resumed campaign takes over", "[recover]") {
  RunDir d;
  const std::string s1 = joined(1) + line(round_ev(1, 0)) + line(round_end(1)) + line(round_ev(2, -1, "localize")) +
                         line(round_end(2)) +
                         line({{"event", "lost"}, {"session", 1}, {"rank", 1}, {"reason", "peer closed"}});
  // Session 2 ends in error (say the job was cancelled): its lost ranks are not findings.
  const std::string s2 = joined(2) + line(round_ev(3, 1, "plan", 2)) +
                         line({{"event", "lost"}, {"session", 2}, {"rank", 0}, {"reason", "cancelled"}}) +
                         line({{"event", "end"}, {"session", 2}, {"verdict", "error"}, {"error", "job ended"}});
  d.write("journal.jsonl", s1 + s2 + "not json\n");
  const auto j = read_journal(d.path);
  REQUIRE(j);
  CHECK(j->sessions == 2);
  CHECK(j->bad_lines == 1);
  CHECK(j->plan_done == std::set<int>{0});
  CHECK(j->max_round_id == 3);
  REQUIRE(j->rounds.size() == 3);
  CHECK_FALSE(j->rounds[1].finished);  // localization never concluded: run again whole
  CHECK_FALSE(j->rounds[2].finished);
  CHECK(j->ranks.at(1).lost);
  CHECK_FALSE(j->ranks.at(0).lost);
  CHECK_FALSE(campaign_complete(*j));
}
