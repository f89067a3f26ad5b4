// Running external commands (sbatch, squeue, fio, dcgmi, ...) behind an interface, so what reads
// their output can be unit-tested on captured output (slurm's FakeRunner) and run for real
// (ProcessRunner). In common/ because both slurm/ and the worker's checks run commands.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace kiln {

struct CommandResult {
  int exit_code = -1;      // the program's exit status; -1 when it was killed or never started
  int term_signal = 0;     // the signal that ended it, 0 if it exited
  bool timed_out = false;  // killed by the runner at the deadline
  bool spawn_failed = false;
  std::string out;
  std::string err;

  bool ok() const { return exit_code == 0 && !timed_out && !spawn_failed; }
  // The last `max` bytes of stderr, where a program says why it failed, control bytes escaped.
  std::string err_tail(std::size_t max = 600) const;
};

// Whether `program` is an executable file in one of PATH's directories (what a check needs before it
// runs fio or dcgmi).
bool on_path(const std::string& program);

// One line for logs and errors: argv joined with spaces, arguments with spaces quoted.
std::string format_argv(const std::vector<std::string>& argv);

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv (argv[0] looked up in PATH) without a shell; never waits past timeout.
  virtual CommandResult run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) = 0;
};

// Runs commands as child processes: posix_spawnp with an argv vector, stdin from /dev/null,
// stdout/stderr captured. The child gets its own process group, and at the deadline the whole group
// is killed (SIGKILL). Threads may share one ProcessRunner.
class ProcessRunner final : public CommandRunner {
 public:
  ProcessRunner();
  CommandResult run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) override;

  // The environment children get: ours, minus variables that would silently change what a SLURM
  // command does. When kiln itself runs inside an allocation, SLURM_JOB_ID/SLURM_NNODES/... would
  // make sbatch inherit that job's geometry and SBATCH_*/SQUEUE_*/SINFO_* override options and
  // output formats. SLURM_CONF is kept: it says which cluster to talk to.
  static std::vector<std::string> clean_environment(const std::vector<std::string>& env);

 private:
  std::vector<std::string> env_;
};

}  // namespace kiln
