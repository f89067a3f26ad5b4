// group_outcomes' per-edge figures from members that timed every peer (mpi.alltoall's extra.peers):
// synthetic rounds where a slow link, a missing direction or a lost member is known.
#include <catch2/catch.hpp>

#include <map>

#include "coordinator/analysis/judge.hpp"

using namespace kiln;
using json = nlohmann::json;

namespace {

const FigureSpec kBusbw{"busbw", "GB/s", true, true};
constexpr std::int64_t kSize = 4 << 20;

// Rank `rank`'s busbw result at the localization size; peers maps a peer's world rank to the busbw
// of its block arriving here.
Result member(int rank, double group_busbw, const std::map<int, double>& peers) {
  Result r;
  r.rank = rank;
  r.metric = "busbw";
  r.value = group_busbw;
  r.size_bytes = kSize;
  json ranks = json::array(), bw = json::array();
  for (const auto& [p, v] : peers) {
    ranks.push_back(p);
    bw.push_back(v);
  }
  r.extra["peers"] = {{"ranks", ranks}, {"busbw", bw}};
  return r;
}

std::map<std::pair<int, int>, double> by_edge(const analysis::GroupOutcome& o) {
  std::map<std::pair<int, int>, double> out;
  for (const auto& e : o.edges) out[{e.a, e.b}] = e.value;
  return out;
}

// Units 0..3 are ranks 10..13; one group of all four.
analysis::RoundPlan four() {
  analysis::RoundPlan plan;
  plan.groups = {{0, 1, 2, 3}};
  return plan;
}
const std::vector<int> kUnitRank{10, 11, 12, 13};

}  // namespace

TEST_CASE("edges: a slow link shows on its own edge only, by its worse direction", "[judge][edges]") {
  analysis::RoundRecord rr;
  // Link 11<->12 is slow one way (12's block reaches 11 at 2 GB/s), fine the other way.
  rr.results = {member(10, 2.0, {{11, 10}, {12, 10}, {13, 10}}), member(11, 2.0, {{10, 10}, {12, 2}, {13, 10}}),
                member(12, 2.0, {{10, 10}, {11, 9}, {13, 10}}), member(13, 2.0, {{10, 10}, {11, 10}, {12, 10}})};
  const auto out = analysis::group_outcomes(four(), rr, kUnitRank, {}, kBusbw, kSize);
  REQUIRE(out.size() == 1);
  CHECK(out[0].value == 2.0);  // the group figure is diluted to the slowest member's, as before
  const auto e = by_edge(out[0]);
  REQUIRE(e.size() == 6);  // every pair of four members, once, by unit index
  CHECK(e.at({1, 2}) == 2.0);
  for (const auto& [edge, v] : e)
    if (edge != std::make_pair(1, 2)) CHECK(v == 10.0);
}

TEST_CASE("edges: a direction nobody reported uses the one present", "[judge][edges]") {
  analysis::RoundRecord rr;
  rr.results = {member(10, 5.0, {{11, 7}}), member(11, 5.0, {})};
  analysis::RoundPlan plan;
  plan.groups = {{0, 1}};
  const auto out = analysis::group_outcomes(plan, rr, kUnitRank, {}, kBusbw, kSize);
  REQUIRE(out[0].edges.size() == 1);
  CHECK(out[0].edges[0].a == 0);
  CHECK(out[0].edges[0].b == 1);
  CHECK(out[0].edges[0].value == 7.0);
}

TEST_CASE("edges: a lost member contributes no edges, in either direction", "[judge][edges]") {
  analysis::RoundRecord rr;
  rr.results = {member(10, 5.0, {{11, 8}, {12, 8}, {13, 1}}), member(11, 5.0, {{10, 8}, {12, 8}, {13, 1}}),
                member(12, 5.0, {{10, 8}, {11, 8}, {13, 1}}), member(13, 5.0, {{10, 1}, {11, 1}, {12, 1}})};
  rr.missing = {13};
  const auto out = analysis::group_outcomes(four(), rr, kUnitRank, {}, kBusbw, kSize);
  CHECK(out[0].missing == std::vector<int>{3});
  const auto e = by_edge(out[0]);
  CHECK(e == std::map<std::pair<int, int>, double>{{{0, 1}, 8.0}, {{0, 2}, 8.0}, {{1, 2}, 8.0}});
  // The same by the planner's own list of lost units.
  rr.missing.clear();
  CHECK(by_edge(analysis::group_outcomes(four(), rr, kUnitRank, {3}, kBusbw, kSize)[0]) == e);
}

TEST_CASE("edges: lower-is-better figures keep the larger value; other sizes and bad entries are ignored",
          "[judge][edges]") {
  analysis::RoundRecord rr;
  auto a = member(10, 1.0, {}), b = member(11, 1.0, {});
  a.metric = b.metric = "lat";
  a.extra["peers"] = {{"ranks", {11}}, {"lat", {3.0}}};
  b.extra["peers"] = {{"ranks", {10, 99, "x"}}, {"lat", {5.0, 1.0, 1.0}}};  // 99: not in the group
  auto small = member(10, 1.0, {{11, 0.5}});
  small.metric = "lat";
  small.size_bytes = 1024;
  small.extra["peers"]["lat"] = small.extra["peers"]["busbw"];
  rr.results = {a, b, small};
  analysis::RoundPlan plan;
  plan.groups = {{0, 1}};
  const FigureSpec lat{"lat", "us", false, true};
  const auto out = analysis::group_outcomes(plan, rr, kUnitRank, {}, lat, kSize);
  REQUIRE(out[0].edges.size() == 1);
  CHECK(out[0].edges[0].value == 5.0);
  // Results without per-peer figures give no edges (a check that did not time peers).
  rr.results = {member(10, 1.0, {}), member(11, 1.0, {})};
  for (auto& r : rr.results) r.extra.erase("peers");
  CHECK(analysis::group_outcomes(plan, rr, kUnitRank, {}, kBusbw, kSize)[0].edges.empty());
}
