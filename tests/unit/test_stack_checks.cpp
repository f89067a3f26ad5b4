// stack.versions, stack.pci and stack.system on recorded trees (tests/data/sysfs: the GPU machine
// and the development machine) and on edited copies with the faults those machines lack.
#include <catch2/catch.hpp>

#include "worker/check.hpp"

using namespace kiln;
using namespace kiln::worker;

namespace {
const std::string kSysfs = std::string(KILN_TEST_DATA) + "/sysfs/";

struct Sink : ResultSink {
  std::vector<Result> results;
  void emit(Result r) override { results.push_back(std::move(r)); }
};

std::vector<Result> run_check(const std::string& key, const std::string& tree, nlohmann::json params = {}) {
  NodeInfo node;
  node.host = "n1";
  node.nccl_version = "2.28.3";
  Faults faults;
  auto check = Registry::instance().create(key);
  REQUIRE(check);
  if (params.is_null()) params = nlohmann::json::object();
  params["root"] = kSysfs + tree;
  Context ctx{node, MPI_COMM_SELF, -1, 0, 1, {}, -1, validate_params(check->spec(), params),
              std::chrono::steady_clock::now() + std::chrono::seconds(10), faults};
  Sink sink;
  check->run(ctx, sink);
  return sink.results;
}

std::vector<Result> with(const std::vector<Result>& rs, const std::string& metric) {
  std::vector<Result> out;
  for (const auto& r : rs)
    if (r.metric == metric) out.push_back(r);
  return out;
}

const Result& only(const std::vector<Result>& rs, const std::string& metric) {
  static std::vector<Result> keep;
  keep = with(rs, metric);
  REQUIRE(keep.size() == 1);
  return keep[0];
}
}  // namespace

TEST_CASE("stack.versions on the GPU machine: driver 580.159.04, its VBIOS and kernel", "[stack]") {
  const auto& r = only(run_check("stack.versions", "gpu-h200-vm"), "versions");
  CHECK(r.status == Status::Pass);
  CHECK(r.extra["driver"] == "580.159.04");
  CHECK(r.extra["vbios"]["0000:00:06.0"] == "96.00.a5.00.1a");
  CHECK(r.extra["kernel"].get<std::string>().size() > 0);
  CHECK(r.extra["nccl"] == "2.28.3");
  CHECK(r.extra["hca_fw"].empty());
  CHECK(r.extra["rdma_core"].is_null());  // read only on the live system
}

TEST_CASE("stack.versions fails a version below the spec's minimum or other than its exact one", "[stack]") {
  auto r = only(run_check("stack.versions", "gpu-h200-vm", {{"min_driver", "580.95.05"}}), "versions");
  CHECK(r.status == Status::Pass);
  r = only(run_check("stack.versions", "gpu-h200-vm", {{"min_driver", "580.160"}}), "versions");
  CHECK(r.status == Status::Fail);
  CHECK_THAT(r.reason, Catch::Contains("driver 580.159.04 is older than the spec's minimum 580.160"));
  r = only(run_check("stack.versions", "gpu-h200-vm", {{"expected_vbios", "96.00.a5.00.1b"}}), "versions");
  CHECK_THAT(r.reason, Catch::Contains("vbios 0000:00:06.0 is 96.00.a5.00.1a"));
  r = only(run_check("stack.versions", "dev-debian12", {{"expected_driver", "580.159.04"}}), "versions");
  CHECK(r.status == Status::Fail);
  CHECK_THAT(r.reason, Catch::Contains("driver version unknown"));
}

TEST_CASE("stack.pci on the GPU machine: one GPU at gen5 x16 of x16, MaxReadReq 4096, no bridge, no HCA",
          "[stack]") {
  const auto rs = run_check("stack.pci", "gpu-h200-vm");
  const auto links = with(rs, "link_width");
  REQUIRE(links.size() == 2);
  CHECK(links[0].entity.id == "n1/0000:00:06.0");
  CHECK(links[0].status == Status::Pass);
  CHECK(links[0].value == 16);
  CHECK(links[0].extra["gen"] == 5);
  CHECK(links[0].extra["max_width"] == 16);
  CHECK(links[1].status == Status::Skip);
  CHECK(links[1].reason == "no HCA on the PCI bus");
  CHECK(only(rs, "max_read_request").value == 4096);
  CHECK(only(rs, "acs").status == Status::Skip);
}

TEST_CASE("stack.pci on the development machine: no GPU and no HCA, each part skipped", "[stack]") {
  const auto rs = run_check("stack.pci", "dev-debian12");
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].reason == "no GPU on the PCI bus");
  CHECK(rs[1].reason == "no HCA on the PCI bus");
}

TEST_CASE("stack.pci on the variant: a x8 link, ACS at the bridge, a header-only HCA config", "[stack]") {
  const auto rs = run_check("stack.pci", "variant-faults", {{"min_max_read_request", 512}});
  const auto links = with(rs, "link_width");
  REQUIRE(links.size() == 2);
  CHECK(links[0].status == Status::Pass);  // the HCA, 0000:00:07.0
  CHECK(links[1].status == Status::Fail);
  CHECK_THAT(links[1].reason, Catch::Contains("GPU 0000:01:00.0 link x8 of x16"));
  const auto mrrs = with(rs, "max_read_request");
  REQUIRE(mrrs.size() == 2);
  CHECK(mrrs[0].status == Status::Skip);
  CHECK(mrrs[0].reason == "config space not readable (run as root)");
  CHECK(mrrs[1].value == 4096);  // the recorded GPU config, moved under the bridge
  CHECK(mrrs[1].status == Status::Pass);
  const auto& acs = only(rs, "acs");
  CHECK(acs.entity.id == "n1/0000:00:02.0");
  CHECK(acs.status == Status::Fail);
  CHECK_THAT(acs.reason, Catch::Contains("ACS on at bridge 0000:00:02.0 (SrcValid,ReqRedir,CmpltRedir,UpstreamFwd)"));
}

TEST_CASE("stack.system on the GPU machine: memlock unlimited, no IOMMU, no HCA, no NVSwitch", "[stack]") {
  const auto rs = run_check("stack.system", "gpu-h200-vm");
  CHECK(only(rs, "iommu").status == Status::Pass);
  CHECK(only(rs, "iommu").extra["iommu_present"] == false);
  CHECK(only(rs, "memlock").status == Status::Pass);
  CHECK(only(rs, "memlock").extra["limit"] == "unlimited");
  CHECK(only(rs, "numa").reason == "no HCA on the PCI bus");
  CHECK(only(rs, "fabricmanager").reason == "no NVSwitch");
}

TEST_CASE("stack.system on the development machine: memlock 8 MiB is a finding", "[stack]") {
  const auto rs = run_check("stack.system", "dev-debian12");
  const auto& m = only(rs, "memlock");
  CHECK(m.status == Status::Fail);
  CHECK(m.value == 8388608);
  CHECK(only(rs, "numa").reason == "no GPU on the PCI bus");
}

TEST_CASE("stack.system on the variants: IOMMU translation, NUMA split, memlock, fabric manager", "[stack]") {
  const auto rs = run_check("stack.system", "variant-faults");
  const auto& io = only(rs, "iommu");
  CHECK(io.status == Status::Fail);
  CHECK(io.extra["cmdline"] == "intel_iommu=on");
  CHECK_THAT(io.reason, Catch::Contains("GPU 0000:01:00.0 behind a translating IOMMU (group type DMA-FQ)"));
  const auto& numa = only(rs, "numa");
  CHECK(numa.status == Status::Fail);
  CHECK_THAT(numa.reason, Catch::Contains("GPU 0000:01:00.0 on NUMA node 0, its nearest HCA 0000:00:07.0 on NUMA node 1"));
  CHECK(only(rs, "memlock").value == 65536);
  CHECK(only(rs, "fabricmanager").status == Status::Fail);
  const auto ok = run_check("stack.system", "variant-nvswitch-fm");
  CHECK(only(ok, "fabricmanager").status == Status::Pass);
  CHECK(only(ok, "fabricmanager").extra["nvswitches"] == 1);
}

TEST_CASE("pair checks in a group of one rank SKIP with the reason, not ERROR", "[rdma][net]") {
  // rdma.* threw (an ERROR for the rank) where net.pair_bw and the NCCL collectives SKIP: a group of
  // one has no peer, and nothing of the fabric was measured.
  for (const std::string key : {"rdma.read_bw", "rdma.write_bw", "rdma.send_lat", "net.pair_bw"}) {
    INFO(key);
    NodeInfo node;
    node.host = "n1";
    Faults faults;
    auto check = Registry::instance().create(key);
    REQUIRE(check);
    Context ctx{node, MPI_COMM_SELF, 0, 0, 1, {0}, 1, validate_params(check->spec(), nlohmann::json::object()),
                std::chrono::steady_clock::now() + std::chrono::seconds(10), faults};
    Sink sink;
    REQUIRE_NOTHROW(check->run(ctx, sink));
    REQUIRE(sink.results.size() == 1);
    CHECK(sink.results[0].status == Status::Skip);
    // A build without libibverbs SKIPs rdma.* for that before it looks at the group.
    const auto& why = sink.results[0].reason;
    CHECK((why.find("needs a group of at least two ranks (this group has 1)") != std::string::npos ||
           (key != "net.pair_bw" && why == "kiln-worker was built without libibverbs")));
  }
}
