// Rail pairing and bandwidth arithmetic of the rdma.* pair tests.
#include <catch2/catch.hpp>

#include "worker/checks/rdma/rails.hpp"

using namespace kiln::worker::rdma;

namespace {
PortInfo port(const std::string& dev, int n, bool active = true, double rate = 400, const std::string& ll = "InfiniBand") {
  PortInfo p;
  p.device = dev;
  p.port = n;
  p.state = active ? "ACTIVE" : "DOWN";
  p.rate_gbps = rate;
  p.link_layer = ll;
  return p;
}
}  // namespace

TEST_CASE("equal nodes pair port i with port i", "[rdma]") {
  std::vector<PortInfo> a, b;
  for (int i = 7; i >= 0; --i) a.push_back(port("mlx5_" + std::to_string(i), 1));  // any order in
  for (int i = 0; i < 8; ++i) b.push_back(port("mlx5_" + std::to_string(i), 1));
  auto plan = plan_rails(a, b);
  REQUIRE(plan.rails.size() == 8);
  for (int i = 0; i < 8; ++i) {
    CHECK(plan.rails[i].index == i);
    CHECK(plan.rails[i].local.device == "mlx5_" + std::to_string(i));
    CHECK(plan.rails[i].peer.device == "mlx5_" + std::to_string(i));
  }
  CHECK(plan.unpaired_local.empty());
  CHECK(plan.unpaired_peer.empty());
}

TEST_CASE("both sides of a pair get mirrored plans", "[rdma]") {
  std::vector<PortInfo> a{port("mlx5_0", 1), port("mlx5_1", 1), port("mlx5_2", 1, false)};
  std::vector<PortInfo> b{port("mlx5_0", 1), port("mlx5_1", 1), port("mlx5_2", 1)};
  auto ab = plan_rails(a, b), ba = plan_rails(b, a);
  REQUIRE(ab.rails.size() == ba.rails.size());
  for (std::size_t i = 0; i < ab.rails.size(); ++i) {
    CHECK(ab.rails[i].local.id() == ba.rails[i].peer.id());
    CHECK(ab.rails[i].peer.id() == ba.rails[i].local.id());
  }
  // A down port is a missing rail, reported on the side that still has one.
  REQUIRE(ab.unpaired_peer.size() == 1);
  CHECK(ab.unpaired_peer[0].id() == "mlx5_2:1");
  REQUIRE(ba.unpaired_local.size() == 1);
}

TEST_CASE("InfiniBand and RoCE ports never share a rail", "[rdma]") {
  std::vector<PortInfo> a{port("mlx5_0", 1), port("mlx5_4", 1, true, 100, "Ethernet")};
  std::vector<PortInfo> b{port("mlx5_4", 1, true, 100, "Ethernet")};
  auto plan = plan_rails(a, b);
  REQUIRE(plan.rails.size() == 1);
  CHECK(plan.rails[0].local.link_layer == "Ethernet");
  REQUIRE(plan.unpaired_local.size() == 1);
  CHECK(plan.unpaired_local[0].link_layer == "InfiniBand");
}

TEST_CASE("a rail runs at the slower end's rate", "[rdma]") {
  Rail r{0, port("a", 1, true, 400), port("b", 1, true, 200)};
  CHECK(r.line_rate_gbps() == 200);
}

TEST_CASE("bandwidth arithmetic in Gb/s", "[rdma]") {
  // 2000 writes of 1 MiB in 45 ms: 372.8 Gb/s, 93% of a 400 Gb/s NDR rail.
  const double gbps = gbits_per_s(2000ull << 20, 0.045);
  CHECK(gbps == Approx(372.8).epsilon(1e-3));
  CHECK(rail_efficiency(gbps, 400) == Approx(0.932).epsilon(1e-3));
  CHECK(gbits_per_s(1, 0) == 0);
  CHECK(rail_efficiency(100, 0) == 0);
}

TEST_CASE("enough messages in flight to cover the bandwidth-delay product", "[rdma]") {
  // 400 Gb/s x 5 us = 250 kB in flight: 64 KiB messages need 3.8 -> 5 with the margin of 2.
  CHECK(messages_in_flight(64 << 10, 400, 5, 128) == 5);
  CHECK(messages_in_flight(8, 400, 5, 128) == 128);  // capped by the queue depth
  CHECK(messages_in_flight(1 << 30, 400, 5, 128) == 2);
  CHECK(messages_in_flight(0, 400, 5, 128) == 1);
}
