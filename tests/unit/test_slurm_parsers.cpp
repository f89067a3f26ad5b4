// The slurm parsers on output captured from the real testbed (tests/data/slurm).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "slurm/parsers.hpp"
#include "slurm/slurm_error.hpp"

using namespace kiln::slurm;

namespace {

// stdout of one command captured from the testbed by tests/cluster/capture-slurm-data.
std::string captured_stdout(const std::string& name) {
  const auto path = std::filesystem::path(KILN_TEST_DATA) / "slurm" / (name + ".json");
  std::ifstream in(path);
  if (!in) throw std::runtime_error("missing capture " + path.string());
  return nlohmann::json::parse(in).at("stdout").get<std::string>();
}

}  // namespace

TEST_CASE("sbatch --parsable: the job id, strictly", "[slurm]") {
  CHECK(parse_job_id(captured_stdout("sbatch_parsable")) == "1");
  CHECK(parse_job_id("42;kiln\n") == "42");  // federated form (-M), which the testbed cannot produce
  // Anything that is not exactly an id is refused: kiln must never watch or cancel the wrong job.
  for (const char* bad : {"", "\n", "Submitted batch job 5\n", "5\n6\n", " 5\n", "5x\n", "-5\n", "5;\n",
                          "sbatch: warning: something\n5\n"})
    CHECK_THROWS_AS(parse_job_id(bad), SlurmError);
}

TEST_CASE("squeue: running, completed, failed and held jobs in one call", "[slurm]") {
  auto jobs = parse_squeue(captured_stdout("squeue_mixed"));
  REQUIRE(jobs.size() == 5);  // job 99 never existed: squeue just leaves it out
  std::map<std::string, JobStatus> by_id;
  for (auto& j : jobs) by_id[j.id] = j;
  CHECK(by_id["1"].state == "RUNNING");
  CHECK(by_id["1"].phase == JobPhase::Running);
  CHECK(by_id["1"].nodes == "node[1-4]");
  CHECK(by_id["1"].reason.empty());  // SLURM's "None"
  CHECK(by_id["2"].phase == JobPhase::Terminal);
  CHECK(by_id["3"].state == "FAILED");
  CHECK(by_id["3"].reason == "NonZeroExitCode");
  CHECK(by_id["5"].phase == JobPhase::Pending);
  CHECK(by_id["5"].nodes.empty());
  CHECK(by_id["5"].reason == "JobHeldUser");
  CHECK(parse_squeue(captured_stdout("squeue_unknown_only")).empty());
  CHECK_THROWS_AS(parse_squeue("1|RUNNING\n"), SlurmError);
  CHECK_THROWS_AS(parse_squeue("x|RUNNING|node1|None\n"), SlurmError);
}

TEST_CASE("scontrol show job: every state the testbed produced", "[slurm]") {
  struct Case {
    const char* capture;
    const char* id;
    const char* state;
    JobPhase phase;
    const char* reason;
    int exit_code;
  };
  const Case cases[] = {
      {"scontrol_job_running", "1", "RUNNING", JobPhase::Running, "", 0},
      {"scontrol_job_completed", "2", "COMPLETED", JobPhase::Terminal, "", 0},
      {"scontrol_job_failed", "3", "FAILED", JobPhase::Terminal, "NonZeroExitCode", 3},
      {"scontrol_job_cancelled", "4", "CANCELLED", JobPhase::Terminal, "", 0},
      {"scontrol_job_pending", "5", "PENDING", JobPhase::Pending, "JobHeldUser", 0},
      {"scontrol_job_cancelled_pending", "5", "CANCELLED", JobPhase::Terminal, "JobHeldUser", 0},
      {"scontrol_job_timeout", "6", "TIMEOUT", JobPhase::Terminal, "TimeLimit", 0},
      // More nodes than exist is accepted (EnforcePartLimits=NO) and pends for ever.
      {"scontrol_job_too_many_nodes", "7", "PENDING", JobPhase::Pending, "PartitionConfig", 0},
  };
  for (const auto& c : cases) {
    INFO(c.capture);
    auto j = parse_scontrol_job(captured_stdout(c.capture));
    CHECK(j.id == c.id);
    CHECK(j.state == c.state);
    CHECK(j.phase == c.phase);
    CHECK(j.reason == c.reason);
    REQUIRE(j.exit_code.has_value());
    CHECK(*j.exit_code == c.exit_code);
  }
  // A cancelled job ended by SIGTERM: ExitCode=0:15.
  CHECK(parse_scontrol_job(captured_stdout("scontrol_job_cancelled")).exit_signal == 15);
  CHECK(parse_scontrol_job(captured_stdout("scontrol_job_running")).nodes == "node[1-4]");
  CHECK(parse_scontrol_job(captured_stdout("scontrol_job_pending")).nodes.empty());

  auto nf = parse_scontrol_job(captured_stdout("scontrol_job_node_fail"));
  CHECK(nf.state == "NODE_FAIL");
  CHECK(nf.phase == JobPhase::Terminal);
  CHECK(nf.nodes == "node3");
  // Without --no-requeue the same failure sends the job back to the queue.
  auto rq = parse_scontrol_job(captured_stdout("scontrol_job_requeued"));
  CHECK(rq.phase == JobPhase::Pending);

  CHECK_THROWS_AS(parse_scontrol_job(""), SlurmError);
  CHECK_THROWS_AS(parse_scontrol_job("JobId=1 JobState=RUNNING\nJobId=2 JobState=RUNNING\n"), SlurmError);
}

TEST_CASE("key=value lines keep values with spaces together", "[slurm]") {
  auto kv = parse_key_values(captured_stdout("scontrol_nodes_busy").substr(0, captured_stdout("scontrol_nodes_busy").find('\n')));
  CHECK(kv.at("NodeName") == "node1");
  CHECK(kv.at("OS").rfind("Linux ", 0) == 0);  // "Linux 6.x #1 SMP ..." is one value
  CHECK(kv.at("CfgTRES") == "cpu=2,mem=1G,billing=2");
  CHECK(kv.at("AllocTRES") == "cpu=2");
  auto job = parse_key_values(captured_stdout("scontrol_job_running"));
  CHECK(job.at("AllocNode:Sid").find(':') != std::string::npos);
  CHECK(job.at("CPUs/Task") == "1");
}

TEST_CASE("job state sets are explicit", "[slurm]") {
  for (auto s : {"COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "CANCELLED", "OUT_OF_MEMORY", "PREEMPTED",
                 "BOOT_FAIL", "DEADLINE"})
    CHECK(phase_of(s) == JobPhase::Terminal);
  for (auto s : {"PENDING", "CONFIGURING", "REQUEUED"}) CHECK(phase_of(s) == JobPhase::Pending);
  for (auto s : {"RUNNING", "COMPLETING", "SUSPENDED"}) CHECK(phase_of(s) == JobPhase::Running);
  CHECK(phase_of("CANCELLED by 0") == JobPhase::Terminal);
  CHECK(phase_of("SOMETHING_NEW") == JobPhase::Unknown);
  CHECK(phase_of("") == JobPhase::Unknown);
}

TEST_CASE("scontrol show hostnames", "[slurm]") {
  CHECK(parse_hostnames(captured_stdout("hostnames_range")) ==
        std::vector<std::string>{"node1", "node2", "node3", "node4"});
  CHECK(parse_hostnames(captured_stdout("hostnames_mixed")) == std::vector<std::string>{"node1", "node2", "node4"});
  // What scontrol 22.05 prints, with exit 0, for the malformed 'node[1-'.
  CHECK_THROWS_AS(parse_hostnames("node]\n"), SlurmError);
}

TEST_CASE("scontrol show topology: tree and none", "[slurm]") {
  CHECK(parse_topology(captured_stdout("scontrol_topology_none")).empty());
  auto sw = parse_topology(captured_stdout("scontrol_topology_tree"));
  REQUIRE(sw.size() == 3);
  std::map<std::string, Switch> by_name;
  for (auto& s : sw) by_name[s.name] = s;
  CHECK(by_name.at("leaf1").nodes == std::vector<std::string>{"node1", "node2"});
  CHECK(by_name.at("leaf1").is_leaf());
  CHECK(by_name.at("leaf1").level == 0);
  CHECK(by_name.at("leaf2").nodes == std::vector<std::string>{"node3", "node4"});
  CHECK(by_name.at("spine").switches == std::vector<std::string>{"leaf1", "leaf2"});
  CHECK(by_name.at("spine").level == 1);
  CHECK(by_name.at("spine").nodes.size() == 4);
  CHECK_FALSE(by_name.at("spine").is_leaf());
}

TEST_CASE("sinfo: partitions with nodes in several states", "[slurm]") {
  auto idle = parse_sinfo(captured_stdout("sinfo_idle"));
  REQUIRE(idle.size() == 1);
  CHECK(idle[0].name == "debug");
  CHECK(idle[0].is_default);
  CHECK(idle[0].is_up());
  CHECK(idle[0].total_nodes == 4);
  CHECK(idle[0].nodes_by_state.at("idle") == 4);

  auto busy = parse_sinfo(captured_stdout("sinfo_busy"));
  REQUIRE(busy.size() == 1);  // two lines, one partition
  CHECK(busy[0].total_nodes == 4);
  CHECK(busy[0].nodes.size() == 4);
  CHECK(busy[0].nodes_by_state.at("mixed") == 3);
  CHECK(busy[0].nodes_by_state.at("allocated") == 1);

  auto drained = parse_sinfo(captured_stdout("sinfo_drained"));
  REQUIRE(drained.size() == 1);
  CHECK(drained[0].nodes_by_state.at("drained") == 1);

  auto dead = parse_sinfo(captured_stdout("sinfo_not_responding"));
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].total_nodes == 4);
  CHECK(dead[0].nodes_by_state.count("down*") == 1);  // '*': not responding
  CHECK_THROWS_AS(parse_sinfo("debug|debug*|up|4\n"), SlurmError);
}

TEST_CASE("scontrol show node: states, flags and reasons", "[slurm]") {
  auto busy = parse_nodes(captured_stdout("scontrol_nodes_busy"));
  REQUIRE(busy.size() == 4);
  CHECK(busy[0].name == "node1");
  CHECK(busy[0].address == "198.18.0.11");
  CHECK(busy[0].hostname == "node1");
  CHECK(busy[0].cpus == 2);
  CHECK(busy[0].partitions == std::vector<std::string>{"debug"});
  for (auto& n : busy) CHECK(n.usable());

  auto drained = parse_nodes(captured_stdout("scontrol_node_drained"));
  REQUIRE(drained.size() == 1);
  CHECK(drained[0].state == "IDLE+DRAIN");
  CHECK(drained[0].base_state == "IDLE");
  CHECK(drained[0].drained());
  CHECK_FALSE(drained[0].usable());
  CHECK(drained[0].reason == "kiln: slow link");  // without " [root@time]"

  auto dead = parse_nodes(captured_stdout("scontrol_node_not_responding"));
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].name == "node3");
  CHECK(dead[0].base_state == "DOWN");
  CHECK_FALSE(dead[0].responding());
  CHECK_FALSE(dead[0].usable());
  CHECK_FALSE(dead[0].reason.empty());

  auto all = parse_nodes(captured_stdout("scontrol_nodes"));
  REQUIRE(all.size() == 4);
  int usable = 0;
  for (auto& n : all) usable += n.usable() ? 1 : 0;
  CHECK(usable == 3);
}

// Inputs the fuzz target (tests/fuzz/fuzz_slurm.cpp) found or was written against.
TEST_CASE("long SLURM output is refused or parsed, never a stack overflow", "[slurm][fuzz]") {
  // std::regex recursed once per character and overflowed an 8 MiB stack at about 30,000.
  CHECK_THROWS_AS(parse_job_id(std::string(100'000, '1') + "\n"), SlurmError);
  CHECK(parse_job_id("1;" + std::string(100'000, 'c')) == "1");
  CHECK_THROWS_AS(parse_job_id("1;" + std::string(100'000, 'c') + "!"), SlurmError);
  CHECK(parse_job_id(std::string(20, '9')) == std::string(20, '9'));
  CHECK_THROWS_AS(parse_job_id(std::string(21, '9')), SlurmError);

  const std::string long_reason = "x " + std::string(100'000, 'y');
  auto nodes = parse_nodes("NodeName=n1 State=IDLE+DRAIN Reason=" + long_reason + " [root@2026-11-30T04:21:47]");
  REQUIRE(nodes.size() == 1);
  CHECK(nodes[0].reason == long_reason);
  nodes = parse_nodes("NodeName=n1 State=IDLE Reason=[" + std::string(100'000, 'x'));
  REQUIRE(nodes.size() == 1);
  CHECK(nodes[0].reason.size() == 100'001);
}

TEST_CASE("a node's reason loses exactly SLURM's [user@time] suffix", "[slurm][fuzz]") {
  auto reason = [](const std::string& r) { return parse_nodes("NodeName=n1 State=IDLE Reason=" + r).at(0).reason; };
  CHECK(reason("slow link [root@2026-11-30T04:21:47]") == "slow link");
  CHECK(reason("a[b@c]") == "a");
  CHECK(reason("a [b] [c@d]") == "a [b]");
  CHECK(reason("a [b]") == "a [b]");        // no '@': not SLURM's suffix
  CHECK(reason("a [b@c] d") == "a [b@c] d");  // not at the end
  CHECK(reason("a [x[y@z]") == "a");          // from the first '[' after the last ']'
  CHECK(reason("[@]") == "");
}

TEST_CASE("sinfo node counts are non-negative and their sums cannot overflow", "[slurm][fuzz]") {
  CHECK_THROWS_AS(parse_sinfo("debug|debug*|up|-1|idle|\n"), SlurmError);
  // Two lines whose counts add past INT_MAX were signed overflow (UB) in the total.
  CHECK_THROWS_AS(parse_sinfo("debug|debug*|up|2147483647|idle|\ndebug|debug*|up|1|mixed|\n"), SlurmError);
  CHECK_THROWS_AS(parse_sinfo("debug|debug*|up|2147483648|idle|\n"), SlurmError);
  const auto parts = parse_sinfo("debug|debug*|up|2147483646|idle|\ndebug|debug*|up|1|mixed|\n");
  REQUIRE(parts.size() == 1);
  CHECK(parts[0].total_nodes == 2147483647);
  CHECK_THROWS_AS(parse_nodes("NodeName=n1 State=IDLE CPUTot=-2"), SlurmError);
  CHECK_THROWS_AS(parse_topology("SwitchName=s1 Level=-1"), SlurmError);
}

namespace {

// A job's whole output (slurm-<id>.out), captured on the testbed.
std::string job_output(const std::string& name) {
  const auto path = std::filesystem::path(KILN_TEST_DATA) / "slurm" / ("joboutput_" + name + ".txt");
  std::ifstream in(path);
  if (!in) throw std::runtime_error("missing capture " + path.string());
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("job output: the task whose end made SLURM abort the step", "[slurm]") {
  // kill -9 of rank 3 on node2 (tests/cluster/test_kill_rank.sh): SLURM's PMIx plugin then killed
  // the other five, whose lines come after "Job step aborted".
  auto first = parse_first_task_ends(job_output("task_killed"));
  REQUIRE(first.size() == 1);
  CHECK(first[0].node == "node2");
  CHECK(first[0].tasks == std::vector<int>{3});
  CHECK(first[0].how == "Killed");
  // node3's step daemon killed while its tasks lived on: the ranks elsewhere crashed inside Open
  // MPI first, and srun names them; the parser reports what srun said.
  first = parse_first_task_ends(job_output("pmix_server_lost"));
  REQUIRE(first.size() == 2);
  CHECK((first[0].node == "node2" && first[0].tasks == std::vector<int>{2} && first[0].how == "Segmentation fault"));
  CHECK((first[1].node == "node1" && first[1].tasks == std::vector<int>{0}));
  // A whole node gone: srun says "Node failure", no step abort, no task to blame.
  CHECK(parse_first_task_ends(job_output("node_failure")).empty());
}

TEST_CASE("job output: task lists, and lines that are not task ends", "[slurm]") {
  const std::string aborted = "srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n";
  auto first = parse_first_task_ends("srun: error: n-1: tasks 0-2,5: Exited with exit code 3\n" + aborted);
  REQUIRE(first.size() == 1);
  CHECK(first[0].tasks == std::vector<int>{0, 1, 2, 5});
  CHECK(first[0].how == "Exited with exit code 3");
  CHECK(parse_first_task_ends("srun: error: node2: task 3: Killed\n").empty());  // never aborted
  CHECK(parse_first_task_ends(aborted + "srun: error: node2: task 3: Killed\n").empty());  // after: collateral
  for (const char* junk : {"srun: error: node2: task x: Killed\n", "srun: error: node2: task 3-1: Killed\n",
                           "srun: error: node2: task 3:\n", "srun: error: Node failure on node3\n",
                           "srun: error: node2: tasks 0-99999: Killed\n", "srun: error: : task 1: Killed\n",
                           "srun: error: node2: task -1: Killed\n", "srun: error: node2: task 1,: Killed\n"})
    CHECK(parse_first_task_ends(std::string(junk) + aborted).empty());
}

TEST_CASE("task ends so far: a task-end line before any tear-down, the step still running", "[slurm][parsers]") {
  // srun --no-kill: one task died of SIGSEGV in MPI start-up, the others still wait; nothing aborted.
  const std::string running =
      "kiln-burnin: job 5 on node[1-6] (6 nodes), coordinator 198.18.0.1:33513\n"
      "[node5:22870] *** Process received signal ***\n"
      "srun: error: node5: task 4: Segmentation fault\n";
  CHECK(kiln::slurm::parse_first_task_ends(running).empty());  // not torn down: not "first" yet
  const auto so_far = kiln::slurm::parse_task_ends_so_far(running);
  REQUIRE(so_far.size() == 1);
  CHECK(so_far[0].node == "node5");
  CHECK(so_far[0].tasks == std::vector<int>{4});
  CHECK(so_far[0].how == "Segmentation fault");
  // After the tear-down the lines after it (the others, killed by SLURM) are not counted.
  const auto torn = kiln::slurm::parse_task_ends_so_far(running + "srun: Job step aborted: Waiting up to 7 seconds\n"
                                                                  "srun: error: node1: task 0: Terminated\n");
  REQUIRE(torn.size() == 1);
  CHECK(torn[0].tasks == std::vector<int>{4});
}
