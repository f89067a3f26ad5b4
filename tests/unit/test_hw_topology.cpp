// The HCA nearest each GPU (worker/hw/pci_topology), on a fake sysfs tree built in a temp dir, and
// the ports a pair test drives (choose_ports in worker/checks/rdma/rails.hpp).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "worker/checks/rdma/rails.hpp"
#include "worker/hw/pci_topology.hpp"

using namespace kiln::worker;
namespace fs = std::filesystem;

namespace {

// A two-socket node as sysfs shows it: root complex pci0000:00 (NUMA 0) with two PCIe switches,
// each holding a GPU and an HCA; root complex pci0000:80 (NUMA 1) with a GPU and two HCAs on
// separate root ports; and an HCA whose `device` link does not resolve.
//
//   pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0   GPU 0000:03:00.0
//   pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0   mlx5_1 (same switch as GPU 03)
//   pci0000:00/0000:00:02.0/0000:11:00.0/0000:12:00.0/0000:13:00.0   GPU 0000:13:00.0
//   pci0000:00/0000:00:02.0/0000:11:00.0/0000:12:01.0/0000:14:00.0   mlx5_0 (same switch as GPU 13)
//   pci0000:80/0000:80:01.0/0000:81:00.0                             GPU 0000:81:00.0 (NUMA 1)
//   pci0000:80/0000:80:02.0/0000:82:00.0                             mlx5_3 (NUMA 1)
//   pci0000:80/0000:80:03.0/0000:83:00.0                             mlx5_2 (NUMA 1)
//   mlx5_9/device -> nowhere
class FakeSysfs {
 public:
  FakeSysfs() : root_(fs::temp_directory_path() / ("kiln-topo-" + std::to_string(::getpid()))) {
    fs::remove_all(root_);
    gpu("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0", 0);
    hca("mlx5_1", "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0", 0);
    gpu("pci0000:00/0000:00:02.0/0000:11:00.0/0000:12:00.0/0000:13:00.0", 0);
    hca("mlx5_0", "pci0000:00/0000:00:02.0/0000:11:00.0/0000:12:01.0/0000:14:00.0", 0);
    gpu("pci0000:80/0000:80:01.0/0000:81:00.0", 1);
    hca("mlx5_3", "pci0000:80/0000:80:02.0/0000:82:00.0", 1);
    hca("mlx5_2", "pci0000:80/0000:80:03.0/0000:83:00.0", 1);
    fs::create_directories(ib() / "mlx5_9");
    fs::create_symlink(root_ / "sys/devices/gone", ib() / "mlx5_9" / "device");
  }
  ~FakeSysfs() { fs::remove_all(root_); }
  fs::path ib() const { return root_ / "sys/class/infiniband"; }
  fs::path pci() const { return root_ / "sys/bus/pci/devices"; }

 private:
  fs::path dev(const std::string& rel, int numa) {
    const fs::path d = root_ / "sys/devices" / rel;
    fs::create_directories(d);
    std::ofstream(d / "numa_node") << numa << "\n";
    return d;
  }
  void gpu(const std::string& rel, int numa) {
    const fs::path d = dev(rel, numa);
    fs::create_directories(pci());
    fs::create_symlink(d, pci() / d.filename());
  }
  void hca(const std::string& name, const std::string& rel, int numa) {
    const fs::path d = dev(rel, numa);
    fs::create_directories(ib() / name);
    fs::create_symlink(d, ib() / name / "device");
  }
  fs::path root_;
};

}  // namespace

TEST_CASE("bus ids from NVML, CUDA and sysfs name the same function", "[topo]") {
  CHECK(topo::normalize_bus_id("00000000:1B:00.0") == "0000:1b:00.0");
  CHECK(topo::normalize_bus_id("0000:1B:00.0") == "0000:1b:00.0");
  CHECK(topo::normalize_bus_id("0000:1b:00.0") == "0000:1b:00.0");
  CHECK(topo::normalize_bus_id("1b:00.0") == "0000:1b:00.0");
  CHECK(topo::normalize_bus_id("00010000:01:00.0") == "10000:01:00.0");  // a VMD domain
  CHECK(topo::normalize_bus_id("GPU-1234").empty());
  CHECK(topo::normalize_bus_id("").empty());
  CHECK(topo::normalize_bus_id("0000:zz:00.0").empty());
}

TEST_CASE("the shared path depth counts components, not characters", "[topo]") {
  CHECK(topo::common_depth("/sys/devices/pci0000:00/0000:00:01.0", "/sys/devices/pci0000:00/0000:00:01.0/x") == 4);
  CHECK(topo::common_depth("/sys/devices/pci0000:00/0000:00:01.0", "/sys/devices/pci0000:00/0000:00:01.1") == 3);
  CHECK(topo::common_depth("/sys/devices/pci0000:00", "/sys/devices/pci0000:80") == 2);
  CHECK(topo::common_depth("", "/sys/devices") == 0);
}

TEST_CASE("the nearest HCA: longest shared PCI path, then NUMA node, then order", "[topo]") {
  using topo::PciPlace;
  const PciPlace gpu{"0000:03:00.0", "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0", 0};
  std::vector<PciPlace> hcas{{"mlx5_0", "/sys/devices/pci0000:00/0000:00:02.0/0000:11:00.0", 0},
                             {"mlx5_1", "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0", 0},
                             {"mlx5_2", "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0", 1}};
  auto n = topo::nearest(gpu, hcas);
  REQUIRE(n);
  CHECK(n->index == 1);
  CHECK(n->by == "pci");
  CHECK(n->depth == 5);  // sys, devices, pci0000:00, 0000:00:01.0, 0000:01:00.0

  // Only the root complex apart: the NUMA node decides, else the first by order.
  const PciPlace far{"0000:c1:00.0", "/sys/devices/pci0000:c0/0000:c0:01.0/0000:c1:00.0", 1};
  n = topo::nearest(far, hcas);
  REQUIRE(n);
  CHECK(n->index == 2);
  CHECK(n->by == "numa");
  const PciPlace unknown_numa{"0000:c1:00.0", far.path, -1};
  n = topo::nearest(unknown_numa, hcas);
  REQUIRE(n);
  CHECK(n->index == 0);
  CHECK(n->by == "order");

  n = topo::nearest(gpu, {hcas[2]});
  REQUIRE(n);
  CHECK(n->by == "only");
  CHECK_FALSE(topo::nearest(gpu, {}));
}

TEST_CASE("a fake sysfs tree: each GPU gets the HCA behind its own PCIe switch or on its socket", "[topo]") {
  const FakeSysfs sys;
  const auto hcas = topo::hca_places(sys.ib());
  REQUIRE(hcas.size() == 5);
  CHECK(hcas[0].name == "mlx5_0");
  CHECK(hcas[0].numa_node == 0);
  CHECK(hcas[4].name == "mlx5_9");
  CHECK(hcas[4].path.empty());  // its link does not resolve

  auto b = topo::nearest_hca("00000000:03:00.0", sys.ib(), sys.pci());  // as NVML writes it
  REQUIRE(b);
  CHECK(b->hca == "mlx5_1");
  CHECK(b->gpu == "0000:03:00.0");
  CHECK(b->by == "pci");
  b = topo::nearest_hca("0000:13:00.0", sys.ib(), sys.pci());
  REQUIRE(b);
  CHECK(b->hca == "mlx5_0");
  // GPU 81 shares only its root complex with mlx5_2 and mlx5_3: a tie on the path and on NUMA
  // node 1, so the first by name.
  b = topo::nearest_hca("0000:81:00.0", sys.ib(), sys.pci());
  REQUIRE(b);
  CHECK(b->hca == "mlx5_2");
  CHECK(b->by == "order");
  CHECK(b->to_json()["device"] == "mlx5_2");

  CHECK_FALSE(topo::nearest_hca("0000:99:00.0", sys.ib(), sys.pci()));  // no such GPU
  CHECK_FALSE(topo::nearest_hca("0000:03:00.0", sys.ib() / "none", sys.pci()));  // no HCA
  CHECK(topo::hca_places(sys.ib() / "none").empty());
}

TEST_CASE("a pair test drives the nearest HCA's ports, every port, or the ones it is told", "[rdma]") {
  using rdma::PortInfo;
  auto port = [](const std::string& dev, int n, bool active = true) {
    PortInfo p;
    p.device = dev;
    p.port = n;
    p.state = active ? "ACTIVE" : "DOWN";
    p.link_layer = "InfiniBand";
    return p;
  };
  const std::vector<PortInfo> ports{port("mlx5_0", 1), port("mlx5_1", 1), port("mlx5_1", 2), port("mlx5_2", 1, false)};
  auto ids = [](const rdma::PortChoice& c) {
    std::vector<std::string> out;
    for (const auto& p : c.ports) out.push_back(p.id());
    return out;
  };

  // The default: the nearest HCA of this rank's GPU, with several ranks on the node.
  auto c = rdma::choose_ports(ports, "nearest", "mlx5_1", 3, 8);
  CHECK(ids(c) == std::vector<std::string>{"mlx5_1:1", "mlx5_1:2"});
  CHECK(c.how == "nearest HCA mlx5_1 (to GPU 3)");
  CHECK(ids(rdma::choose_ports(ports, "", "mlx5_1", 3, 8)) == ids(c));
  // Its port is down: no port (the rail of that GPU is down), not another HCA.
  CHECK(rdma::choose_ports(ports, "nearest", "mlx5_2", 2, 8).ports.empty());
  // The only rank on its node, or no known nearest HCA: every active port.
  const std::vector<std::string> all{"mlx5_0:1", "mlx5_1:1", "mlx5_1:2"};
  c = rdma::choose_ports(ports, "nearest", "mlx5_1", 0, 1);
  CHECK(ids(c) == all);
  CHECK_THAT(c.how, Catch::Contains("the only rank on its node"));
  c = rdma::choose_ports(ports, "nearest", "", 0, 8);
  CHECK(ids(c) == all);
  CHECK_THAT(c.how, Catch::Contains("no HCA is known"));
  CHECK(ids(rdma::choose_ports(ports, "nearest", "mlx5_7", 0, 8)) == all);  // not under this sysfs root
  // An explicit device parameter wins over the nearest HCA.
  CHECK(ids(rdma::choose_ports(ports, "all", "mlx5_1", 3, 8)) == all);
  c = rdma::choose_ports(ports, "mlx5_0", "mlx5_1", 3, 8);
  CHECK(ids(c) == std::vector<std::string>{"mlx5_0:1"});
  CHECK(c.how == "device=mlx5_0");
  CHECK(ids(rdma::choose_ports(ports, "mlx5_1:2,mlx5_0", "mlx5_1", 3, 8)) == std::vector<std::string>{"mlx5_0:1", "mlx5_1:2"});
  CHECK(rdma::choose_ports(ports, "mlx5_2", "mlx5_1", 3, 8).ports.empty());  // there, but down
  CHECK_THROWS_WITH(rdma::choose_ports(ports, "mlx5_5", "mlx5_1", 3, 8), Catch::Contains("no HCA port 'mlx5_5'"));
  CHECK_THROWS_WITH(rdma::choose_ports(ports, ",", "mlx5_1", 3, 8), Catch::Contains("no HCA named"));
}
