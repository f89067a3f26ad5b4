// Judgement of the hardware and software a node reports against its class (expect_hardware.cpp):
// GPU count, model and versions, each GPU's memory and PCIe link, HCA ports and rate, NVLink links,
// rdma-core.
#include <catch2/catch.hpp>

#include "common/hca_port.hpp"
#include "tests/unit/expect_fixtures.hpp"

using namespace expect_fixtures;

TEST_CASE("GPU count, model and software versions against the class") {
  const auto e = expect(R"(
[[class]]
name = "gpu"
hosts = "n1"
optional = ["gpu.health", "host.inventory"]
[class.hardware]
gpu_model = "H200"
gpus_per_node = 8
[class.software]
mpi = { min = "4.1" }
nccl = "2.21"
)");
  NodeSeen n = node("n1", {0});
  n.info.gpu_count = 2;
  n.info.gpu_models = {"NVIDIA H200", "NVIDIA H100 80GB HBM3"};
  n.info.mpi_version = "Open MPI v4.0.3, package: Debian";
  n.info.nccl_version = "2.21.5";
  const auto out = analysis::judge_expectations(e, {n}, {});
  const auto count = with_code(out.findings, Code::GpuCount);
  REQUIRE(count.size() == 1);
  CHECK_THAT(count[0].summary, Catch::Contains("n1 has 2 GPU(s) usable through CUDA, class gpu expects 8"));
  const auto model = with_code(out.findings, Code::GpuModel);
  REQUIRE(model.size() == 1);
  CHECK(model[0].entity == Entity{"gpu", "n1/gpu1"});
  const auto sw = with_code(out.findings, Code::SoftwareVersion);
  REQUIRE(sw.size() == 1);
  CHECK(sw[0].summary == "n1 runs mpi 4.0.3, class gpu expects >= 4.1");
  CHECK(with_code(out.findings, Code::NotTested).empty());

  n.info.mpi_version.clear();  // unknown: not shown to be right
  const auto nt = with_code(analysis::judge_expectations(e, {n}, {}).findings, Code::NotTested);
  REQUIRE(nt.size() == 1);
  CHECK(nt[0].evidence[0]["requirement"] == "mpi");
}

TEST_CASE("each GPU's memory and PCIe link (gpu.health) against the class") {
  const auto e = expect(R"(
[[class]]
name = "gpu"
hosts = "n1"
optional = ["gpu.health"]
[class.hardware]
gpu_memory_gib = 140
pcie_gen = 5
pcie_width = 16
)");
  // As NVML reports them on the H200 machine: 150754820096 bytes (140.4 GiB), Gen5 x16 at most
  // (Gen1 now, at idle).
  const auto health = [](int gpu, double bytes, int gen_max, int width_max) {
    Result r = result("gpu.health", "n1", 0, "health", 0, {"gpu", "n1/gpu" + std::to_string(gpu)});
    r.extra = {{"memory_total_bytes", bytes},
               {"pcie_gen", {{"current", 1}, {"max", gen_max}}},
               {"pcie_width", {{"current", 16}, {"max", width_max}}}};
    return r;
  };
  auto rr = round(1, "gpu.health");
  rr.results = {health(0, 150754820096.0, 5, 16), health(1, 85899345920.0, 5, 16), health(2, 150754820096.0, 4, 8)};
  const auto found = analysis::judge_expectations(e, {node("n1", {0})}, {rr}).findings;
  const auto model = with_code(found, Code::GpuModel);
  REQUIRE(model.size() == 1);
  CHECK(model[0].summary == "n1/gpu1 has 80.0 GiB of memory, class gpu expects 140.0 GiB");
  const auto pcie = with_code(found, Code::GpuPcieDegraded);
  REQUIRE(pcie.size() == 1);
  CHECK(pcie[0].entity == Entity{"gpu", "n1/gpu2"});
  CHECK(pcie[0].summary == "n1/gpu2's PCIe link can reach Gen4 x8 at most, class gpu expects Gen5 x16");
  CHECK(analysis::kept_for_expectations(e, health(0, 1, 5, 16)));
}

namespace {

// n1's ib.ports reading of one port, as the check reports it.
Result hca_port(const std::string& port, const std::string& state, double rate, const std::string& phase = "snapshot") {
  Result r = result("ib.ports", "n1", 0, "rate", rate, {"hca", "n1/" + port});
  r.unit = "Gb/s";
  r.extra = {{"phase", phase}, {"state", state}, {"link_layer", "InfiniBand"}};
  if (state != "ACTIVE") r.status = Status::Fail;
  return r;
}

RoundRecord ib_round(std::int64_t id, std::vector<Result> results, Status s = Status::Pass, const std::string& why = "") {
  auto rr = round(id, "ib.ports", {{0}});
  rr.ends = {end("ib.ports", "n1", 0, s, why)};
  rr.results = std::move(results);
  return rr;
}

Expectations hca_spec(const std::string& optional = "") {
  auto e = expect(R"(
[[class]]
name = "gpu"
hosts = "n1"
)" + optional + R"(
[class.hardware]
hcas_per_node = 4
hca_rate_gbps = 400
)");
  e.planned = {"ib.ports"};
  return e;
}

}  // namespace

TEST_CASE("HCAs against hcas_per_node and hca_rate_gbps: fewer active is hca.count, a slower port hca.rate") {
  const auto e = hca_spec();
  REQUIRE(e.specs[0].classes[0].required == std::vector<std::string>{"ib.ports"});
  // The fixture's node (tests/data/ib/before): mlx5_2 DOWN, mlx5_1 at 200 Gb/s, mlx5_3 RoCE at 100.
  auto found = analysis::judge_expectations(
                   e, {node("n1", {0})},
                   {ib_round(1, {hca_port("mlx5_0:1", "ACTIVE", 400), hca_port("mlx5_1:1", "ACTIVE", 200),
                                 hca_port("mlx5_2:1", "DOWN", 400), hca_port("mlx5_3:1", "ACTIVE", 100)},
                             Status::Fail)})
                   .findings;
  const auto count = with_code(found, Code::HcaCount);
  REQUIRE(count.size() == 1);
  CHECK(count[0].entity == Entity{"node", "n1"});
  CHECK(count[0].severity == Severity::Error);
  CHECK(count[0].summary == "n1 has 3 HCA(s) with an ACTIVE port (ib.ports), not active: mlx5_2:1 DOWN, class gpu expects 4");
  CHECK(count[0].evidence[0]["hca_count"] == 3);
  CHECK(count[0].evidence[0]["expected"] == 4);
  CHECK(count[0].evidence[0]["active"] == nlohmann::json({"mlx5_0", "mlx5_1", "mlx5_3"}));
  const auto rate = with_code(found, Code::HcaRate);
  REQUIRE(rate.size() == 2);
  CHECK(rate[0].entity == Entity{"hca", "n1/mlx5_1:1"});
  CHECK(rate[0].summary == "n1/mlx5_1:1 runs at 200 Gb/s, class gpu expects 400 Gb/s");
  CHECK(rate[0].evidence[0]["rate_gbps"] == 200.0);
  CHECK(rate[0].evidence[0]["expected"] == 400.0);
  CHECK(rate[1].entity == Entity{"hca", "n1/mlx5_3:1"});
  CHECK(with_code(found, Code::NotTested).empty());

  // Four HCAs at 400 Gb/s (two ports on one of them: still one HCA; a fifth one faster): silent.
  found = analysis::judge_expectations(
              e, {node("n1", {0})},
              {ib_round(1, {hca_port("mlx5_0:1", "ACTIVE", 400), hca_port("mlx5_1:1", "ACTIVE", 400),
                            hca_port("mlx5_2:1", "ACTIVE", 400), hca_port("mlx5_2:2", "ACTIVE", 800),
                            hca_port("mlx5_3:1", "ACTIVE", 400)})})
              .findings;
  CHECK(found.empty());

  // Before and after: a port that went down in between counts as not active.
  found = analysis::judge_expectations(
              e, {node("n1", {0})},
              {ib_round(1, {hca_port("mlx5_0:1", "ACTIVE", 400, "before"), hca_port("mlx5_1:1", "ACTIVE", 400, "before"),
                            hca_port("mlx5_2:1", "ACTIVE", 400, "before"), hca_port("mlx5_3:1", "ACTIVE", 400, "before")}),
               ib_round(2, {hca_port("mlx5_0:1", "ACTIVE", 400, "after"), hca_port("mlx5_1:1", "ACTIVE", 400, "after"),
                            hca_port("mlx5_2:1", "DOWN", 400, "after"), hca_port("mlx5_3:1", "ACTIVE", 400, "after")},
                        Status::Fail)})
              .findings;
  REQUIRE(with_code(found, Code::HcaCount).size() == 1);
  CHECK(with_code(found, Code::HcaCount)[0].evidence[0]["inactive_ports"] == nlohmann::json({"mlx5_2:1 DOWN"}));
  CHECK(with_code(found, Code::HcaRate).empty());
  CHECK(analysis::kept_for_expectations(e, hca_port("mlx5_0:1", "ACTIVE", 400)));
}

TEST_CASE("HcaCount: the health check counts HCAs as a campaign does") {
  // worker/health/run.cpp holds a node to this count; it counted apart before, and a port ACTIVE
  // before the checks and DOWN after counted there as ACTIVE.
  kiln::HcaCount count;
  CHECK(count.empty());
  CHECK(count.add(hca_port("mlx5_0:1", "ACTIVE", 400, "before")));
  CHECK(count.add(hca_port("mlx5_0:1", "DOWN", 400, "after")));
  CHECK(count.add(hca_port("mlx5_1:1", "ACTIVE", 400)));
  CHECK(count.add(hca_port("mlx5_1:2", "INIT", 400)));  // one of mlx5_1's two ports: mlx5_1 still counts
  Result errored = hca_port("mlx5_2:1", "ACTIVE", 400);
  errored.status = Status::Error;  // read nothing
  CHECK_FALSE(count.add(errored));
  CHECK_FALSE(count.add(result("gpu.health", "n1", 0, "ok", 1, {"gpu", "n1/gpu0"})));
  Result no_state = hca_port("mlx5_3:1", "ACTIVE", 400);
  no_state.extra.erase("state");
  CHECK(count.add(no_state));
  CHECK(count.active() == std::set<std::string>{"mlx5_1"});
  CHECK(count.inactive() == std::vector<std::string>{"mlx5_0:1 DOWN", "mlx5_1:2 INIT", "mlx5_3:1 unknown"});
}

TEST_CASE("HCAs not read (ib.ports skipped or not run) are not.tested with the reason, unless ib.ports is optional") {
  auto found = analysis::judge_expectations(
                   hca_spec(), {node("n1", {0})},
                   {ib_round(1, {}, Status::Skip, "no RDMA device: nothing under /sys/class/infiniband")})
                   .findings;
  REQUIRE(found.size() == 1);
  CHECK(found[0].code == Code::NotTested);
  CHECK(found[0].evidence[0]["check"] == "ib.ports");
  CHECK(found[0].evidence[0]["reason"] == "skipped: no RDMA device: nothing under /sys/class/infiniband");

  found = analysis::judge_expectations(hca_spec(), {node("n1", {0})}, {}).findings;
  REQUIRE(found.size() == 1);
  CHECK(found[0].code == Code::NotTested);
  CHECK_THAT(found[0].summary, Catch::Contains("ib.ports was not tested on n1"));

  CHECK(analysis::judge_expectations(hca_spec("optional = [\"ib.ports\"]"), {node("n1", {0})},
                                     {ib_round(1, {}, Status::Skip, "no RDMA device")})
            .findings.empty());
  auto e = hca_spec();
  e.optional = {"ib.ports"};
  CHECK(analysis::judge_expectations(e, {node("n1", {0})}, {}).findings.empty());

  // A class without HCAs (hcas_per_node = 0) does not need ib.ports at all.
  const auto none = expect("[[class]]\nname = \"cpu\"\nhosts = \"n1\"\n[class.hardware]\nhcas_per_node = 0\n");
  CHECK(none.specs[0].classes[0].required.empty());
}

TEST_CASE("NVLink links against nvlinks_per_gpu: fewer is gpu.nvlink_down, unread is not.tested") {
  const std::string text = R"(
[[class]]
name = "gpu"
hosts = "n1"
[class.hardware]
nvlinks_per_gpu = 18
)";
  auto e = expect(text);
  e.planned = {"gpu.health"};
  const auto health = [](int gpu, std::optional<int> links) {
    Result r = result("gpu.health", "n1", 0, "health", 0, {"gpu", "n1/gpu" + std::to_string(gpu)});
    if (links) {
      r.extra = {{"nvlinks_active", *links}, {"nvlinks_inactive", nlohmann::json::array()}};
      for (int l = *links; l < 18; ++l) r.extra["nvlinks_inactive"].push_back(l);
    } else {
      r.extra = {{"nvlink_error", "NVML: Function Not Found"}};
    }
    return r;
  };
  auto rr = round(1, "gpu.health", {{0}});
  rr.ends = {end("gpu.health", "n1", 0, Status::Pass)};
  rr.results = {health(0, 18), health(1, 16), health(2, std::nullopt)};
  auto found = analysis::judge_expectations(e, {node("n1", {0})}, {rr}).findings;
  const auto down = with_code(found, Code::GpuNvlinkDown);
  REQUIRE(down.size() == 1);
  CHECK(down[0].entity == Entity{"gpu", "n1/gpu1"});
  CHECK(down[0].severity == Severity::Error);
  CHECK(down[0].summary == "n1/gpu1 has 16 active NVLink link(s), class gpu expects 18");
  CHECK(down[0].evidence[0]["nvlinks_active"] == 16);
  CHECK(down[0].evidence[0]["expected"] == 18);
  CHECK(down[0].evidence[0]["inactive_links"] == nlohmann::json({16, 17}));
  const auto nt = with_code(found, Code::NotTested);
  REQUIRE(nt.size() == 1);
  CHECK(nt[0].evidence[0]["requirement"] == "nvlinks_per_gpu");
  CHECK_THAT(nt[0].summary, Catch::Contains("gpu.health reported no NVLink state for n1/gpu2 (NVML: Function Not Found)"));
  CHECK(found.size() == 2);

  rr.results = {health(0, 18), health(1, 18)};
  CHECK(analysis::judge_expectations(e, {node("n1", {0})}, {rr}).findings.empty());

  // gpu.health optional: the unread links are not a finding; the ones read still are.
  e.optional = {"gpu.health"};
  rr.results = {health(1, 16), health(2, std::nullopt)};
  found = analysis::judge_expectations(e, {node("n1", {0})}, {rr}).findings;
  REQUIRE(found.size() == 1);
  CHECK(found[0].code == Code::GpuNvlinkDown);
}

TEST_CASE("rdma_core against host.inventory's rdma-core version") {
  auto e = expect(R"(
[[class]]
name = "gpu"
hosts = "n1"
[class.software]
rdma_core = { min = "44.0" }
)");
  e.planned = {"host.inventory"};
  const auto run = [&](nlohmann::json version) {
    auto rr = round(1, "host.inventory", {{0}});
    rr.ends = {end("host.inventory", "n1", 0, Status::Pass)};
    Result r = result("host.inventory", "n1", 0, "inventory", 1, {"node", "n1"});
    r.extra = {{"kernel", "6.1.0-18-amd64"}, {"rdma_core", version}};
    rr.results = {r};
    CHECK(analysis::kept_for_expectations(e, r));
    return analysis::judge_expectations(e, {node("n1", {0})}, {rr}).findings;
  };
  auto found = run("43.0");
  REQUIRE(found.size() == 1);
  CHECK(found[0].code == Code::SoftwareVersion);
  CHECK(found[0].summary == "n1 runs rdma_core 43.0, class gpu expects >= 44.0");
  CHECK(found[0].evidence[0]["software"] == "rdma_core");
  CHECK(run("44.0").empty());
  CHECK(run("50.0").empty());
  found = run(nullptr);  // the node has no rdma-core
  REQUIRE(found.size() == 1);
  CHECK(found[0].code == Code::NotTested);
  CHECK(found[0].evidence[0]["requirement"] == "rdma_core");
  CHECK(found[0].evidence[0]["check"] == "host.inventory");
}
