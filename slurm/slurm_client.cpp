#include "slurm/slurm_client.hpp"

#include <algorithm>
#include <array>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/text.hpp"

namespace kiln::slurm {

namespace {

bool valid_job_id(const std::string& id) {
  return !id.empty() && id.size() < 20 && std::all_of(id.begin(), id.end(), ::isdigit);
}

void require_job_id(const std::string& id) {
  if (!valid_job_id(id)) throw SlurmError("not a SLURM job id: '" + id + "'");
}

void require_node_names(const std::vector<std::string>& names) {
  if (names.empty()) throw SlurmError("no node names given");
  for (const auto& n : names)
    if (n.empty() || n.find_first_of(" \t\n=,") != std::string::npos)
      throw SlurmError("not a node name: '" + n + "'");
}

// stderr as one line: "a; b".
std::string one_line(const std::string& text) {
  std::string s;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (line.find_first_not_of(" \t\r") != std::string::npos) s += (s.empty() ? "" : "; ") + line;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return s.empty() ? "(no stderr)" : s;
}

std::string describe(const CommandResult& r) {
  if (r.timed_out) return "timed out";
  if (r.spawn_failed) return "could not start";
  if (r.term_signal != 0) return "killed by signal " + std::to_string(r.term_signal);
  return "exit " + std::to_string(r.exit_code);
}

[[noreturn]] void fail(const std::vector<std::string>& argv, const CommandResult& r, const std::string& note = "") {
  const std::string cmd = format_argv(argv);
  throw SlurmError(cmd, r.exit_code, r.err,
                   cmd + " failed (" + describe(r) + (note.empty() ? "" : ", " + note) +
                       "): " + one_line(r.err.empty() ? r.out : r.err));
}

bool mentions(const std::string& text, std::initializer_list<const char*> needles) {
  for (const char* n : needles)
    if (text.find(n) != std::string::npos) return true;
  return false;
}

// scontrol prints some refusals on stdout ("Node node9 not found"), most on stderr.
std::string all_output(const CommandResult& r) { return r.err + "\n" + r.out; }

bool invalid_job_id(const CommandResult& r) {
  return r.exit_code == 1 && mentions(r.err, {"Invalid job id specified"});
}

}  // namespace

bool is_permanent_failure(const CommandResult& r) {
  if (r.spawn_failed) return true;
  if (r.timed_out || r.term_signal != 0) return false;
  // SLURM's answers to a request it understood and refused (captured in tests/data/slurm).
  return mentions(all_output(r), {"Invalid partition", "invalid partition", "Invalid job id", "Invalid node name",
                          "invalid node name", "not found", "Unable to open file", "Invalid account",
                          "Requested node configuration is not available", "Access/permission denied",
                          "Invalid generic resource", "invalid number of nodes", "Node count specification invalid",
                          "Invalid node state", "Invalid job array", "Invalid Trackable RESource"});
}

SlurmClient::SlurmClient(CommandRunner& runner, SlurmClientOptions options)
    : runner_(runner), options_(options) {}

template <typename Accept>
CommandResult SlurmClient::call(const std::vector<std::string>& argv, Accept accept, Retry retry) {
  CommandResult r = runner_.run(argv, options_.timeout);
  if (r.ok() || accept(r)) return r;
  if (retry == Retry::Never || is_permanent_failure(r)) fail(argv, r);
  spdlog::warn("slurm: {} failed ({}): {}; retrying once in {} ms", format_argv(argv), describe(r), one_line(r.err),
               options_.retry_pause.count());
  std::this_thread::sleep_for(options_.retry_pause);
  r = runner_.run(argv, options_.timeout);
  if (r.ok() || accept(r)) return r;
  fail(argv, r, "after one retry");
}

CommandResult SlurmClient::call(const std::vector<std::string>& argv, Retry retry) {
  return call(argv, [](const CommandResult&) { return false; }, retry);
}

std::vector<std::string> SlurmClient::submit_argv(const std::filesystem::path& script,
                                                  const std::vector<std::string>& extra_args) {
  std::vector<std::string> argv = {"sbatch", "--parsable"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  argv.push_back(script.string());
  return argv;
}

std::vector<std::string> SlurmClient::squeue_argv(const std::vector<std::string>& job_ids) {
  // --states=all: finished jobs stay listed for MinJobAge, so one call usually covers them too.
  return {"squeue", "--noheader", "--states=all", "--jobs=" + join(job_ids, ","), "--format=%i|%T|%N|%r"};
}

std::vector<std::string> SlurmClient::show_job_argv(const std::string& job_id) {
  return {"scontrol", "--oneliner", "show", "job", job_id};
}

std::vector<std::string> SlurmClient::sinfo_argv() {
  return {"sinfo", "--noheader", "--format=%R|%P|%a|%D|%T|%N"};
}

std::string SlurmClient::submit(const std::filesystem::path& script, const std::vector<std::string>& extra_args) {
  const auto argv = submit_argv(script, extra_args);
  CommandResult r = runner_.run(argv, options_.timeout);
  if (!r.ok()) {
    // Retry only when sbatch surely never reached slurmctld; a timeout may have submitted the job.
    const bool unreached = !r.timed_out && !is_permanent_failure(r) &&
                           mentions(r.err, {"Unable to contact slurm controller", "Connection refused",
                                            "Resource temporarily unavailable", "Communication connection failure"});
    if (!unreached) fail(argv, r);
    spdlog::warn("slurm: {} failed ({}): {}; retrying once", format_argv(argv), describe(r), one_line(r.err));
    std::this_thread::sleep_for(options_.retry_pause);
    r = runner_.run(argv, options_.timeout);
    if (!r.ok()) fail(argv, r, "after one retry");
  }
  try {
    return parse_job_id(r.out);
  } catch (const SlurmError& e) {
    throw SlurmError(format_argv(argv), r.exit_code, r.err, format_argv(argv) + ": " + e.what());
  }
}

std::map<std::string, JobStatus> SlurmClient::states(const std::vector<std::string>& job_ids) {
  std::map<std::string, JobStatus> result;
  if (job_ids.empty()) return result;
  for (const auto& id : job_ids) require_job_id(id);

  // squeue exits 1 with "Invalid job id specified" when it knows none of the ids.
  CommandResult r = call(squeue_argv(job_ids), invalid_job_id);
  if (r.ok())
    for (auto& j : parse_squeue(r.out)) result[j.id] = std::move(j);

  for (const auto& id : job_ids) {
    if (result.count(id)) continue;
    result[id] = state(id);
  }
  // squeue may list more than asked (never seen, but an array's tasks would be); keep what was asked.
  std::set<std::string> asked(job_ids.begin(), job_ids.end());
  for (auto it = result.begin(); it != result.end();) it = asked.count(it->first) ? std::next(it) : result.erase(it);
  return result;
}

JobStatus SlurmClient::state(const std::string& job_id) {
  require_job_id(job_id);
  const auto argv = show_job_argv(job_id);
  CommandResult r = call(argv, invalid_job_id);
  if (!r.ok()) {
    JobStatus gone;
    gone.id = job_id;
    gone.state = "UNKNOWN";
    gone.phase = JobPhase::Terminal;
    gone.known = false;
    gone.reason = "slurmctld has no record of the job (finished longer than MinJobAge ago, or never existed)";
    return gone;
  }
  JobStatus j = parse_scontrol_job(r.out);
  if (j.id != job_id) throw SlurmError(format_argv(argv) + " answered about job " + j.id);
  return j;
}

void SlurmClient::cancel(const std::string& job_id) {
  require_job_id(job_id);
  call({"scancel", job_id});
}

std::vector<std::string> SlurmClient::expand_hostlist(const std::string& expr) {
  if (expr.empty()) return {};
  const std::vector<std::string> argv = {"scontrol", "show", "hostnames", expr};
  CommandResult r = call(argv);
  try {
    return parse_hostnames(r.out);
  } catch (const SlurmError& e) {
    throw SlurmError(format_argv(argv), r.exit_code, r.err, format_argv(argv) + ": " + e.what());
  }
}

std::vector<Switch> SlurmClient::topology() {
  // Under topology/none scontrol prints "No topology information available" to stderr; 22.05
  // exits 0, other versions may exit 1: both mean "no switches".
  auto none = [](const CommandResult& r) { return mentions(r.err, {"No topology information available"}); };
  CommandResult r = call({"scontrol", "show", "topology"}, none);
  if (none(r) && r.out.find_first_not_of(" \n") == std::string::npos) return {};
  return parse_topology(r.out);
}

std::vector<PartitionInfo> SlurmClient::partitions() { return parse_sinfo(call(sinfo_argv()).out); }

std::optional<PartitionInfo> SlurmClient::partition(const std::string& name) {
  for (auto& p : partitions())
    if (p.name == name) return p;
  return std::nullopt;
}

std::vector<NodeInfo> SlurmClient::nodes() { return parse_nodes(call({"scontrol", "--oneliner", "show", "node"}).out); }

std::optional<NodeInfo> SlurmClient::node(const std::string& name) {
  require_node_names({name});
  auto missing = [](const CommandResult& r) { return r.exit_code == 1 && mentions(all_output(r), {"not found"}); };
  CommandResult r = call({"scontrol", "--oneliner", "show", "node", name}, missing);
  if (!r.ok()) return std::nullopt;
  auto found = parse_nodes(r.out);
  if (found.size() != 1 || found[0].name != name) throw SlurmError("scontrol show node " + name + " answered about other nodes");
  return found[0];
}

void SlurmClient::drain(const std::vector<std::string>& node_names, const std::string& reason) {
  require_node_names(node_names);
  if (reason.empty() || reason.find('\n') != std::string::npos)
    throw SlurmError("a drain needs a one-line reason (SLURM shows it to every admin)");
  call({"scontrol", "update", "NodeName=" + join(node_names, ","), "State=DRAIN", "Reason=" + reason});
}

void SlurmClient::resume(const std::vector<std::string>& node_names) {
  require_node_names(node_names);
  call({"scontrol", "update", "NodeName=" + join(node_names, ","), "State=RESUME"});
}

}  // namespace kiln::slurm
