// kiln run --launcher step (coordinator/step_launcher.hpp): the srun step it starts inside its own
// allocation, first and after a restart that lost a node. tests/cluster/test_standalone_job.sh
// runs it under the testbed's real SLURM.
#include <catch2/catch.hpp>

#include <algorithm>

#include "coordinator/step_launcher.hpp"

using namespace kiln::coord;

TEST_CASE("the step launcher sizes its srun step from the allocation as it is now", "[launcher][step]") {
  Allocation a;
  a.job_id = "42";
  a.nodes = {"node1", "node2", "node4"};  // node3 has left the allocation
  a.tasks_per_node = 2;
  LaunchRequest req;
  req.coordinator = "198.18.0.11:7000";
  req.secret_file = "/run/x/secret";
  req.worker_binary = "/opt/kiln/bin/kiln-worker";
  req.ranks = 6;
  const auto argv = StepLauncher::srun_argv(a, req, false);
  CHECK(argv.front() == "srun");
  CHECK(argv.back() == "/opt/kiln/bin/kiln-worker");
  auto has = [&](const std::string& s) { return std::find(argv.begin(), argv.end(), s) != argv.end(); };
  CHECK(has("--no-kill"));
  CHECK(has("--nodes=3"));
  CHECK(has("--nodelist=node1,node2,node4"));
  CHECK(has("--ntasks-per-node=2"));
  CHECK(has("--ntasks=6"));
  CHECK_FALSE(has("--overlap"));
  const auto again = StepLauncher::srun_argv(a, req, true);  // a restart's step
  CHECK(std::find(again.begin(), again.end(), "--overlap") != again.end());
  const auto env = StepLauncher::srun_env(a, req);
  CHECK(env.at("KILN_COORDINATOR") == "198.18.0.11:7000");
  CHECK(env.at("KILN_SECRET_FILE") == "/run/x/secret");
  // The batch step's environment counted the nodes the job started with: overridden.
  CHECK(env.at("SLURM_JOB_NUM_NODES") == "3");
  CHECK(env.at("SLURM_NNODES") == "3");
  CHECK(env.at("SLURM_NTASKS") == "6");
  CHECK(env.at("SLURM_JOB_NODELIST") == "node1,node2,node4");
}
