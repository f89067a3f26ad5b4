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

TEST_CASE("the report splits the nodes into good and bad hostlists", "[report][hostlist]") {
  Report r;
  r.hostlist = "node[1-7]";
  for (int i = 1; i <= 6; ++i) r.nodes.push_back({"node" + std::to_string(i), {i - 1}, {}});  // node7 never came
  for (int i = 0; i < 6; ++i) r.ranks.push_back({i, "node" + std::to_string(i + 1), i == 4 ? "lost" : "ok", 0, {}, ""});
  r.findings.push_back(make_finding(Code::NodeSlow, {"node", "node3"}, "slow", json::array(), 0.96));
  r.findings.push_back(make_finding(Code::GpuSdc, {"gpu", "node2/gpu1"}, "sdc", json::array(), 1.0));
  r.findings.push_back(make_finding(Code::LinkSlow, {"link", "node1<->node6"}, "link", json::array(), 0.96));
  r.findings.push_back(make_finding(Code::FleetSetting, {"node", "node1"}, "a warning", json::array(), 1.0));
  r.findings.push_back(make_finding(Code::TestFail, {"rank", "0"}, "rank 0 failed", json::array(), 1.0));
  const auto s = split_nodes(r);
  // Bad: node1 (rank 0's test.fail), node2 (a GPU), node3 (node.slow), node5 (rank 4 lost), node7
  // (never connected); the link and the warning make nothing bad on their own.
  CHECK(s.bad == "node[1-3,5,7]");
  CHECK(s.good == "node[4,6]");
  CHECK(s.good_count == 2);
  CHECK(s.bad_count == 5);
  json j = r;
  CHECK(j["hostlists"]["good"] == "node[4,6]");
  CHECK(j["hostlists"]["bad"] == "node[1-3,5,7]");
  const auto text = render_summary(r, "results.jsonl", "report.json");
  CHECK(text.find("good nodes (2): node[4,6]") != std::string::npos);
  CHECK(text.find("bad nodes (5): node[1-3,5,7]") != std::string::npos);
}

TEST_CASE("a rank's headline is its largest measured size, never a line the budget skipped", "[report]") {
  auto line = [](std::int64_t size, double value, kiln::Status status) {
    kiln::Result r;
    r.test = "nccl.all_reduce";
    r.metric = "busbw";
    r.unit = "GB/s";
    r.size_bytes = size;
    r.value = value;
    r.status = status;
    return r;
  };
  kiln::coord::RankCounts k;
  k.add(line(1 << 20, 47.5, kiln::Status::Pass));
  k.add(line(1 << 27, 284.25, kiln::Status::Pass));
  // The sweep's time budget skipped the largest size: value 0, status skip.
  k.add(line(1 << 28, 0.0, kiln::Status::Skip));
  k.add(line(1 << 29, 0.0, kiln::Status::Error));
  CHECK(k.headline == "nccl.all_reduce busbw 284.25 GB/s @ 134217728 B");
  // A slow (failing) line is a measured figure, and the headline shows it.
  k.add(line(1 << 30, 12.5, kiln::Status::Fail));
  CHECK(k.headline == "nccl.all_reduce busbw 12.50 GB/s @ 1073741824 B");
  CHECK(k.results == 5);
}

TEST_CASE("a rank with no sized sweep gets its first unsized figure as headline, until a sweep comes", "[report]") {
  kiln::coord::RankCounts k;
  kiln::Result burn;
  burn.test = "gpu.burn";
  burn.metric = "tflops";
  burn.unit = "TFLOP/s";
  burn.value = 691.0;
  burn.status = kiln::Status::Pass;
  k.add(burn);
  CHECK(k.headline == "gpu.burn tflops 691.00 TFLOP/s");  // was empty: a GPU burn-in showed no headline
  burn.value = 12.0;
  k.add(burn);
  CHECK(k.headline == "gpu.burn tflops 691.00 TFLOP/s");  // the first stays
  kiln::Result sweep;
  sweep.test = "nccl.all_reduce";
  sweep.metric = "busbw";
  sweep.unit = "GB/s";
  sweep.size_bytes = 1 << 20;
  sweep.value = 47.5;
  sweep.status = kiln::Status::Pass;
  k.add(sweep);
  CHECK(k.headline == "nccl.all_reduce busbw 47.50 GB/s @ 1048576 B");
  kiln::coord::RankCounts empty;
  empty.merge(k);
  CHECK(empty.headline == k.headline);
}
