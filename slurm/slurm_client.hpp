// The SLURM commands kiln uses, behind a CommandRunner. Every call runs one command (with one
// retry after a short pause when the failure looks transient) and either returns typed data or
// throws SlurmError with a one-line message naming the command and its stderr.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "slurm/command_runner.hpp"
#include "slurm/job_state.hpp"
#include "slurm/parsers.hpp"
#include "slurm/slurm_error.hpp"

namespace kiln::slurm {

struct SlurmClientOptions {
  std::chrono::milliseconds timeout{30'000};      // per command
  std::chrono::milliseconds retry_pause{1'000};   // before the one retry
};

class SlurmClient {
 public:
  explicit SlurmClient(CommandRunner& runner, SlurmClientOptions options = {});

  // sbatch --parsable EXTRA... SCRIPT -> job id. extra_args go before the script, so they
  // override the script's #SBATCH lines (e.g. --nodes=4, --partition=debug, --nodelist=...).
  // Not retried when sbatch timed out: the job may have been submitted, and a second one would
  // run the burn-in twice.
  std::string submit(const std::filesystem::path& script, const std::vector<std::string>& extra_args = {});

  // The state of many jobs with one squeue call; jobs squeue no longer lists (finished longer ago
  // than squeue keeps them) are looked up one by one with scontrol. A job neither knows comes back
  // with known=false, state "UNKNOWN" and phase Terminal: it is certainly not running any more.
  std::map<std::string, JobStatus> states(const std::vector<std::string>& job_ids);
  JobStatus state(const std::string& job_id);

  void cancel(const std::string& job_id);

  // scontrol show hostnames EXPR: SLURM's own reading of a hostlist.
  std::vector<std::string> expand_hostlist(const std::string& expr);

  // scontrol show topology; empty under topology/none.
  std::vector<Switch> topology();

  std::vector<PartitionInfo> partitions();
  std::optional<PartitionInfo> partition(const std::string& name);
  std::vector<NodeInfo> nodes();
  std::optional<NodeInfo> node(const std::string& name);

  // scontrol update NodeName=a,b State=DRAIN Reason=... / State=RESUME. Names are joined with ','
  // (SLURM accepts hostlists there too).
  void drain(const std::vector<std::string>& node_names, const std::string& reason);
  void resume(const std::vector<std::string>& node_names);

  // The exact argv each call runs (tests and tests/cluster/capture-slurm-data key on these).
  static std::vector<std::string> submit_argv(const std::filesystem::path& script,
                                              const std::vector<std::string>& extra_args);
  static std::vector<std::string> squeue_argv(const std::vector<std::string>& job_ids);
  static std::vector<std::string> show_job_argv(const std::string& job_id);
  static std::vector<std::string> sinfo_argv();

 private:
  enum class Retry { OnTransient, Never };
  // Runs argv; returns when it succeeded or accept() says its failure is an answer (e.g. "Invalid
  // job id specified"); otherwise retries once if the failure may be transient, then throws.
  template <typename Accept>
  CommandResult call(const std::vector<std::string>& argv, Accept accept, Retry retry = Retry::OnTransient);
  CommandResult call(const std::vector<std::string>& argv, Retry retry = Retry::OnTransient);

  CommandRunner& runner_;
  SlurmClientOptions options_;
};

// Failures that no retry will fix: bad names, bad requests, missing files, permissions.
bool is_permanent_failure(const CommandResult& r);

}  // namespace kiln::slurm
