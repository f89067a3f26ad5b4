// SlurmClient against FakeRunner replaying output captured from the real testbed.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>

#include "slurm/fake_runner.hpp"
#include "slurm/slurm_client.hpp"

using namespace kiln::slurm;

namespace {

// Output captured from the testbed by tests/cluster/capture-slurm-data, one JSON file per command.
std::filesystem::path capture_path(const std::string& name) {
  return std::filesystem::path(KILN_TEST_DATA) / "slurm" / (name + ".json");
}

template <typename... Names>
void load(FakeRunner& f, const Names&... names) {
  (f.add_capture(capture_path(names)), ...);
}

const std::string kScripts = "/run/kiln-testbed/capture/";
SlurmClientOptions fast() { return {std::chrono::milliseconds(1000), std::chrono::milliseconds(1)}; }

CommandResult failure(int code, std::string err) {
  CommandResult r;
  r.exit_code = code;
  r.err = std::move(err);
  return r;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const SlurmError& e) {
    return e.what();
  }
  return "(no SlurmError)";
}

}  // namespace

TEST_CASE("submit: job id from sbatch --parsable", "[slurm]") {
  FakeRunner fake;
  load(fake, "sbatch_parsable");
  SlurmClient c(fake, fast());
  CHECK(c.submit(kScripts + "sleep.sbatch", {"--nodes=4", "--output=/dev/null"}) == "1");
  CHECK(fake.calls().front() == SlurmClient::submit_argv(kScripts + "sleep.sbatch", {"--nodes=4", "--output=/dev/null"}));
}

TEST_CASE("submit: SLURM's refusals become one-line errors, without a retry", "[slurm]") {
  FakeRunner fake;
  load(fake, "sbatch_bad_partition", "sbatch_missing_node", "sbatch_missing_script");
  SlurmClient c(fake, fast());
  auto msg = error_of([&] { c.submit(kScripts + "true.sbatch", {"--partition=nosuch", "--output=/dev/null"}); });
  CHECK(msg.find("sbatch --parsable --partition=nosuch") == 0);
  CHECK(msg.find("invalid partition specified: nosuch") != std::string::npos);
  CHECK(msg.find('\n') == std::string::npos);
  msg = error_of([&] { c.submit(kScripts + "true.sbatch", {"--nodelist=node9", "--output=/dev/null"}); });
  CHECK(msg.find("Invalid node name specified") != std::string::npos);
  msg = error_of([&] { c.submit(kScripts + "missing.sbatch"); });
  CHECK(msg.find("Unable to open file") != std::string::npos);
  for (const auto& call : fake.calls()) CHECK(fake.count(call) == 1);
}

TEST_CASE("submit: retried once when the controller was not reached, never after a timeout", "[slurm]") {
  const auto argv = SlurmClient::submit_argv("/x.sbatch", {});
  SECTION("controller unreachable, then fine") {
    FakeRunner fake;
    fake.add(argv, failure(1, "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)\n"));
    CommandResult ok;
    ok.exit_code = 0;
    ok.out = "17\n";
    fake.add(argv, ok);
    SlurmClient c(fake, fast());
    CHECK(c.submit("/x.sbatch") == "17");
    CHECK(fake.count(argv) == 2);
  }
  SECTION("timed out: the job may exist, so no second submission") {
    FakeRunner fake;
    CommandResult t;
    t.timed_out = true;
    fake.add(argv, t);
    SlurmClient c(fake, fast());
    CHECK(error_of([&] { c.submit("/x.sbatch"); }).find("timed out") != std::string::npos);
    CHECK(fake.count(argv) == 1);
  }
  SECTION("garbage on stdout is an error, not a job id") {
    FakeRunner fake;
    CommandResult odd;
    odd.exit_code = 0;
    odd.out = "Submitted batch job 17\n";
    fake.add(argv, odd);
    SlurmClient c(fake, fast());
    CHECK_THROWS_AS(c.submit("/x.sbatch"), SlurmError);
  }
}

TEST_CASE("states: one squeue for all jobs, scontrol only for those it does not list", "[slurm]") {
  FakeRunner fake;
  load(fake, "squeue_mixed", "scontrol_job_unknown");
  SlurmClient c(fake, fast());
  auto st = c.states({"1", "2", "3", "4", "5", "99"});
  REQUIRE(st.size() == 6);
  CHECK(st["1"].phase == JobPhase::Running);
  CHECK(st["2"].state == "COMPLETED");
  CHECK(st["3"].state == "FAILED");
  CHECK(st["5"].phase == JobPhase::Pending);
  // 99 is known to neither: it is not running, and the status says so honestly.
  CHECK_FALSE(st["99"].known);
  CHECK(st["99"].state == "UNKNOWN");
  CHECK(st["99"].phase == JobPhase::Terminal);
  CHECK(fake.calls().size() == 2);
  CHECK(fake.count(SlurmClient::squeue_argv({"1", "2", "3", "4", "5", "99"})) == 1);
}

TEST_CASE("states: squeue knows none of them", "[slurm]") {
  FakeRunner fake;
  fake.add_capture(capture_path("squeue_unknown_only"));
  fake.add(SlurmClient::show_job_argv("99"), failure(1, "slurm_load_jobs error: Invalid job id specified\n"));
  fake.add(SlurmClient::show_job_argv("100"), failure(1, "slurm_load_jobs error: Invalid job id specified\n"));
  SlurmClient c(fake, fast());
  auto st = c.states({"99", "100"});
  CHECK_FALSE(st["99"].known);
  CHECK_FALSE(st["100"].known);
  CHECK_THROWS_AS(c.states({"1;rm -rf /"}), SlurmError);
}

TEST_CASE("state: terminal states from scontrol", "[slurm]") {
  FakeRunner fake;
  load(fake, "scontrol_job_cancelled", "scontrol_job_timeout", "scontrol_job_node_fail");
  SlurmClient c(fake, fast());
  CHECK(c.state("4").state == "CANCELLED");
  CHECK(c.state("6").state == "TIMEOUT");
  auto nf = c.state("8");
  CHECK(nf.state == "NODE_FAIL");
  CHECK(nf.phase == JobPhase::Terminal);
}

TEST_CASE("every call tolerates one transient failure, then throws naming the command", "[slurm]") {
  const std::vector<std::string> topo = {"scontrol", "show", "topology"};
  const std::string down = "slurm_load_topo error: Unable to contact slurm controller (connect failure)\n";
  SECTION("one failure, then the captured answer") {
    FakeRunner fake;
    fake.add(topo, failure(1, down));
    fake.add_capture(capture_path("scontrol_topology_tree"));
    SlurmClient c(fake, fast());
    CHECK(c.topology().size() == 3);
    CHECK(fake.count(topo) == 2);
  }
  SECTION("two failures") {
    FakeRunner fake;
    fake.add(topo, failure(1, down));
    SlurmClient c(fake, fast());
    auto msg = error_of([&] { c.topology(); });
    CHECK(msg == "scontrol show topology failed (exit 1, after one retry): slurm_load_topo error: Unable to contact "
                 "slurm controller (connect failure)");
    CHECK(fake.count(topo) == 2);
  }
}

TEST_CASE("topology: none and tree", "[slurm]") {
  FakeRunner none;
  load(none, "scontrol_topology_none");
  CHECK(SlurmClient(none, fast()).topology().empty());
  FakeRunner tree;
  load(tree, "scontrol_topology_tree");
  auto sw = SlurmClient(tree, fast()).topology();
  REQUIRE(sw.size() == 3);
  CHECK(sw[2].name == "spine");
}

TEST_CASE("expand_hostlist via scontrol show hostnames", "[slurm]") {
  FakeRunner fake;
  load(fake, "hostnames_mixed", "hostnames_leaves");
  SlurmClient c(fake, fast());
  CHECK(c.expand_hostlist("node[1-2],node4") == std::vector<std::string>{"node1", "node2", "node4"});
  CHECK(c.expand_hostlist("leaf[1-2]") == std::vector<std::string>{"leaf1", "leaf2"});
  CHECK(c.expand_hostlist("").empty());
}

TEST_CASE("partitions and nodes for validating a request", "[slurm]") {
  FakeRunner fake;
  load(fake, "sinfo_drained", "scontrol_nodes", "scontrol_node_missing", "scontrol_node_drained");
  SlurmClient c(fake, fast());
  auto debug = c.partition("debug");
  REQUIRE(debug);
  CHECK(debug->total_nodes == 4);
  CHECK_FALSE(c.partition("nosuch"));
  auto nodes = c.nodes();
  CHECK(nodes.size() == 4);
  CHECK_FALSE(c.node("node9"));  // "Node node9 not found" on stdout, exit 1
  auto n2 = c.node("node2");
  REQUIRE(n2);
  CHECK(n2->drained());
}

TEST_CASE("drain and resume", "[slurm]") {
  FakeRunner fake;
  load(fake, "scontrol_drain", "scontrol_resume", "scontrol_drain_missing");
  SlurmClient c(fake, fast());
  c.drain({"node2"}, "kiln: slow link");
  c.resume({"node2"});
  auto msg = error_of([&] { c.drain({"node9"}, "kiln"); });
  CHECK(msg.find("scontrol update NodeName=node9 State=DRAIN Reason=kiln failed (exit 1)") == 0);
  CHECK(msg.find("Invalid node name specified") != std::string::npos);
  CHECK(fake.count({"scontrol", "update", "NodeName=node9", "State=DRAIN", "Reason=kiln"}) == 1);  // no retry
  CHECK_THROWS_AS(c.drain({"node2"}, ""), SlurmError);
  CHECK_THROWS_AS(c.drain({"node2 State=DOWN"}, "x"), SlurmError);
}

TEST_CASE("cancel", "[slurm]") {
  FakeRunner fake;
  load(fake, "scancel", "scancel_unknown");
  SlurmClient c(fake, fast());
  c.cancel("4");
  c.cancel("99");  // scancel 22.05 says nothing and exits 0 for an unknown id
  CHECK_THROWS_AS(c.cancel("4 5"), SlurmError);
}
