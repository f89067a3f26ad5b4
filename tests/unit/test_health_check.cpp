// kiln-worker --health-check's verdict (worker/health/verdict.hpp) and what it asks SLURM to do
// (worker/health/drain.hpp), with SLURM as a FakeRunner. tests/cluster/test_health_check.sh runs
// the whole check under the testbed's slurmd.
#include <catch2/catch.hpp>

#include "slurm/fake_runner.hpp"
#include "worker/health/drain.hpp"
#include "worker/health/verdict.hpp"

using namespace kiln;
using namespace kiln::worker::health;

namespace {

Part part(const std::string& key, Status s, const std::string& reason = "") { return {key, s, key, reason, 1.0}; }

slurm::CommandResult ok(const std::string& out = "") {
  slurm::CommandResult r;
  r.exit_code = 0;
  r.out = out;
  return r;
}

std::vector<std::string> drain_argv(const std::string& node, const std::string& reason) {
  return {"scontrol", "update", "NodeName=" + node, "State=DRAIN", "Reason=" + reason};
}

std::string node_shown(const std::string& state, const std::string& reason) {
  return "NodeName=node3 Arch=x86_64 CPUTot=2 NodeAddr=198.18.0.13 NodeHostName=node3 State=" + state +
         " Partitions=debug Reason=" + reason + " [root@2026-12-01T08:00:00]\n";
}

}  // namespace

TEST_CASE("health: skipped parts are not faults, but the summary names them") {
  const auto v = judge({part("ib.ports", Status::Skip, "no RDMA device"), part("gpu.health", Status::Pass),
                        part("nccl.all_reduce", Status::Skip, "one GPU")});
  CHECK(v.exit_code == kHealthy);
  CHECK(v.not_tested == std::vector<std::string>{"ib.ports (no RDMA device)", "nccl.all_reduce (one GPU)"});
  CHECK(final_line(v) == "kiln-health: OK: 1 of 3 parts passed; not tested: ib.ports, nccl.all_reduce");
}

TEST_CASE("health: a fault wins over an error, and the first fault names the code") {
  const auto v = judge({part("gpu.health", Status::Error, "NVML init failed"), part("ib.ports", Status::Fail, "mlx5_0:1 DOWN"),
                        part("gpu.burn", Status::Fail, "GPU 3 wrong results")});
  CHECK(v.exit_code == kFault);
  CHECK(v.code == "ib.ports");
  CHECK(final_line(v) == "kiln-health: FAIL ib.ports: mlx5_0:1 DOWN");
  CHECK(judge({part("gpu.burn", Status::Timeout, "deadline 25 s")}).exit_code == kFault);  // a hung GPU is a fault
}

TEST_CASE("health: a part that could not run is exit 2, never a pass") {
  const auto v = judge({part("ib.ports", Status::Pass), part("spec", Status::Error, "no class for node3")});
  CHECK(v.exit_code == kCouldNotRun);
  CHECK(final_line(v) == "kiln-health: ERROR spec: no class for node3");
}

TEST_CASE("health: records fold into one part with the failing entity and catalog code") {
  Result good;
  good.status = Status::Pass;
  Result bad;
  bad.status = Status::Fail;
  bad.entity = {"hca", "node3/mlx5_0:1"};
  bad.reason = "port state DOWN (Disabled)";
  CheckEnd end;
  end.status = Status::Fail;
  const auto p = fold_records("ib.ports", {good, bad, end}, 2.0);
  CHECK(p.status == Status::Fail);
  CHECK(p.reason == "node3/mlx5_0:1: port state DOWN (Disabled)");
  CHECK(p.seconds == 2.0);
  CheckEnd skip;
  skip.status = Status::Skip;
  skip.reason = "no GPU";
  CHECK(fold_records("gpu.health", {skip}, 0).status == Status::Skip);
  CHECK(fold_records("gpu.health", {}, 0).status == Status::Error);  // nothing reported is not a pass
}

TEST_CASE("health: a hostile reason cannot break out of scontrol's Reason argument") {
  Verdict v{kFault, "ib.ports", "x\" State=RESUME\n$(reboot); `id` 'q' \\ \x01", {}};
  const std::string reason = drain_reason(v);
  CHECK(reason.rfind("kiln-health ib.ports: x_ State_RESUME_", 0) == 0);
  CHECK(reason.find_first_of("\"'`$=\n\\;&|<>") == std::string::npos);
  CHECK(sanitize_reason(std::string(500, 'a')).size() == 120);
  slurm::FakeRunner fake;
  fake.add(drain_argv("node3", reason), ok());
  slurm::SlurmClient client(fake);
  const auto said = drain_on_fault(client, "node3", v);
  REQUIRE(fake.calls().size() == 1);
  CHECK(fake.calls()[0].size() == 5);  // one argv element per field: nothing is split or added
  CHECK(said.find("drained node3") != std::string::npos);
}

TEST_CASE("health: never drains when healthy or when the check could not run") {
  slurm::FakeRunner fake;
  slurm::SlurmClient client(fake);
  CHECK(drain_on_fault(client, "node3", {kCouldNotRun, "spec", "bad spec", {}}).find("not draining") != std::string::npos);
  CHECK(drain_on_fault(client, "node3", {kHealthy, "", "4 of 4 parts passed", {}}).find("not draining") != std::string::npos);
  CHECK(fake.calls().empty());
}

TEST_CASE("health: resumes only its own drains") {
  const std::vector<std::string> show = {"scontrol", "--oneliner", "show", "node", "node3"};
  const Verdict pass{kHealthy, "", "4 of 4 parts passed", {}};
  SECTION("drained by kiln-health: resumed") {
    slurm::FakeRunner fake;
    fake.add(show, ok(node_shown("IDLE+DRAIN", "kiln-health ib.ports: node3/mlx5_0:1: port state DOWN")));
    fake.add({"scontrol", "update", "NodeName=node3", "State=RESUME"}, ok());
    slurm::SlurmClient client(fake);
    CHECK(resume_on_pass(client, "node3", pass).find("resumed node3") != std::string::npos);
    CHECK(fake.calls().size() == 2);
  }
  SECTION("drained by an admin: left alone") {
    slurm::FakeRunner fake;
    fake.add(show, ok(node_shown("IDLE+DRAIN", "bad DIMM, ticket 42")));
    slurm::SlurmClient client(fake);
    CHECK(resume_on_pass(client, "node3", pass).find("stays drained") != std::string::npos);
    CHECK(fake.calls().size() == 1);
  }
  SECTION("a failing node is never resumed") {
    slurm::FakeRunner fake;
    slurm::SlurmClient client(fake);
    CHECK(resume_on_pass(client, "node3", {kFault, "ib.ports", "down", {}}).empty());
    CHECK(fake.calls().empty());
  }
}
