// ib.ports' reading of /sys/class/infiniband, on a fixture tree (tests/data/ib): no HCA here.
#include <catch2/catch.hpp>

#include "worker/hw/ib_sysfs.hpp"

using namespace kiln::worker::rdma;

namespace {
const std::string kIb = std::string(KILN_TEST_DATA) + "/ib";

const PortInfo& find(const std::vector<PortInfo>& ports, const std::string& dev) {
  for (const auto& p : ports)
    if (p.device == dev) return p;
  FAIL("no port on " << dev);
  throw;
}
}  // namespace

TEST_CASE("rate strings give rate, width and speed", "[rdma]") {
  auto r = parse_rate("400 Gb/sec (4X NDR)");
  CHECK(r.gbps == 400);
  CHECK(r.width == 4);
  CHECK(r.speed == "NDR");
  r = parse_rate("2.5 Gb/sec (1X SDR)");
  CHECK(r.gbps == Approx(2.5));
  CHECK(r.width == 1);
  r = parse_rate("25 Gb/sec (1X)");
  CHECK(r.gbps == 25);
  CHECK(r.speed.empty());
  CHECK(parse_rate("garbage").gbps == 0);
  CHECK(parse_rate("").width == 0);
}

TEST_CASE("state strings keep the code and the name", "[rdma]") {
  CHECK(parse_state("4: ACTIVE") == std::pair<int, std::string>{4, "ACTIVE"});
  CHECK(parse_state("1: DOWN").second == "DOWN");
  CHECK(parse_state("ACTIVE").second == "ACTIVE");
}

TEST_CASE("every port of the fixture is listed in device:port order", "[rdma]") {
  auto ports = list_ports(kIb + "/before");
  REQUIRE(ports.size() == 4);
  CHECK(ports[0].id() == "mlx5_0:1");
  CHECK(ports[3].id() == "mlx5_3:1");
  const auto& ndr = find(ports, "mlx5_0");
  CHECK(ndr.active());
  CHECK(ndr.rate_gbps == 400);
  CHECK(ndr.width == 4);
  CHECK(ndr.link_layer == "InfiniBand");
  CHECK(ndr.lid == "0x1a");
  CHECK(ndr.counters.at("port_xmit_data") == 123456789u);
  const auto& down = find(ports, "mlx5_2");
  CHECK_FALSE(down.active());
  CHECK(down.phys_state == "Disabled");
  CHECK(find(ports, "mlx5_3").link_layer == "Ethernet");
}

TEST_CASE("a missing tree is no ports, not an error", "[rdma]") {
  CHECK(list_ports(kIb + "/no-such-dir").empty());
}

TEST_CASE("error counters that grew are found; traffic and resets are not errors", "[rdma]") {
  auto before = list_ports(kIb + "/before");
  auto after = list_ports(kIb + "/after");
  REQUIRE(before.size() == after.size());
  CHECK(error_increases(find(before, "mlx5_0"), find(after, "mlx5_0")).empty());  // data only
  auto bad = error_increases(find(before, "mlx5_1"), find(after, "mlx5_1"));
  REQUIRE(bad.size() == 2);
  CHECK(bad[0].name == "symbol_error");
  CHECK(bad[0].delta() == 17);
  CHECK(bad[1].name == "link_downed");
  CHECK(bad[1].delta() == 1);
  CHECK(error_increases(find(before, "mlx5_2"), find(after, "mlx5_2")).empty());  // reset
}
