// The judgement functions on results recorded from real runs (tests/data/runs/*/SOURCE says
// where each came from): re-judging a recorded run gives the findings its report holds, and
// replaying a recorded localization phase through a fresh planner asks for the same rounds and
// reaches the same conclusions.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <set>

#include "common/checks.hpp"
#include "common/findings.hpp"
#include "coordinator/analysis/judge.hpp"
#include "coordinator/run_dir.hpp"

using namespace kiln;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kRuns = fs::path(KILN_TEST_DATA) / "runs";

using Key = std::pair<std::string, std::string>;  // (code, entity id)

std::set<Key> keys(const std::vector<Finding>& fs) {
  std::set<Key> out;
  for (const auto& f : fs) out.insert({to_string(f.code), f.entity.id});
  return out;
}

std::set<Key> recorded(const json& report, bool localization) {
  std::set<Key> out;
  for (const auto& f : report["findings"]) {
    const auto code = f["code"].get<std::string>();
    const bool from_planner = code == "node.slow" || code == "link.slow" || code == "switch.slow" ||
                              code == "node.lost" || code == "localize.unresolved";
    if (from_planner == localization) out.insert({code, f["entity"]["id"].get<std::string>()});
  }
  return out;
}

// Feeds the recorded localization rounds to a fresh planner, checking it asks for the same groups.
std::vector<Finding> replay(const coord::LoadedRun& run) {
  const auto& loc = run.report["localization"];
  const auto names = loc["units"].get<std::vector<std::string>>();
  const auto unit_rank = loc["unit_ranks"].get<std::vector<int>>();
  const auto* check = find_check(loc["test"].get<std::string>());
  REQUIRE(check);
  REQUIRE(check->figure);
  analysis::PlannerConfig cfg;
  cfg.outliers.direction = check->figure->higher_is_better ? analysis::Direction::HigherIsBetter
                                                           : analysis::Direction::LowerIsBetter;
  cfg.votes = loc["votes"].get<int>();
  cfg.outliers.rel_cutoff = loc["slow_cutoff"].get<double>();
  cfg.mode = loc["mode"] == "full" ? analysis::Mode::Full : analysis::Mode::Adaptive;
  const auto size = loc["size_bytes"].get<std::int64_t>();
  cfg.size_bytes = size;
  // The runs were recorded before clusters of fewer than 8 nodes were tested exactly, pair by pair:
  // replaying their rounds needs the search they were planned with.
  cfg.exact_below = 0;
  // ...and before a slow screen result stopped counting as a vote.
  cfg.screen_votes = true;
  analysis::Planner planner(static_cast<int>(names.size()), cfg, {}, names);
  std::vector<const analysis::RoundRecord*> rounds;
  for (const auto& rr : run.rounds)
    if (rr.phase == analysis::Phase::Localize) rounds.push_back(&rr);
  std::size_t i = 0;
  std::set<int> lost_units;
  while (auto plan = planner.next()) {
    REQUIRE(i < rounds.size());
    const auto& rr = *rounds[i++];
    REQUIRE(plan->groups.size() == rr.round.groups.size());
    for (std::size_t g = 0; g < plan->groups.size(); ++g) {
      std::vector<int> ranks;  // the live members, as the campaign sent them
      for (int u : plan->groups[g])
        if (!lost_units.count(u)) ranks.push_back(unit_rank[static_cast<std::size_t>(u)]);
      CHECK(ranks == rr.round.groups[g]);
    }
    planner.observe(*plan, analysis::group_outcomes(*plan, rr, unit_rank, lost_units, *check->figure, size));
    // A rank that missed a round's deadline is lost to the campaign from then on.
    for (std::size_t u = 0; u < unit_rank.size(); ++u)
      if (rr.missing.count(unit_rank[u])) lost_units.insert(static_cast<int>(u));
  }
  CHECK(i == rounds.size());
  return planner.findings();
}

}  // namespace

TEST_CASE("recorded runs: the plan's judgement is what the report held", "[judge][recorded]") {
  std::size_t runs = 0;
  for (const auto& d : fs::directory_iterator(kRuns)) {
    if (!fs::exists(d.path() / "report.json")) continue;
    INFO(d.path().filename().string());
    const auto run = coord::load_run(d.path());
    CHECK(run.bad_lines == 0);
    const auto found = analysis::judge_plan(run.ranks, run.fates, run.rounds);
    CHECK(keys(found) == recorded(run.report, false));
    ++runs;
  }
  CHECK(runs >= 3);
}

TEST_CASE("recorded runs: replaying localization reaches the same findings", "[judge][recorded]") {
  std::size_t replayed = 0;
  for (const auto& d : fs::directory_iterator(kRuns)) {
    if (!fs::exists(d.path() / "report.json")) continue;
    const auto run = coord::load_run(d.path());
    if (!run.report["localization"].is_object() || !run.report["localization"].value("ran", false)) continue;
    INFO(d.path().filename().string());
    CHECK(keys(replay(run)) == recorded(run.report, true));
    ++replayed;
  }
  CHECK(replayed >= 2);
}

TEST_CASE("judge_plan: a malformed code from a peer is a finding, not a crash", "[judge]") {
  analysis::RoundRecord rr;
  rr.round.id = 1;
  Result r;
  r.test = "gpu.burn";
  r.host = "n1";
  r.rank = 0;
  r.entity = {"gpu", "n1/gpu0"};
  r.status = Status::Fail;
  r.problems = {json({{"code", 5}}).get<Problem>(), {Code::GpuSdc, "3 wrong"}};
  rr.results.push_back(r);
  CheckEnd e;
  e.test = "mpi.all_reduce";
  e.host = "n1";
  e.rank = 0;
  e.status = Status::Timeout;
  e.reason = "the group did not finish";
  rr.ends.push_back(e);
  rr.missing = {1};
  const auto fs_ = analysis::judge_plan(2, {{0, "n1", true, false, ""}, {1, "n2", true, false, ""}}, {rr});
  const auto k = keys(fs_);
  CHECK(k.count({"result.invalid", "n1/gpu0"}));
  CHECK(k.count({"gpu.sdc", "n1/gpu0"}));
  CHECK(k.count({"test.timeout", "0"}));
  CHECK(k.count({"test.timeout", "1"}));  // rank 1 never finished the round
  CHECK(fs_.size() == 4);
}

// A node crashed in round 2: its ranks 4 and 5 are lost; ranks 0-3 of the same all-reduce group
// timed out waiting on them (as on the testbed's `fault crash` drill). Only the lost ranks are
// findings. A rank of another group in that round, and a timeout in a round with nobody lost, stay.
TEST_CASE("judge_plan: group-check failures caused by a peer lost in that round are not findings", "[judge]") {
  auto end = [](int rank, const std::string& test, Status s) {
    CheckEnd e;
    e.test = test;
    e.host = "n" + std::to_string(rank / 2 + 1);
    e.rank = rank;
    e.status = s;
    e.reason = "the group did not finish";
    return e;
  };
  analysis::RoundRecord crash;
  crash.round.id = 2;
  crash.round.tests = {{"mpi.all_reduce", json::object()}};
  crash.round.groups = {{0, 1, 2, 3, 4, 5}, {6, 7}};
  crash.expected = {0, 1, 2, 3, 4, 5, 6, 7};
  crash.missing = {3, 4, 5};  // 3 hung (never came back), 4 and 5 died
  for (int r : {0, 1, 2}) crash.ends.push_back(end(r, "mpi.all_reduce", Status::Timeout));
  crash.ends.push_back(end(6, "mpi.all_reduce", Status::Timeout));  // its own group: a real timeout
  Result slow;
  slow.test = "mpi.all_reduce";
  slow.rank = 1;
  slow.host = "n1";
  slow.status = Status::Fail;
  crash.results.push_back(slow);
  analysis::RoundRecord later;
  later.round.id = 3;
  later.round.tests = {{"mpi.all_reduce", json::object()}};
  later.expected = {0, 1, 2, 3, 6, 7};
  later.ends.push_back(end(2, "mpi.all_reduce", Status::Error));
  std::vector<analysis::RankFate> fates;
  for (int r = 0; r < 8; ++r) fates.push_back({r, "n" + std::to_string(r / 2 + 1), true, r == 4 || r == 5, "peer closed"});
  const auto k = keys(analysis::judge_plan(8, fates, {crash, later}));
  CHECK(k == std::set<Key>{{"rank.lost", "4"}, {"rank.lost", "5"}, {"test.timeout", "6"}, {"test.error", "2"}});
}

TEST_CASE("group_outcomes reads the declared figure, whichever way is better", "[judge]") {
  analysis::RoundPlan plan;
  plan.groups = {{0, 1}, {2, 3}};
  analysis::RoundRecord rr;
  auto res = [](int rank, const char* metric, double v) {
    Result r;
    r.rank = rank;
    r.metric = metric;
    r.value = v;
    return r;
  };
  rr.results = {res(0, "lat", 2.0), res(1, "lat", 9.0), res(2, "lat", 3.0), res(3, "bw", 1.0)};
  CheckEnd late;
  late.rank = 3;
  late.status = Status::Timeout;
  rr.ends = {late};
  const FigureSpec lat{"lat", "us", false, false};
  const auto out = analysis::group_outcomes(plan, rr, {0, 1, 2, 3}, {}, lat, 8);
  REQUIRE(out.size() == 2);
  CHECK(out[0].value == 9.0);  // the slowest member's latency is the group's
  CHECK(out[1].timed_out);     // a timeout is slow, not a hang
  const FigureSpec bw{"bw", "GB/s", true, false};
  const auto out2 = analysis::group_outcomes(plan, rr, {0, 1, 2, 3}, {1}, bw, 8);
  CHECK(out2[0].missing == std::vector<int>{1});
}

TEST_CASE("recorded runs: each drill is judged to its fault, and only to it", "[judge][recorded]") {
  const std::map<std::string, std::set<Key>> want{
      {"h200-clean", {}},
      {"h200-default", {}},
      {"h200-bitflip", {{"gpu.sdc", "vm/gpu1"}}},
      {"h200-slowgpu", {{"gpu.slow", "vm/gpu0"}}},
      {"h200-hidden", {{"gpu.count", "vm"}}},
      {"testbed-clean", {}},
  };
  for (const auto& [name, keys_wanted] : want) {
    INFO(name);
    const auto run = coord::load_run(kRuns / name);
    CHECK(keys(analysis::judge_plan(run.ranks, run.fates, run.rounds)) == keys_wanted);
  }
  // Localization on the testbed: the slowed node, the slowed link.
  CHECK(keys(replay(coord::load_run(kRuns / "testbed-slow-node"))) == std::set<Key>{{"node.slow", "node3"}});
  CHECK(keys(replay(coord::load_run(kRuns / "testbed-bad-link"))) == std::set<Key>{{"link.slow", "node2<->node5"}});
}
