// The fleet compared: a node whose GPUs are all slow stands out against every other GPU of the
// campaign, heavy-tailed noise in the others does not, and a node with another driver or kernel is
// the odd one out.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>

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

namespace {

// net.pair_bw over `nodes` hosts, pairings of the circle method as the check runs them with its
// default of 7 partners (all pairs up to 8 nodes), both directions; a link's figure is divided by slow_node when one end is `slow` and by slow_link when
// it is that link. Lognormal noise of 10%.
Fleet pair_fleet(int nodes, const std::string& slow, double slow_node, const std::string& slow_pair,
                 double slow_link, unsigned seed) {
  Fleet f;
  std::mt19937 rng(seed);
  std::lognormal_distribution<double> noise(0.0, 0.1);
  const int n = nodes + nodes % 2;
  for (int round = 0; round < std::min(n - 1, 7 + nodes % 2); ++round)
    for (int x = 0; x < nodes; ++x) {
      const int y = x == n - 1 ? round : x == round ? n - 1 : ((2 * round - x) % (n - 1) + (n - 1)) % (n - 1);
      if (y >= nodes || y < x) continue;
      const std::string a = "node" + std::to_string(x), b = "node" + std::to_string(y);
      for (int dir = 0; dir < 2; ++dir) {
        Result r;
        r.test = "net.pair_bw";
        r.host = a;
        r.metric = "bw";
        r.unit = "GB/s";
        r.size_bytes = 8 << 20;
        r.entity = {"link", std::min(a, b) + "<->" + std::max(a, b)};
        r.value = 1.0 * noise(rng) / ((a == slow || b == slow) ? slow_node : 1.0) /
                  (r.entity.id == slow_pair ? slow_link : 1.0);
        f.add_record(r);
      }
    }
  return f;
}

}  // namespace

TEST_CASE("fleet: a node slow with every partner stands out by its median link; one slow link does not", "[fleet]") {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    auto found = pair_fleet(6, "node3", 5.0, "", 1.0, seed).findings();
    REQUIRE(found.size() == 1);
    CHECK(found[0].code == Code::FleetOutlier);
    CHECK(found[0].entity.id == "node3");
    CHECK(found[0].summary.find("the median of its links") != std::string::npos);
    // One slow link among healthy nodes: each end keeps two healthy partners, so no node is named.
    CHECK(pair_fleet(6, "", 1.0, "node1<->node4", 10.0, seed).findings().empty());
    CHECK(pair_fleet(16, "", 1.0, "", 1.0, seed).findings().empty());
  }
  // Links inside one host are not about the network and are left out.
  Fleet f;
  Result r;
  r.test = "net.pair_bw";
  r.metric = "bw";
  r.entity = {"link", "n1/rank0<->n1/rank1"};
  r.value = 1;
  f.add_record(r);
  CHECK(f.figures() == 0);
}

namespace {

// Every pair of `leaves` x 3 hosts measured once with net.pair_bw, 10% lognormal noise; a link that
// crosses out of a leaf in `slow_leaves` is 20x slow.
Fleet leaf_fleet(int leaves, const std::set<int>& slow_leaves, unsigned seed) {
  Fleet f;
  std::mt19937 rng(seed);
  std::lognormal_distribution<double> noise(0.0, 0.1);
  std::map<std::string, std::vector<std::string>> tree;
  const int n = leaves * 3;
  for (int i = 0; i < n; ++i) tree["leaf" + std::to_string(i / 3 + 1)].push_back("n" + std::to_string(i));
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) {
      Result r;
      r.test = "net.pair_bw";
      r.metric = "bw";
      r.size_bytes = 8 << 20;
      r.entity = {"link", "n" + std::to_string(i) + "<->n" + std::to_string(j)};
      const bool crosses = i / 3 != j / 3;
      const bool slow = crosses && (slow_leaves.count(i / 3 + 1) || slow_leaves.count(j / 3 + 1));
      r.value = noise(rng) / (slow ? 20.0 : 1.0);
      f.add_record(r);
    }
  f.set_leaves(tree);
  return f;
}

std::set<std::pair<std::string, std::string>> codes(const std::vector<Finding>& fs) {
  std::set<std::pair<std::string, std::string>> out;
  for (const auto& f : fs) out.insert({to_string(f.code), f.entity.id});
  return out;
}

}  // namespace

TEST_CASE("fleet: a slow uplink is a switch.slow on the path between leaves, not a node finding", "[fleet]") {
  using Set = std::set<std::pair<std::string, std::string>>;
  for (unsigned seed = 1; seed <= 20; ++seed) {
    // Two leaves: either uplink (or the spine) could be at fault, so the path is named.
    CHECK(codes(leaf_fleet(2, {2}, seed).findings()) == Set{{"switch.slow", "leaf1<->leaf2"}});
    // Three leaves: the leaf whose every crossing is slow while leaf1<->leaf2 is fast.
    CHECK(codes(leaf_fleet(3, {3}, seed).findings()) == Set{{"switch.slow", "leaf3"}});
    CHECK(leaf_fleet(2, {}, seed).findings().empty());
    CHECK(leaf_fleet(3, {}, seed).findings().empty());
  }
  // Without the topology there is no uplink comparison.
  auto f = leaf_fleet(2, {2}, 1);
  f.set_leaves({});
  CHECK(codes(f.findings()).count({"switch.slow", "leaf1<->leaf2"}) == 0);
}

TEST_CASE("fleet: stack.versions names the node whose driver or HCA firmware differs from the majority", "[fleet]") {
  Fleet f;
  for (int n = 0; n < 5; ++n) {
    Result r;
    r.test = "stack.versions";
    r.metric = "versions";
    r.host = "node" + std::to_string(n);
    r.extra = {{"driver", n == 1 ? "570.133.20" : "580.159.04"},
               {"nccl", nullptr},
               {"hca_fw", {{"mlx5_0", "28.39.1002"}, {"mlx5_1", n == 3 ? "28.36.1010" : "28.39.1002"}}}};
    f.add_record(r);
  }
  const auto found = f.findings();
  REQUIRE(found.size() == 2);
  CHECK(ids(found, Code::FleetSetting) == std::vector<std::string>{"node1", "node3"});
  CHECK(found[0].summary == "stack driver on node1 is '570.133.20' where 4 of 5 nodes have '580.159.04'");
  CHECK(found[1].summary == "stack hca_fw on node3 is '28.36.1010, 28.39.1002' where 4 of 5 nodes have '28.39.1002'");
}

TEST_CASE("fleet: storage.fio's further figures are compared too; a node with slow shared reads is found", "[fleet]") {
  // 6 nodes with the same local disk; node3's shared mount reads random 4K at a tenth of the others.
  // Its local figures are fine, so the finding is about shared_rand_read alone.
  Fleet f;
  for (int n = 0; n < 6; ++n) {
    const std::string host = "node" + std::to_string(n);
    for (const auto& [metric, value] : {std::pair{"local_seq_read", 2.2 + 0.01 * n}, {"local_rand_read", 25.0 + 0.1 * n},
                                        {"shared_rand_read", (n == 3 ? 1.9 : 19.0) + 0.1 * n}}) {
      Result r;
      r.test = "storage.fio";
      r.host = host;
      r.metric = metric;
      r.value = value;
      r.entity = {"node", host};
      f.add_record(r);
    }
  }
  CHECK(f.figures() == 3);
  const auto found = f.findings();
  REQUIRE(ids(found, Code::FleetOutlier) == std::vector<std::string>{"node3"});
  CHECK_THAT(found[0].summary, Catch::Contains("shared_rand_read"));
  // A metric the check does not declare is not a figure.
  Result other;
  other.test = "storage.fio";
  other.host = "node0";
  other.metric = "local";
  other.entity = {"node", "node0"};
  f.add_record(other);
  CHECK(f.figures() == 3);
}
