// Inside a SLURM allocation (a batch script, salloc): kiln runs on the allocation's first node and
// starts the workers as an srun step of that same allocation (kiln run --launcher step). This is
// how a burn-in job stands alone: `sbatch -N 64 kiln-burnin.sbatch` runs the coordinator and the
// workers, and the job's exit code is the verdict's (jobs/kiln-burnin.sbatch.in, kiln job render).
#pragma once

#include <string>
#include <vector>

#include "coordinator/launcher.hpp"
#include "slurm/slurm_client.hpp"

namespace kiln::coord {

struct Allocation {
  std::string job_id;
  std::vector<std::string> nodes;      // node names, in SLURM's order
  std::vector<std::string> addresses;  // their NodeAddr, for --advertise
  int tasks_per_node = 1;
  int ranks() const { return static_cast<int>(nodes.size()) * tasks_per_node; }
};

// The allocation this process runs in (SLURM_JOB_ID): its nodes as slurmctld has them now, and
// ranks per node from ranks_per_node (0: SLURM_NTASKS_PER_NODE, else 1). Throws
// std::runtime_error with a one-line reason (not in an allocation, SLURM did not answer).
Allocation current_allocation(slurm::SlurmClient& client, int ranks_per_node);

class StepLauncher : public Launcher {
 public:
  // The runner must outlive the launcher.
  StepLauncher(Allocation alloc, slurm::CommandRunner& runner) : alloc_(std::move(alloc)), client_(runner) {}
  std::string name() const override { return "step"; }
  void launch(const LaunchRequest& req) override;
  std::optional<LaunchEnd> poll() override { return child_.poll(); }
  LaunchEnd finish(std::chrono::milliseconds grace) override { return child_.wait_or_kill(grace); }
  nlohmann::json identity() const override { return {{"job_id", alloc_.job_id}, {"srun_pid", child_.pid()}}; }
  bool can_relaunch() const override { return true; }
  // srun again, on the nodes the allocation holds now: a node that failed has left it (--no-kill).
  void relaunch(const LaunchRequest& req, std::chrono::milliseconds grace) override;

  // The srun command line and the environment it gets (exposed for tests).
  static std::vector<std::string> srun_argv(const Allocation& a, const LaunchRequest& req, bool overlap);
  static std::map<std::string, std::string> srun_env(const Allocation& a, const LaunchRequest& req);

 private:
  Allocation alloc_;
  slurm::SlurmClient client_;
  ChildProcess child_;
  bool relaunched_ = false;
};

}  // namespace kiln::coord
