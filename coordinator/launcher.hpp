// How workers are started: mpirun on the local host, sbatch on SLURM, or not at all (external:
// an operator or a test starts kiln-worker by hand with the printed address and secret file).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::coord {

struct LaunchRequest {
  std::string coordinator;              // HOST:PORT the workers connect to
  std::filesystem::path secret_file;
  std::filesystem::path run_dir;
  std::filesystem::path worker_binary;
  int ranks = 0;
  std::vector<std::string> extra_args;  // appended to the launcher's command line
};

// A rank whose end brought the whole job down (SLURM ends a step when one task dies).
struct FirstEnd {
  int rank = -1;
  std::string host;
  std::string how;  // e.g. "Killed", "Segmentation fault"
  bool operator==(const FirstEnd&) const = default;
};
void to_json(nlohmann::json& j, const FirstEnd& e);
void from_json(const nlohmann::json& j, FirstEnd& e);

struct LaunchEnd {
  LaunchEnd() = default;
  LaunchEnd(bool ok_, std::string state_, std::vector<FirstEnd> first = {})
      : ok(ok_), state(std::move(state_)), first_ends(std::move(first)) {}
  bool ok = false;           // the launched job finished normally
  std::string state;         // e.g. "exited 0", "killed by signal 9", "CANCELLED", "TIMEOUT"
  std::vector<FirstEnd> first_ends;  // a failed job: the ranks that ended first, when known
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual std::string name() const = 0;
  virtual void launch(const LaunchRequest& req) = 0;   // throws std::runtime_error
  virtual std::optional<LaunchEnd> poll() = 0;          // nullopt while the job runs
  virtual std::string progress() { return {}; }         // e.g. "job 42 PENDING (Resources)"
  // Ranks whose tasks have ended so far and how, while the job may still run (srun's task-end lines).
  virtual std::vector<FirstEnd> task_ends() const { return {}; }
  // Waits up to `grace` for a normal end, then stops the job for good.
  virtual LaunchEnd finish(std::chrono::milliseconds grace) = 0;
  // What identifies the launched job (the mpirun process, the SLURM job id), kept in the journal
  // so that kiln resume can stop what a coordinator that died left running.
  virtual nlohmann::json identity() const { return nullptr; }
  // Stops the job an earlier coordinator session launched, from its identity, if it still runs:
  // its workers would otherwise burn on for the rest of their check, holding cores or nodes.
  // Returns what it did, for the progress line ("" when nothing ran).
  virtual std::string stop_earlier(const nlohmann::json&) { return {}; }
  // Starts the workers again once they were told to restart (they exit with
  // proto::kRestartExitCode): waits up to `grace` for the launch to end, then launches anew
  // (mpirun again; on SLURM the batch script runs a new srun step in the same allocation).
  // False when this launcher cannot start workers again (the workers were started by hand).
  virtual bool can_relaunch() const { return false; }
  virtual void relaunch(const LaunchRequest&, std::chrono::milliseconds) {}
};

// A child process in its own process group, with stdout and stderr to a log file.
class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();
  void spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const std::filesystem::path& log);
  std::optional<LaunchEnd> poll();
  LaunchEnd wait_or_kill(std::chrono::milliseconds grace);
  pid_t pid() const { return pid_; }
  // Forgets a process that has ended, so that spawn() may start another.
  void reset() {
    pid_ = -1;
    end_.reset();
  }

 private:
  pid_t pid_ = -1;
  std::optional<LaunchEnd> end_;
};

class LocalLauncher : public Launcher {
 public:
  std::string name() const override { return "local"; }
  void launch(const LaunchRequest& req) override;
  std::optional<LaunchEnd> poll() override { return child_.poll(); }
  LaunchEnd finish(std::chrono::milliseconds grace) override { return child_.wait_or_kill(grace); }
  nlohmann::json identity() const override;
  std::string stop_earlier(const nlohmann::json& id) override;
  bool can_relaunch() const override { return true; }
  void relaunch(const LaunchRequest& req, std::chrono::milliseconds grace) override;
  static std::vector<std::string> mpirun_argv(const LaunchRequest& req);

 private:
  ChildProcess child_;
};

class ExternalLauncher : public Launcher {
 public:
  std::string name() const override { return "none"; }
  void launch(const LaunchRequest&) override {}
  std::optional<LaunchEnd> poll() override { return std::nullopt; }
  LaunchEnd finish(std::chrono::milliseconds) override { return {true, "external"}; }
};

}  // namespace kiln::coord
