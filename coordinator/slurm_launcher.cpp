#include "coordinator/slurm_launcher.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/hostlist.hpp"
#include "coordinator/store.hpp"
#include "slurm/job_template.hpp"

namespace kiln::coord {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("cannot read job template " + p.string());
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

}  // namespace

SlurmLauncher::SlurmLauncher(SlurmPlan plan, fs::path job_template, std::string job_name,
                             std::vector<std::string> sbatch_args, slurm::CommandRunner& runner)
    : plan_(std::move(plan)),
      job_template_(std::move(job_template)),
      job_name_(std::move(job_name)),
      sbatch_args_(std::move(sbatch_args)),
      client_(runner) {}

SlurmLauncher::~SlurmLauncher() {
  // kiln is leaving without having seen the job end (an exception, a bug): never leave a burn-in
  // job holding nodes behind.
  if (job_id_.empty() || end_) return;
  try {
    client_.cancel(job_id_);
  } catch (const std::exception& e) {
    spdlog::warn("could not cancel SLURM job {}: {}", job_id_, e.what());
  }
}

namespace {
// Ranks per node: --ranks / nodes, --ranks-per-node, or one per GPU SLURM schedules on the
// candidate nodes (the fewest any of them has), else one. With GPUs, sbatch is asked for them, so
// that clusters which constrain devices give the job its GPUs.
void tasks_and_gpus(const SlurmJobRequest& req, const std::vector<std::string>& candidates,
                    const std::map<std::string, const slurm::NodeInfo*>& by_name, SlurmPlan& plan) {
  int gpus = -1;
  for (const auto& h : candidates)
    if (auto it = by_name.find(h); it != by_name.end()) gpus = gpus < 0 ? it->second->gpus() : std::min(gpus, it->second->gpus());
  plan.gpus_per_node = std::max(gpus, 0);
  if (req.ranks > 0)
    plan.tasks_per_node = req.ranks / plan.nodes;
  else if (req.ranks_per_node > 0)
    plan.tasks_per_node = req.ranks_per_node;
  else
    plan.tasks_per_node = std::max(plan.gpus_per_node, 1);
}
}  // namespace

SlurmPlan SlurmLauncher::validate(slurm::SlurmClient& client, const SlurmJobRequest& req) {
  if (req.nodes < 0) throw SlurmRequestError("--nodes must be positive (got " + std::to_string(req.nodes) + ")");
  if (req.nodes == 0 && req.nodelist.empty())
    throw SlurmRequestError("the slurm launcher needs --nodes N or --nodelist HOSTLIST (or use --launcher local)");
  if (req.nodes > 0 && req.nodes < static_cast<int>(req.nodelist.size()))
    throw SlurmRequestError("--nodes " + std::to_string(req.nodes) + " is fewer than the " +
                            std::to_string(req.nodelist.size()) + " nodes --nodelist names");
  if (!fs::is_regular_file(req.job_template))
    throw SlurmRequestError("job template " + req.job_template.string() + " not found (use --job-template)");

  SlurmPlan plan;
  plan.nodes = std::max<int>(req.nodes, static_cast<int>(req.nodelist.size()));
  plan.nodelist = req.nodelist;
  if (req.ranks > 0 && req.ranks % plan.nodes != 0)
    throw SlurmRequestError("--ranks " + std::to_string(req.ranks) + " is not a multiple of the " +
                            std::to_string(plan.nodes) + " nodes (the slurm launcher runs the same number of ranks on every node)");

  const auto partitions = client.partitions();
  const slurm::PartitionInfo* part = nullptr;
  std::vector<std::string> names;
  for (const auto& p : partitions) {
    names.push_back(p.name);
    if (req.partition.empty() ? p.is_default : p.name == req.partition) part = &p;
  }
  if (!part) {
    if (!req.partition.empty())
      throw SlurmRequestError("unknown partition '" + req.partition + "' (SLURM has: " +
                              (names.empty() ? std::string("none") : join(names, ", ")) + ")");
    throw SlurmRequestError("SLURM has no default partition; choose one with --partition (" + join(names, ", ") + ")");
  }
  plan.partition = part->name;
  if (!part->is_up())
    throw SlurmRequestError("partition " + part->name + " is " + part->availability + ": it starts no jobs");
  if (plan.nodes > part->total_nodes)
    throw SlurmRequestError("--nodes " + std::to_string(plan.nodes) + " is more than partition " + part->name +
                            " has (" + std::to_string(part->total_nodes) + " nodes: " +
                            hostlist::compress(part->nodes) + ")");

  const auto nodes = client.nodes();
  std::map<std::string, const slurm::NodeInfo*> by_name;
  for (const auto& n : nodes) by_name[n.name] = &n;
  const std::set<std::string> in_part(part->nodes.begin(), part->nodes.end());
  std::vector<std::string> missing, outside;
  for (const auto& h : req.nodelist) {
    if (!by_name.count(h))
      missing.push_back(h);
    else if (!in_part.count(h))
      outside.push_back(h);
  }
  if (!missing.empty()) {
    std::vector<std::string> known;
    for (const auto& n : nodes) known.push_back(n.name);
    throw SlurmRequestError(std::string(missing.size() == 1 ? "node " : "nodes ") + hostlist::compress(missing) +
                            (missing.size() == 1 ? " does" : " do") + " not exist in SLURM (it has " +
                            (known.empty() ? std::string("no nodes") : hostlist::compress(known)) + ")");
  }
  if (!outside.empty())
    throw SlurmRequestError(std::string(outside.size() == 1 ? "node " : "nodes ") + hostlist::compress(outside) +
                            (outside.size() == 1 ? " is" : " are") + " not in partition " + part->name + " (" +
                            hostlist::compress(part->nodes) + ")");

  // Nodes that cannot take the job now make it pend, which is not an error in SLURM's eyes; say so.
  const auto& candidates = req.nodelist.empty() ? part->nodes : req.nodelist;
  int usable = 0;
  std::vector<std::string> unusable;
  for (const auto& h : candidates) {
    auto it = by_name.find(h);
    if (it == by_name.end()) continue;
    if (!it->second->address.empty()) plan.node_addresses.push_back(it->second->address);
    plan.candidates.push_back(h);
    if (it->second->usable())
      ++usable;
    else
      unusable.push_back(h + " " + it->second->state);
  }
  tasks_and_gpus(req, candidates, by_name, plan);
  if (!req.nodelist.empty() && !unusable.empty())
    plan.warnings.push_back("the job will pend until these nodes are back: " + join(unusable, ", "));
  else if (usable < plan.nodes)
    plan.warnings.push_back("only " + std::to_string(usable) + " of partition " + part->name + "'s " +
                            std::to_string(part->total_nodes) + " nodes can take a job now; the job may pend");
  return plan;
}

std::vector<std::string> SlurmLauncher::sbatch_options(const LaunchRequest& req) const {
  const fs::path run_dir = fs::absolute(req.run_dir);
  std::vector<std::string> opts = {
      "--partition=" + plan_.partition,
      "--nodes=" + std::to_string(plan_.nodes),
      "--ntasks-per-node=" + std::to_string(plan_.tasks_per_node),
      "--job-name=" + job_name_,
      "--output=" + (run_dir / "slurm-%j.out").string(),
      "--chdir=" + run_dir.string(),
      "--no-requeue",
      // The rendered script already holds these; the export makes sure stale values in the
      // submitting shell (the template lets the environment win) cannot point the workers elsewhere.
      "--export=ALL,KILN_WORKER=" + req.worker_binary.string() + ",KILN_COORDINATOR=" + req.coordinator +
          ",KILN_SECRET_FILE=" + req.secret_file.string(),
  };
  if (!plan_.nodelist.empty()) opts.push_back("--nodelist=" + hostlist::compress(plan_.nodelist));
  if (plan_.gpus_per_node > 0) opts.push_back("--gpus-per-node=" + std::to_string(plan_.gpus_per_node));
  opts.insert(opts.end(), sbatch_args_.begin(), sbatch_args_.end());
  return opts;
}

void SlurmLauncher::launch(const LaunchRequest& req) {
  for (const auto& v : {req.worker_binary.string(), req.coordinator, req.secret_file.string()})
    if (v.find(',') != std::string::npos)
      throw std::runtime_error("'" + v + "' contains a comma, which sbatch --export cannot carry");
  std::vector<std::string> worker_args;
  for (const auto& a : req.extra_args) worker_args.push_back(slurm::shell_quote(a));
  const std::string script = slurm::render_template(read_file(job_template_),
                                                    {{"worker", slurm::shell_quote(fs::absolute(req.worker_binary).string())},
                                                     {"coordinator", slurm::shell_quote(req.coordinator)},
                                                     {"secret_file", slurm::shell_quote(req.secret_file.string())},
                                                     {"worker_args", join(worker_args, " ")}});
  run_dir_ = fs::absolute(req.run_dir);
  // A second launch (a start-up crash, campaign_session.cpp) is a new job: forget the last one's end.
  end_.reset();
  last_.reset();
  const fs::path path = run_dir_ / "job.sbatch";
  write_file_atomic(path, script);
  job_id_ = client_.submit(path, sbatch_options(req));
  spdlog::debug("submitted SLURM job {} ({} node(s) of partition {}, {} rank(s) per node)", job_id_, plan_.nodes,
               plan_.partition, plan_.tasks_per_node);
  // Where the campaign tells the operator to look when workers do not show up.
  std::error_code ec;
  fs::remove(req.run_dir / "workers.log", ec);  // a resumed campaign's: it names the earlier job
  fs::create_symlink("slurm-" + job_id_ + ".out", req.run_dir / "workers.log", ec);
  last_poll_ = Clock::now();
}

void SlurmLauncher::refresh(bool force) {
  if (job_id_.empty()) return;
  if (!force && last_ && Clock::now() - last_poll_ < poll_interval_) return;
  if (!force && !last_ && Clock::now() - last_poll_ < std::chrono::milliseconds(500)) return;
  last_poll_ = Clock::now();
  try {
    auto all = client_.states({job_id_});
    last_ = all.at(job_id_);
  } catch (const std::exception& e) {
    // The client already retried once; keep the last answer and ask again next time.
    spdlog::warn("cannot read the state of SLURM job {}: {}", job_id_, e.what());
  }
}

LaunchEnd SlurmLauncher::end_of(const slurm::JobStatus& s) const {
  std::string state = "job " + s.id + " " + s.state;
  if (!s.reason.empty() && s.state != "COMPLETED" && s.reason != s.state) state += " (" + s.reason + ")";
  LaunchEnd end{s.state == "COMPLETED", state, {}};
  if (!end.ok) end.first_ends = first_ends();
  return end;
}

// The job's output (srun writes there) names the task whose end made SLURM abort the step. The
// lines are near the end: the last MiB is read, whatever the workers wrote before it.
std::vector<FirstEnd> SlurmLauncher::first_ends() const { return read_task_ends(false); }
std::vector<FirstEnd> SlurmLauncher::task_ends() const { return read_task_ends(true); }

std::vector<FirstEnd> SlurmLauncher::read_task_ends(bool so_far) const {
  std::vector<FirstEnd> out;
  std::ifstream in(run_dir_ / ("slurm-" + job_id_ + ".out"), std::ios::binary);
  if (!in) return out;
  constexpr std::streamoff kTail = 1 << 20;
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::streamoff>(in.tellg());
  in.seekg(std::max<std::streamoff>(0, size - kTail));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const auto& e : so_far ? slurm::parse_task_ends_so_far(text) : slurm::parse_first_task_ends(text))
    for (int t : e.tasks) out.push_back({t, e.node, e.how});
  return out;
}

std::optional<LaunchEnd> SlurmLauncher::poll() {
  if (end_ || job_id_.empty()) return end_;
  refresh(false);
  if (last_ && last_->phase == slurm::JobPhase::Terminal) end_ = end_of(*last_);
  return end_;
}

std::string SlurmLauncher::progress() {
  if (job_id_.empty()) return {};
  refresh(false);
  if (!last_) return "job " + job_id_ + " submitted";
  const auto& s = *last_;
  switch (s.phase) {
    case slurm::JobPhase::Pending:
      return "job " + s.id + " " + s.state + (s.reason.empty() ? "" : " (" + s.reason + ")");
    case slurm::JobPhase::Running:
      return "job " + s.id + " " + s.state + (s.nodes.empty() ? "" : " on " + s.nodes);
    default:
      return "job " + s.id + " " + s.state;
  }
}

LaunchEnd SlurmLauncher::finish(std::chrono::milliseconds grace) {
  if (job_id_.empty()) return {false, "not submitted"};
  auto wait_until = [this](Clock::time_point until) {
    while (!end_) {
      refresh(true);
      if (last_ && last_->phase == slurm::JobPhase::Terminal) {
        end_ = end_of(*last_);
        break;
      }
      if (Clock::now() >= until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  };
  wait_until(Clock::now() + grace);
  if (end_) return *end_;
  spdlog::warn("SLURM job {} still {} {} s after the campaign ended; cancelling it", job_id_,
               last_ ? last_->state : std::string("running"),
               std::chrono::duration_cast<std::chrono::seconds>(grace).count());
  try {
    client_.cancel(job_id_);
  } catch (const std::exception& e) {
    spdlog::warn("scancel {} failed: {}", job_id_, e.what());
  }
  wait_until(Clock::now() + std::chrono::seconds(15));
  if (!end_) end_ = LaunchEnd{false, "job " + job_id_ + " " + (last_ ? last_->state : std::string("UNKNOWN")) +
                                         " (still not ended 15 s after scancel)"};
  return *end_;
}

nlohmann::json SlurmLauncher::identity() const {
  if (job_id_.empty()) return nullptr;
  return {{"job", job_id_}};
}

std::string SlurmLauncher::stop_earlier(const nlohmann::json& id) {
  if (!id.is_object() || !id.contains("job") || !id.at("job").is_string()) return {};
  const auto job = id.at("job").get<std::string>();
  try {
    const auto states = client_.states({job});
    const auto it = states.find(job);
    if (it == states.end() || it->second.phase == slurm::JobPhase::Terminal) return {};
    client_.cancel(job);
    return "cancelled the earlier session's job " + job + " (" + it->second.state + ")";
  } catch (const std::exception& e) {
    spdlog::warn("could not stop the earlier session's SLURM job {}: {}", job, e.what());
    return {};
  }
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (!path || !*path) return false;
  std::string dirs = path;
  std::size_t start = 0;
  while (start <= dirs.size()) {
    auto colon = dirs.find(':', start);
    std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (dir.empty()) dir = ".";
    const fs::path p = fs::path(dir) / program;
    std::error_code ec;
    if (fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0) return true;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return false;
}

std::string reachable_address(const std::vector<std::string>& node_addresses) {
  // The kernel's choice of source address towards a node is the address that node can answer.
  for (const auto& addr : node_addresses) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(addr.c_str(), "9", &hints, &res) != 0 || !res) continue;
    std::string found;
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
      // connect() on a UDP socket only picks the route; no packet is sent.
      if (::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
        sockaddr_in local{};
        socklen_t len = sizeof local;
        char buf[INET_ADDRSTRLEN] = {};
        if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
            ::inet_ntop(AF_INET, &local.sin_addr, buf, sizeof buf))
          found = buf;
      }
      ::close(fd);
    }
    ::freeaddrinfo(res);
    if (!found.empty() && found != "0.0.0.0") return found;
  }
  ifaddrs* ifs = nullptr;
  if (::getifaddrs(&ifs) == 0) {
    std::string found;
    for (auto* i = ifs; i && found.empty(); i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP))
        continue;
      char buf[INET_ADDRSTRLEN] = {};
      if (::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf)) found = buf;
    }
    ::freeifaddrs(ifs);
    if (!found.empty()) return found;
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

}  // namespace kiln::coord
