// Starting the workers as one SLURM batch job: validate the request against the cluster, render
// jobs/burnin.sbatch.in into the run directory, sbatch it, track the job, scancel it if it
// outlives the campaign. All SLURM commands go through kiln::slurm::SlurmClient.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "coordinator/launcher.hpp"
#include "slurm/command_runner.hpp"
#include "slurm/slurm_client.hpp"

namespace kiln::coord {

// What the operator asked for, after syntax checks.
struct SlurmJobRequest {
  std::string partition;                // empty: SLURM's default partition
  int nodes = 0;                        // 0: as many as the nodelist names
  std::vector<std::string> nodelist;    // expanded; empty: any nodes of the partition
  int ranks = 0;                        // 0: ranks_per_node per node; else a multiple of the node count
  int ranks_per_node = 0;               // 0: one per GPU that SLURM schedules (Gres), else one
  std::filesystem::path job_template;   // jobs/burnin.sbatch.in
  std::vector<std::string> sbatch_args; // extra sbatch options, after kiln's own (so they win)
};

// The request checked against the cluster: what will be submitted.
struct SlurmPlan {
  std::string partition;
  int nodes = 0;
  int tasks_per_node = 1;
  int gpus_per_node = 0;                   // asked of sbatch (--gpus-per-node) when the nodes have GPUs
  int ranks() const { return nodes * tasks_per_node; }
  std::vector<std::string> nodelist;       // as requested (may be empty)
  std::vector<std::string> node_addresses; // NodeAddr of the candidate nodes, for --advertise
  std::vector<std::string> candidates;     // the nodes the job may run on (node names)
  std::vector<std::string> warnings;       // e.g. nodes that are down: the job may pend
};

// Thrown by validate(): one line an operator can act on.
struct SlurmRequestError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class SlurmLauncher : public Launcher {
 public:
  // job_name: e.g. kiln-RUNID. The runner must outlive the launcher.
  SlurmLauncher(SlurmPlan plan, std::filesystem::path job_template, std::string job_name,
                std::vector<std::string> sbatch_args, slurm::CommandRunner& runner);
  ~SlurmLauncher() override;

  // Checks the partition, the node count and every named node with sinfo and scontrol, before
  // anything is written. Throws SlurmRequestError (bad request) or slurm::SlurmError (SLURM did
  // not answer).
  static SlurmPlan validate(slurm::SlurmClient& client, const SlurmJobRequest& req);

  std::string name() const override { return "slurm"; }
  void launch(const LaunchRequest& req) override;
  std::optional<LaunchEnd> poll() override;
  std::string progress() override;
  std::vector<FirstEnd> task_ends() const override;
  LaunchEnd finish(std::chrono::milliseconds grace) override;
  nlohmann::json identity() const override;
  std::string stop_earlier(const nlohmann::json& id) override;
  // The batch script starts a new srun step by itself when the last one ended with
  // proto::kRestartExitCode (jobs/burnin.sbatch.in): nothing to submit, the allocation is kept.
  bool can_relaunch() const override { return true; }

  const std::string& job_id() const { return job_id_; }
  // The sbatch options kiln adds before the script (exposed for tests and the docs).
  std::vector<std::string> sbatch_options(const LaunchRequest& req) const;

 private:
  // Asks SLURM at most every poll_interval_ (or now when force); keeps the last answer.
  void refresh(bool force);
  LaunchEnd end_of(const slurm::JobStatus& s) const;
  std::vector<FirstEnd> first_ends() const;
  std::vector<FirstEnd> read_task_ends(bool so_far) const;

  SlurmPlan plan_;
  std::filesystem::path job_template_;
  std::string job_name_;
  std::vector<std::string> sbatch_args_;
  slurm::SlurmClient client_;
  std::string job_id_;
  std::filesystem::path run_dir_;
  std::optional<slurm::JobStatus> last_;
  std::chrono::steady_clock::time_point last_poll_{};
  std::chrono::milliseconds poll_interval_{2000};
  std::optional<LaunchEnd> end_;
};

// True when `program` is an executable file in one of PATH's directories.
bool on_path(const std::string& program);

// An address of this host that compute nodes can dial: the local address the kernel routes to the
// first resolvable node address (a connected UDP socket; nothing is sent), else the first
// non-loopback IPv4 address, else the host name.
std::string reachable_address(const std::vector<std::string>& node_addresses);

}  // namespace kiln::coord
