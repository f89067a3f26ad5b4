// The report is built by one function from typed inputs (the live campaign and kiln report both
// use it): no malformed value in the records may stop it, and rounds cut short are counted but
// never judged.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "common/findings.hpp"
#include "coordinator/report.hpp"

using namespace kiln;
using namespace kiln::coord;
using json = nlohmann::json;

namespace {

bool has(const std::vector<Finding>& fs, const std::string& code, const std::string& id) {
  for (const auto& f : fs)
    if (to_string(f.code) == code && f.entity.id == id) return true;
  return false;
}

Result failed(int rank, std::int64_t round) {
  Result r;
  r.test = "mpi.all_reduce";
  r.host = "n" + std::to_string(rank);
  r.rank = rank;
  r.entity = {"rank", std::to_string(rank)};
  r.status = Status::Fail;
  r.round_id = round;
  return r;
}

}  // namespace

TEST_CASE("build_report: no malformed value stops the report", "[report][recover]") {
  analysis::RoundRecord rr;
  rr.round.id = 1;
  Result r;
  r.test = "gpu.burn\xff\xfe";  // not UTF-8
  r.host = "n\xc3";
  r.rank = 0;
  r.entity = {"gpu", "n0/gpu\xff"};
  r.metric = "busbw";
  r.value = std::nan("");
  r.size_bytes = std::numeric_limits<std::int64_t>::max();
  r.status = Status::Fail;
  r.problems = {json({{"code", 5}}).get<Problem>(), json({{"code", "no.such"}}).get<Problem>()};
  r.extra = {{"problems", {{{"code", 5}}}}};
  rr.results.push_back(r);
  Result stray = r;
  stray.rank = -7;  // a rank the campaign never had
  rr.results.push_back(stray);
  rr.result_count = 2;
  rr.by_test[r.test]["fail"] = 2;
  ReportInput in;
  in.run_id = "r1";
  in.expected_ranks = 1;
  in.ranks = {{0, "n\xc3", true, false, "", {}, {}}};
  in.ranks[0].counts.add(r);
  Report rep;
  REQUIRE_NOTHROW(rep = build_report(in, {rr}));
  CHECK(rep.verdict == "fail");
  CHECK(has(rep.findings, "result.invalid", "n0/gpu\xff"));
  std::string text;
  REQUIRE_NOTHROW(text = json(rep).dump(2, ' ', false, json::error_handler_t::replace));
  CHECK(json::parse(text)["results"]["total"] == 2);
  CHECK(rep.ranks.at(0).results == 1);
  CHECK_NOTHROW(render_summary(rep, "results.jsonl", "report.json"));
}

TEST_CASE("judge_plan leaves out rounds that were cut short", "[report][recover]") {
  analysis::RoundRecord rr;
  rr.round.id = 4;
  rr.finished = false;
  rr.results.push_back(failed(0, 4));
  rr.missing = {1};
  CHECK(analysis::judge_plan(2, {{0, "n0", true, false, ""}, {1, "n1", true, false, ""}}, {rr}).empty());
}

TEST_CASE("add_or_merge: one finding per code and entity, carrying both lines of evidence", "[report]") {
  std::vector<kiln::Finding> fs;
  kiln::coord::add_or_merge(fs, kiln::make_finding(kiln::Code::SwitchSlow, {"switch", "leaf1<->leaf2"}, "from the pair rounds",
                                                   nlohmann::json::array({{{"inside", 6}}}), 0.9));
  kiln::coord::add_or_merge(fs, kiln::make_finding(kiln::Code::NodeSlow, {"node", "n3"}, "n3 slow"));
  kiln::coord::add_or_merge(fs, kiln::make_finding(kiln::Code::SwitchSlow, {"switch", "leaf1<->leaf2"}, "from the link figures",
                                                   nlohmann::json::array({{{"crossing_median", 1.5}}}), 0.95));
  kiln::coord::add_or_merge(fs, kiln::make_finding(kiln::Code::SwitchSlow, {"switch", "leaf1"}, "another switch"));
  REQUIRE(fs.size() == 3);
  CHECK(fs[0].evidence.size() == 2);
  CHECK(fs[0].evidence[1].value("crossing_median", 0.0) == 1.5);
  CHECK(fs[0].summary == "from the pair rounds; from the link figures");
  CHECK(fs[0].confidence == Approx(0.95));
  CHECK(fs[2].entity.id == "leaf1");
}
