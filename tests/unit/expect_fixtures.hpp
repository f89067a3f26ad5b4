// Shared by the unit tests of the judgement against a spec (test_expect.cpp, test_expect_hardware.cpp):
// a three-node spec, nodes, rounds, results and ends as a campaign records them.
#pragma once

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "common/findings.hpp"
#include "coordinator/analysis/expect.hpp"

namespace expect_fixtures {

using namespace kiln;
using analysis::ExpectMode;
using analysis::Expectations;
using analysis::NodeSeen;
using analysis::RoundRecord;


inline const char* kSpec = R"(
[[class]]
name = "gpu"
hosts = "n[1-3]"
[class.hardware]
gpu_model = "H200"
[class.figures."gpu.burn"]
tflops = { value = 600, tolerance = 0.10, source = "burn on n1" }
[class.figures."mpi.all_reduce".intra.busbw]
"1MiB" = { value = 10, tolerance = 0.10, source = "intra figure" }
[class.figures."mpi.all_reduce".inter.busbw]
"1MiB" = { value = 5, tolerance = 0.20, ranks = 2, source = "inter figure" }
[class.figures."net.pair_bw".inter]
latency = { value = 10, tolerance = 0.50, source = "latency figure" }
)";

inline Expectations expect(const std::string& text = kSpec) {
  auto parsed = spec::parse_spec(text, "t.toml");
  INFO((parsed.errors.empty() ? std::string() : parsed.errors.front()));
  REQUIRE(parsed.spec);
  Expectations e;
  e.mode = ExpectMode::Spec;
  e.label = "t.toml";
  e.specs.push_back(std::move(*parsed.spec));
  e.planned = {"gpu.health", "gpu.burn", "mpi.all_reduce", "net.pair_bw"};
  return e;
}

inline NodeSeen node(const std::string& host, std::vector<int> ranks) {
  NodeSeen n;
  n.host = host;
  n.ranks = std::move(ranks);
  n.info.host = host;
  return n;
}

// n1: ranks 0 and 1; n2: rank 2; n3: rank 3.
inline std::vector<NodeSeen> nodes() { return {node("n1", {0, 1}), node("n2", {2}), node("n3", {3})}; }

inline RoundRecord round(std::int64_t id, const std::string& test, std::vector<std::vector<int>> groups = {}) {
  RoundRecord rr;
  rr.round.id = id;
  rr.round.tests = {{test, nlohmann::json::object()}};
  rr.round.groups = std::move(groups);
  return rr;
}

inline Result result(const std::string& test, const std::string& host, int rank, const std::string& metric, double value,
              Entity ent = {}, std::optional<std::int64_t> size = std::nullopt, int group = -1) {
  Result r;
  r.test = test;
  r.host = host;
  r.rank = rank;
  r.metric = metric;
  r.value = value;
  r.entity = ent.kind.empty() ? Entity{"rank", std::to_string(rank)} : ent;
  r.size_bytes = size;
  r.group_id = group;
  return r;
}

inline CheckEnd end(const std::string& test, const std::string& host, int rank, Status s, const std::string& reason = "") {
  CheckEnd e;
  e.test = test;
  e.host = host;
  e.rank = rank;
  e.status = s;
  e.reason = reason;
  return e;
}

// The plan's ends for every rank, so that only the test's own subject is missing.
inline RoundRecord ran_everywhere(std::int64_t id, const std::string& test) {
  auto rr = round(id, test, {{0, 1, 2, 3}});
  for (auto [host, rank] : {std::pair{"n1", 0}, std::pair{"n1", 1}, std::pair{"n2", 2}, std::pair{"n3", 3}})
    rr.ends.push_back(end(test, host, rank, Status::Pass));
  return rr;
}

inline std::vector<RoundRecord> all_ran() {
  std::vector<RoundRecord> rs;
  std::int64_t id = 1;
  for (const char* t : {"gpu.health", "gpu.burn", "mpi.all_reduce", "net.pair_bw"}) rs.push_back(ran_everywhere(id++, t));
  return rs;
}

inline std::vector<Finding> with_code(const std::vector<Finding>& fs, Code c) {
  std::vector<Finding> out;
  for (const auto& f : fs)
    if (f.code == c) out.push_back(f);
  return out;
}

inline std::int64_t MiB(int n) { return static_cast<std::int64_t>(n) << 20; }


}  // namespace expect_fixtures
