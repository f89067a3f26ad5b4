// The fleet compared: a node whose GPUs are all slow stands out against every other GPU of the
// campaign, heavy-tailed noise in the others does not, and a node with another driver or kernel is
// the odd one out.
#include <catch2/catch.hpp>

#include <random>

#include "common/findings.hpp"
#include "coordinator/analysis/fleet.hpp"

using namespace kiln;
using namespace kiln::analysis;

namespace {

Result burn(const std::string& host, int gpu, double tflops) {
  Result r;
  r.test = "gpu.burn";
  r.host = host;
  r.metric = "tflops";
  r.value = tflops;
  r.unit = "TFLOP/s";
  r.entity = {"gpu", host + "/gpu" + std::to_string(gpu)};
  return r;
}

// 16 nodes x 8 GPUs around 690 TFLOP/s, Student-t noise (3 degrees of freedom: heavy tails).
Fleet burn_fleet(double node3_factor, unsigned seed) {
  Fleet f;
  std::mt19937 rng(seed);
  std::student_t_distribution<double> t(3.0);
  for (int n = 0; n < 16; ++n)
    for (int g = 0; g < 8; ++g)
      for (int i = 0; i < 3; ++i) {
        const double noise = std::clamp(t(rng) * 0.01, -0.08, 0.08);
        f.add_record(burn("node" + std::to_string(n), g, 690.0 * (1 + noise) * (n == 3 ? node3_factor : 1.0)));
      }
  return f;
}

std::vector<std::string> ids(const std::vector<Finding>& fs, Code code) {
  std::vector<std::string> out;
  for (const auto& f : fs)
    if (f.code == code) out.push_back(f.entity.id);
  return out;
}

}  // namespace

TEST_CASE("fleet: a node whose 8 GPUs are all 25% slow is found, GPU by GPU; heavy-tailed noise is not", "[fleet]") {
  int false_alarms = 0;
  for (unsigned seed = 1; seed <= 50; ++seed) {
    false_alarms += static_cast<int>(burn_fleet(1.0, seed).findings().size());
    const auto found = burn_fleet(0.75, seed).findings();
    const auto slow = ids(found, Code::FleetOutlier);
    REQUIRE(slow.size() == 8);
    for (const auto& id : slow) CHECK(id.rfind("node3/", 0) == 0);
  }
  CHECK(false_alarms == 0);
  const auto f = burn_fleet(0.75, 7).findings().front();
  CHECK(f.summary.find("worse than the fleet median") != std::string::npos);
  CHECK(f.evidence[0]["fleet_size"] == 128);
  CHECK(f.evidence[0]["value"].get<double>() < 0.8 * f.evidence[0]["fleet_median"].get<double>());
}

TEST_CASE("fleet: a 5% difference, skips, a small fleet and lower-is-better figures", "[fleet]") {
  CHECK(ids(burn_fleet(0.95, 3).findings(), Code::FleetOutlier).empty());  // under the 10% cutoff
  Fleet small;
  for (int n = 0; n < 3; ++n) small.add_record(burn("n" + std::to_string(n), 0, n == 0 ? 100 : 700));
  CHECK(small.findings().empty());  // 3 GPUs are no fleet
  Fleet skipped;
  for (int n = 0; n < 8; ++n) {
    auto r = burn("n" + std::to_string(n), 0, n == 0 ? 0 : 700);
    if (n == 0) r.status = Status::Skip;
    skipped.add_record(r);
  }
  CHECK(skipped.findings().empty());  // a SKIP is not a figure
}

TEST_CASE("fleet: the node with another driver or kernel is the odd one out", "[fleet]") {
  Fleet f;
  for (int n = 0; n < 6; ++n) {
    NodeInfo info;
    info.host = "node" + std::to_string(n);
    info.cuda_driver = n == 4 ? "12.8" : "13.0";
    info.nccl_version = "2.28.3";
    info.gpu_count = 8;
    f.add_node(info);
    f.add_inventory(info.host, {{"kernel", n == 2 ? "6.1.0-40" : "6.1.0-41"}, {"cpus", 64}, {"memory_gib", 2015.6}});
  }
  const auto found = f.findings();
  REQUIRE(found.size() == 2);
  CHECK(ids(found, Code::FleetSetting) == std::vector<std::string>{"node4", "node2"});
  CHECK(found[0].summary == "CUDA driver on node4 is '12.8' where 5 of 6 nodes have '13.0'");
  CHECK(found[0].severity == Severity::Warning);
  // Half and half is no majority: nobody is odd.
  Fleet split;
  for (int n = 0; n < 4; ++n) split.add_inventory("n" + std::to_string(n), {{"kernel", n < 2 ? "a" : "b"}});
  CHECK(split.findings().empty());
}
