// Pure parsers for SLURM command output: text in, typed data out, no I/O. Each one is unit-tested
// on output captured from the real testbed (tests/data/slurm). They throw SlurmError on output
// they cannot read, rather than returning a guess.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "slurm/job_state.hpp"

namespace kiln::slurm {

// `sbatch --parsable` prints "<id>" or "<id>;<cluster>". Anything else (a warning on stdout, two
// lines, an empty string) is an error: a wrong job id would make kiln watch or cancel someone
// else's job.
std::string parse_job_id(const std::string& sbatch_stdout);

// `scontrol --oneliner show ...` prints "Key=Value Key=Value ..."; values may contain spaces
// ("OS=Linux 6.1 #1 SMP", "Reason=kiln: slow link [root@...]"). A new pair starts at a word
// that looks like a key followed by '=' (letters, digits, '_', ':' and '/' as in "CPUs/Task").
std::map<std::string, std::string> parse_key_values(const std::string& line);

// squeue --noheader --format=%i|%T|%N|%r
std::vector<JobStatus> parse_squeue(const std::string& text);

// scontrol --oneliner show job ID (one job).
JobStatus parse_scontrol_job(const std::string& text);

// scontrol show hostnames EXPR: one name per line.
std::vector<std::string> parse_hostnames(const std::string& text);

struct Switch {
  std::string name;
  int level = 0;
  std::string link_speed;
  std::string nodes_expr;     // hostlist of every node below this switch
  std::string switches_expr;  // hostlist of child switches; empty for a leaf
  std::vector<std::string> nodes;
  std::vector<std::string> switches;
  bool is_leaf() const { return switches.empty(); }
};

// scontrol show topology. Empty under topology/none (which prints only an error on stderr).
std::vector<Switch> parse_topology(const std::string& text);

struct PartitionInfo {
  std::string name;
  bool is_default = false;
  std::string availability;  // "up", "down", "drain", "inact"
  int total_nodes = 0;
  std::map<std::string, int> nodes_by_state;  // sinfo's state words: "idle", "mixed", "drained", "idle*"
  std::vector<std::string> nodes;             // expanded, in sinfo's order
  bool is_up() const { return availability == "up"; }
};

// sinfo --noheader --format=%R|%P|%a|%D|%T|%N : one line per (partition, node state); merged here
// into one entry per partition, in the order sinfo lists them.
std::vector<PartitionInfo> parse_sinfo(const std::string& text);

struct NodeInfo {
  std::string name;
  std::string state;               // as SLURM prints it, e.g. "IDLE+DRAIN", "DOWN+NOT_RESPONDING"
  std::string base_state;          // "IDLE", "MIXED", "ALLOCATED", "DOWN", ...
  std::vector<std::string> flags;  // "DRAIN", "NOT_RESPONDING", "COMPLETING", ...
  std::string reason;              // without SLURM's " [user@time]" suffix
  std::string address;
  std::string hostname;
  int cpus = 0;
  std::vector<std::string> partitions;
  std::map<std::string, std::string> fields;  // everything scontrol printed

  bool has_flag(const std::string& f) const;
  // GPUs SLURM schedules on this node: the gpu entries of its Gres ("gpu:8", "gpu:h200:8(S:0-1)",
  // "gpu:a:2,gpu:b:2,mps:100"), 0 when it has none.
  int gpus() const;
  bool drained() const { return has_flag("DRAIN"); }  // draining or drained
  bool responding() const { return !has_flag("NOT_RESPONDING"); }
  // Can take a job now or soon: up, responding and not drained.
  bool usable() const;
};

// scontrol --oneliner show node [NAME]: one node per line.
std::vector<NodeInfo> parse_nodes(const std::string& text);

// Tasks of a job step that ended, as srun reports them in the job's output:
//   srun: error: node2: task 3: Killed
//   srun: error: node1: tasks 0-1,4: Exited with exit code 1
struct TaskEnd {
  std::string node;
  std::vector<int> tasks;  // SLURM_PROCID, which is the MPI world rank
  std::string how;         // "Killed", "Segmentation fault (core dumped)", "Exited with exit code 1"
};

// The tasks that ended before SLURM tore the step down: the srun task-end lines that come before
// the first "Job step aborted" or "STEP ... CANCELLED". With SLURM's PMIx plugin one task's death
// kills the whole step, so these name the task that started it; the lines after are the others,
// killed by SLURM. Empty when the step was not aborted, or no task line came first (scancel, a
// time limit). Lines it cannot read are skipped: this is evidence, not state.
std::vector<TaskEnd> parse_first_task_ends(const std::string& job_output);
// The same lines while the step may still run (srun --no-kill leaves the other tasks waiting):
// every task-end line so far, up to the first tear-down line if there is one.
std::vector<TaskEnd> parse_task_ends_so_far(const std::string& job_output);

}  // namespace kiln::slurm
