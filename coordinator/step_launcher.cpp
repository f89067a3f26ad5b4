#include "coordinator/step_launcher.hpp"

#include <cstdlib>
#include <stdexcept>

#include "common/text.hpp"

namespace kiln::coord {

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// The allocation's nodes as slurmctld has them now, with their addresses.
void read_nodes(slurm::SlurmClient& client, Allocation& a) {
  const auto st = client.state(a.job_id);
  if (!st.known || st.nodes.empty()) throw std::runtime_error("SLURM has no nodes for job " + a.job_id + " (state " + st.state + ")");
  a.nodes = client.expand_hostlist(st.nodes);
  a.addresses.clear();
  for (const auto& n : a.nodes) {
    const auto info = client.node(n);
    a.addresses.push_back(info && !info->address.empty() ? info->address : n);
  }
}

}  // namespace

Allocation current_allocation(slurm::SlurmClient& client, int ranks_per_node) {
  Allocation a;
  a.job_id = env_or("SLURM_JOB_ID", "");
  if (a.job_id.empty())
    throw std::runtime_error("--launcher step runs inside a SLURM allocation (sbatch or salloc), and SLURM_JOB_ID is not set");
  a.tasks_per_node = ranks_per_node > 0 ? ranks_per_node : std::atoi(env_or("SLURM_NTASKS_PER_NODE", "1").c_str());
  if (a.tasks_per_node < 1 || a.tasks_per_node > 1024) a.tasks_per_node = 1;
  read_nodes(client, a);
  return a;
}

std::vector<std::string> StepLauncher::srun_argv(const Allocation& a, const LaunchRequest& req, bool overlap) {
  const auto n = std::to_string(a.nodes.size());
  std::vector<std::string> argv{"srun", "--no-kill", "--kill-on-bad-exit=0", "--nodes=" + n, "--nodelist=" + join(a.nodes, ","),
                                "--ntasks-per-node=" + std::to_string(a.tasks_per_node),
                                "--ntasks=" + std::to_string(a.ranks()), "--mpi=" + env_or("KILN_SRUN_MPI", "pmix")};
  // A step that lost a node holds its CPUs on the others until SLURM finds the node down: the
  // restart's step shares them instead of waiting.
  if (overlap) argv.push_back("--overlap");
  for (const auto& x : req.extra_args) argv.push_back(x);
  argv.push_back(req.worker_binary.string());
  return argv;
}

std::map<std::string, std::string> StepLauncher::srun_env(const Allocation& a, const LaunchRequest& req) {
  // The batch step's environment still counts the nodes the job started with: srun refuses a step
  // whose size disagrees with it once a node has left, so it is set to the allocation as it is.
  const auto n = std::to_string(a.nodes.size());
  const auto list = join(a.nodes, ",");
  return {{"KILN_COORDINATOR", req.coordinator},
          {"KILN_SECRET_FILE", req.secret_file.string()},
          {"SLURM_JOB_NODELIST", list},
          {"SLURM_NODELIST", list},
          {"SLURM_JOB_NUM_NODES", n},
          {"SLURM_NNODES", n},
          {"SLURM_NTASKS", std::to_string(a.ranks())},
          {"SLURM_NPROCS", std::to_string(a.ranks())}};
}

void StepLauncher::launch(const LaunchRequest& req) {
  child_.spawn(srun_argv(alloc_, req, relaunched_), srun_env(alloc_, req), req.run_dir / "workers.log");
}

void StepLauncher::relaunch(const LaunchRequest& req, std::chrono::milliseconds grace) {
  child_.wait_or_kill(grace);
  child_.reset();
  read_nodes(client_, alloc_);
  relaunched_ = true;
  launch(req);
}

}  // namespace kiln::coord
