// Judging a group that overran its deadline from its members' last progress (synthetic progress
// tables): the member the others waited for is named once, and the others' timeouts are its
// consequence; when progress cannot tell, the judgement is what it was without it.
#include <catch2/catch.hpp>

#include <algorithm>

#include "common/findings.hpp"
#include "coordinator/analysis/behind.hpp"
#include "coordinator/analysis/judge.hpp"

using namespace kiln;
using namespace kiln::analysis;

namespace {

// One round of mpi.all_reduce over ranks 0..3 where every member's check ended in TIMEOUT.
RoundRecord overrun_round() {
  RoundRecord rr;
  rr.round.id = 2;
  rr.round.tests = {{"mpi.all_reduce", nlohmann::json::object()}};
  rr.round.groups = {{0, 1, 2, 3}};
  rr.expected = rr.done = {0, 1, 2, 3};
  for (int r = 0; r < 4; ++r)
    rr.ends.push_back(CheckEnd{"mpi.all_reduce", "h", r, Status::Timeout, "the group did not finish", 5.0, 2, 0, 0.0});
  return rr;
}

void set_ops(RoundRecord& rr, std::vector<std::uint64_t> ops, std::vector<int> waits = {}) {
  for (int r = 0; r < static_cast<int>(ops.size()); ++r)
    rr.progress[r] = proto::RankProgress{r, "mpi.all_reduce", rr.round.id, ops[static_cast<std::size_t>(r)],
                                         waits.empty() ? -1 : waits[static_cast<std::size_t>(r)]};
}

std::vector<Finding> judge(const RoundRecord& rr) {
  std::vector<RankFate> fates;
  for (int r = 0; r < 4; ++r) fates.push_back({r, "h", true, false, ""});
  return judge_plan(4, fates, {rr});
}

std::size_t count(const std::vector<Finding>& fs, Code c) {
  return static_cast<std::size_t>(std::count_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.code == c; }));
}

}  // namespace

TEST_CASE("a member with markedly fewer operations is named behind, the others' timeouts are spared", "[behind]") {
  auto rr = overrun_round();
  set_ops(rr, {40, 41, 3, 40});
  const auto found = find_behind(rr);
  REQUIRE(found.size() == 1);
  CHECK(found[0].behind == std::vector<int>{2});
  CHECK(found[0].evidence["ops_done"]["2"] == 3);
  const auto fs = judge(rr);
  REQUIRE(count(fs, Code::GroupBehind) == 1);
  CHECK(count(fs, Code::TestTimeout) == 0);
  const auto& f = *std::find_if(fs.begin(), fs.end(), [](const Finding& x) { return x.code == Code::GroupBehind; });
  CHECK(f.entity.id == "2");
  CHECK(f.summary.find("rank 2") != std::string::npos);
}

TEST_CASE("the member the others wait on is behind, even with equal operations", "[behind]") {
  auto rr = overrun_round();
  rr.missing = {3};  // it did not even finish the round
  rr.done = {0, 1, 2};
  set_ops(rr, {7, 7, 7, 7}, {3, 3, -1, -1});  // peers index the group: 3 is rank 3
  const auto found = find_behind(rr);
  REQUIRE(found.size() == 1);
  CHECK(found[0].behind == std::vector<int>{3});
  const auto fs = judge(rr);
  CHECK(count(fs, Code::GroupBehind) == 1);
  CHECK(count(fs, Code::TestTimeout) == 0);  // nor "did not finish" for rank 3
}

TEST_CASE("a member still in an earlier check of the round is behind those past it", "[behind]") {
  auto rr = overrun_round();
  rr.round.tests.push_back({"mpi.alltoall", nlohmann::json::object()});
  set_ops(rr, {0, 0, 12, 0});
  for (int r : {0, 1, 3}) rr.progress[r].check = "mpi.alltoall";
  const auto found = find_behind(rr);
  REQUIRE(found.size() == 1);
  CHECK(found[0].test == "mpi.all_reduce");
  CHECK(found[0].behind == std::vector<int>{2});
}

TEST_CASE("when progress cannot tell, a timed-out group is judged as before", "[behind]") {
  auto plain = overrun_round();
  const auto before = judge(plain);
  REQUIRE(count(before, Code::TestTimeout) == 4);
  SECTION("all equal") {
    auto rr = overrun_round();
    set_ops(rr, {40, 41, 40, 40});
    CHECK(find_behind(rr).empty());
    CHECK(judge(rr).size() == before.size());
  }
  SECTION("no progress from one member") {
    auto rr = overrun_round();
    set_ops(rr, {40, 41, 3, 40});
    rr.progress.erase(1);
    CHECK(find_behind(rr).empty());
    CHECK(count(judge(rr), Code::TestTimeout) == 4);
  }
  SECTION("progress from another round") {
    auto rr = overrun_round();
    set_ops(rr, {40, 41, 3, 40});
    rr.progress[2].round = 1;
    rr.progress[2].check = "gpu.burn";
    CHECK(find_behind(rr).empty());
  }
  SECTION("a group that did not overrun") {
    auto rr = overrun_round();
    rr.ends.clear();
    set_ops(rr, {40, 41, 3, 40});
    CHECK(find_behind(rr).empty());
  }
}

TEST_CASE("in a collective, where operations stay equal, the member whose process stalled is behind", "[behind]") {
  auto rr = overrun_round();
  set_ops(rr, {89, 84, 88, 89});  // sampled at different moments: within noise
  rr.progress[2].stalled_s = 5.4;
  rr.progress[0].stalled_s = 0.3;
  const auto found = find_behind(rr);
  REQUIRE(found.size() == 1);
  CHECK(found[0].behind == std::vector<int>{2});
  CHECK(found[0].evidence["stalled_s"]["2"] == 5.4);
  rr.progress[0].stalled_s = 2.0;  // another member stalled too, nearly as long: it cannot tell
  CHECK(find_behind(rr).empty());
}
