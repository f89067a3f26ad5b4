// SLURM job states in three explicit sets. A state in none of them is Unknown: the caller keeps
// polling and says so, rather than guessing that the job ended.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kiln::slurm {

enum class JobPhase { Pending, Running, Terminal, Unknown };

std::string to_string(JobPhase p);

// Classifies a state as squeue %T or scontrol's JobState= print it ("RUNNING", "CANCELLED",
// "CANCELLED by 0"); only the first word counts.
JobPhase phase_of(std::string_view state);

bool is_pending_state(std::string_view state);   // PENDING, CONFIGURING, REQUEUED, ...
bool is_running_state(std::string_view state);   // RUNNING, COMPLETING, SUSPENDED, ...
bool is_terminal_state(std::string_view state);  // COMPLETED, FAILED, TIMEOUT, NODE_FAIL, ...

struct JobStatus {
  std::string id;
  std::string state;   // SLURM's word; "UNKNOWN" when slurmctld has no record of the job
  JobPhase phase = JobPhase::Unknown;
  std::string reason;  // why it is pending or how it ended; empty for SLURM's "None"
  std::string nodes;   // hostlist expression; empty while pending
  std::optional<int> exit_code;    // the batch script's exit status (scontrol only)
  std::optional<int> exit_signal;  // the signal that ended it, when one did (scontrol only)
  bool known = true;   // false: neither squeue nor scontrol knows it (purged after MinJobAge)
};

}  // namespace kiln::slurm
