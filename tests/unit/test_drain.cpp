// kiln drain / undrain (coordinator/drain.hpp): which findings drain which node, and that undrain
// reverses exactly what a run drained. SLURM is a FakeRunner here; tests/cluster/test_drain.sh runs
// the same against the testbed's real slurmctld.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "coordinator/drain.hpp"
#include "slurm/fake_runner.hpp"

using namespace kiln;
using namespace kiln::coord;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

json finding(const std::string& code, const std::string& kind, const std::string& id, double confidence = 0.96,
             const std::string& severity = "error") {
  return {{"code", code},       {"severity", severity},       {"entity", {{"kind", kind}, {"id", id}}},
          {"summary", "s"},     {"next_step", "n"},           {"confidence", confidence},
          {"evidence", json::array()}};
}

json report_of(json findings) { return {{"run_id", "R1"}, {"findings", std::move(findings)}}; }

slurm::CommandResult node_shown(const std::string& node, const std::string& state, const std::string& reason) {
  slurm::CommandResult r;
  r.exit_code = 0;
  r.out = "NodeName=" + node + " Arch=x86_64 CPUTot=2 NodeAddr=198.18.0.12 NodeHostName=" + node + " State=" + state +
          " Partitions=debug" + (reason.empty() ? "" : " Reason=" + reason + " [root@2026-12-01T08:00:00]") + "\n";
  return r;
}

slurm::CommandResult ok() {
  slurm::CommandResult r;
  r.exit_code = 0;
  return r;
}

std::vector<std::string> show(const std::string& node) { return {"scontrol", "--oneliner", "show", "node", node}; }
std::vector<std::string> drain_argv(const std::string& node, const std::string& reason) {
  return {"scontrol", "update", "NodeName=" + node, "State=DRAIN", "Reason=" + reason};
}
std::vector<std::string> resume_argv(const std::string& node) {
  return {"scontrol", "update", "NodeName=" + node, "State=RESUME"};
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("kiln-drain-" + std::to_string(::getpid()) + "-" + std::to_string(rand()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("only confirmed isolate-level findings about a node drain it", "[drain]") {
  const auto plan = plan_drain(report_of({
      finding("node.slow", "node", "node3"),
      finding("gpu.sdc", "gpu", "node1/gpu2", 1.0, "critical"),
      finding("localize.unresolved", "node", "node4", 0.5, "warning"),
      finding("link.slow", "link", "node2<->node5"),
      finding("switch.slow", "switch", "leaf1", 0.99, "critical"),
      finding("node.slow", "node", "node5", 0.6),
      finding("fleet.setting", "node", "node6", 1.0, "warning"),
  }));
  CHECK(plan.run_id == "R1");
  REQUIRE(plan.targets.size() == 2);
  CHECK(plan.targets[0].node == "node3");
  CHECK(plan.targets[0].reason == "kiln node.slow R1");
  CHECK(plan.targets[1].node == "node1");
  CHECK(plan.targets[1].reason == "kiln gpu.sdc R1");
  // Held back, each with its reason; the link and the switch are on no single node.
  REQUIRE(plan.held.size() == 3);
  CHECK(plan.held[0].find("localize.unresolved node4") == 0);
  CHECK(plan.held[1].find("confidence 0.60") != std::string::npos);
  CHECK(plan.held[2].find("fleet.setting node6") == 0);
  CHECK(drain_command(plan.targets[0]) == "scontrol update NodeName=node3 State=DRAIN Reason=\"kiln node.slow R1\"");
}

TEST_CASE("a node with several findings is drained once, for its most severe", "[drain]") {
  const auto plan = plan_drain(report_of({finding("node.slow", "node", "node2"),
                                          finding("gpu.hang", "gpu", "node2/gpu0", 1.0, "critical"),
                                          finding("gpu.xid", "gpu", "node2/gpu1")}));
  REQUIRE(plan.targets.size() == 1);
  CHECK(plan.targets[0].reason == "kiln gpu.hang R1");
  CHECK(plan.targets[0].codes == std::vector<std::string>{"node.slow", "gpu.hang", "gpu.xid"});
}

TEST_CASE("a malformed report is an error, not an empty plan", "[drain]") {
  CHECK_THROWS(plan_drain(json::array()));
  CHECK_THROWS(plan_drain(json{{"run_id", "R1"}}));
  CHECK_THROWS(plan_drain(json{{"findings", json::array()}}));
  CHECK_THROWS(plan_drain(report_of({{{"code", "node.slow"}}})));
}

TEST_CASE("drain prints without --yes, drains with it, and undrain reverses exactly that", "[drain]") {
  TempDir dir;
  slurm::FakeRunner fake;
  slurm::SlurmClient client(fake, {std::chrono::milliseconds(1000), std::chrono::milliseconds(1)});
  const auto plan = plan_drain(report_of({finding("node.slow", "node", "node3"), finding("gpu.lost", "gpu", "node4/gpu0")}));
  std::ostringstream out;
  CHECK(drain_run(dir.path, plan, false, client, out) == 0);
  CHECK(fake.calls().empty());
  CHECK_FALSE(fs::exists(dir.path / kDrainedFile));
  CHECK(out.str().find("scontrol update NodeName=node3 State=DRAIN Reason=\"kiln node.slow R1\"") != std::string::npos);
  CHECK(out.str().find("add --yes") != std::string::npos);

  fake.add(drain_argv("node3", "kiln node.slow R1"), ok());
  fake.add(drain_argv("node4", "kiln gpu.lost R1"), ok());
  CHECK(drain_run(dir.path, plan, true, client, out) == 0);
  CHECK(fake.count(drain_argv("node3", "kiln node.slow R1")) == 1);
  CHECK(fake.count(drain_argv("node4", "kiln gpu.lost R1")) == 1);
  REQUIRE(fs::exists(dir.path / kDrainedFile));

  // node3 is still drained by this run; node4 was drained since for another reason by an admin.
  fake.add(show("node3"), node_shown("node3", "IDLE+DRAIN", "kiln node.slow R1"));
  fake.add(show("node4"), node_shown("node4", "IDLE+DRAIN", "bad PSU"));
  fake.add(resume_argv("node3"), ok());
  std::ostringstream dry;
  CHECK(undrain_run(dir.path, false, client, dry) == 0);
  CHECK(fake.count(resume_argv("node3")) == 0);
  CHECK(dry.str().find("scontrol update NodeName=node3 State=RESUME") != std::string::npos);
  std::ostringstream undo;
  CHECK(undrain_run(dir.path, true, client, undo) == 0);
  CHECK(fake.count(resume_argv("node3")) == 1);
  CHECK(fake.count(resume_argv("node4")) == 0);
  CHECK(undo.str().find("leaving node4 as it is: it is drained for 'bad PSU' now") != std::string::npos);
  std::ifstream in(dir.path / kDrainedFile);
  const auto rec = json::parse(in);
  CHECK(rec["drained"][0]["resumed"] == true);
  CHECK_FALSE(rec["drained"][1].contains("resumed"));
}

TEST_CASE("undrain of a run that drained nothing says so and fails", "[drain]") {
  TempDir dir;
  slurm::FakeRunner fake;
  slurm::SlurmClient client(fake);
  std::ostringstream out;
  CHECK(undrain_run(dir.path, true, client, out) == 2);
  CHECK(out.str().find("drained nothing") != std::string::npos);
  CHECK(fake.calls().empty());
}

TEST_CASE("a drain SLURM refuses is an error, and the others are still made and recorded", "[drain]") {
  TempDir dir;
  slurm::FakeRunner fake;
  slurm::SlurmClient client(fake, {std::chrono::milliseconds(1000), std::chrono::milliseconds(1)});
  slurm::CommandResult refused;
  refused.exit_code = 1;
  refused.err = "scontrol: error: Invalid node name specified";
  fake.add(drain_argv("node9", "kiln node.slow R1"), refused);
  fake.add(drain_argv("node3", "kiln node.lost R1"), ok());
  const auto plan = plan_drain(report_of({finding("node.slow", "node", "node9"), finding("node.lost", "node", "node3", 1.0, "critical")}));
  std::ostringstream out;
  CHECK(drain_run(dir.path, plan, true, client, out) == 2);
  CHECK(out.str().find("could not drain node9") != std::string::npos);
  std::ifstream in(dir.path / kDrainedFile);
  const auto rec = json::parse(in);
  REQUIRE(rec["drained"].size() == 1);
  CHECK(rec["drained"][0]["node"] == "node3");
}
