#include "coordinator/launcher.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

extern char** environ;

namespace kiln::coord {

namespace {
LaunchEnd describe(int status) {
  if (WIFEXITED(status))
    return {WEXITSTATUS(status) == 0, "exited " + std::to_string(WEXITSTATUS(status))};
  if (WIFSIGNALED(status)) return {false, "killed by signal " + std::to_string(WTERMSIG(status))};
  return {false, "ended (status " + std::to_string(status) + ")"};
}
}  // namespace

void to_json(nlohmann::json& j, const FirstEnd& e) { j = {{"rank", e.rank}, {"host", e.host}, {"how", e.how}}; }

void from_json(const nlohmann::json& j, FirstEnd& e) {
  e.rank = j.at("rank").get<int>();
  e.host = j.at("host").get<std::string>();
  e.how = j.at("how").get<std::string>();
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !end_) wait_or_kill(std::chrono::milliseconds(0));
}

void ChildProcess::spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                         const std::filesystem::path& log) {
  int logfd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (logfd < 0) throw std::runtime_error("cannot open " + log.string() + ": " + std::strerror(errno));
  // Build everything the child needs before fork: only async-signal-safe calls after it.
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos && env.count(kv.substr(0, eq))) continue;
    envs.push_back(kv);
  }
  for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  int errpipe[2];
  if (::pipe2(errpipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(logfd, 1);
    ::dup2(logfd, 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::execvpe(cargv[0], cargv.data(), cenv.data());
    int err = errno;
    (void)!::write(errpipe[1], &err, sizeof err);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(errpipe[1]);
  ::close(logfd);
  int child_err = 0;
  const auto n = ::read(errpipe[0], &child_err, sizeof child_err);
  ::close(errpipe[0]);
  if (n == sizeof child_err) {
    ::waitpid(pid, nullptr, 0);
    throw std::runtime_error("cannot run '" + argv[0] + "': " + std::strerror(child_err));
  }
  pid_ = pid;
}

std::optional<LaunchEnd> ChildProcess::poll() {
  if (end_ || pid_ <= 0) return end_;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) end_ = describe(status);
  return end_;
}

LaunchEnd ChildProcess::wait_or_kill(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return {false, "not started"};
  const auto until = std::chrono::steady_clock::now() + grace;
  while (!poll() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (!end_) {
    ::kill(-pid_, SIGTERM);
    const auto hard = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!poll() && std::chrono::steady_clock::now() < hard)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!end_) {
      ::kill(-pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      end_ = describe(status);
    }
    end_->ok = false;
  }
  // Leave no stragglers of the group behind (orted children, hung ranks).
  ::kill(-pid_, SIGKILL);
  return *end_;
}

std::vector<std::string> LocalLauncher::mpirun_argv(const LaunchRequest& req) {
  // --enable-recovery: a rank that dies (a crash, the OOM killer, kill -9) is a rank.lost finding
  // while the others go on; without it mpirun tears the whole job down. A worker that cannot take
  // part still ends the job, through MPI_Abort.
  std::vector<std::string> argv{"mpirun", "-np", std::to_string(req.ranks), "--oversubscribe", "--enable-recovery"};
  if (::geteuid() == 0) argv.push_back("--allow-run-as-root");
  // Workers pick up the coordinator from these; -x exports them to every rank.
  for (const char* v : {"KILN_COORDINATOR", "KILN_SECRET_FILE"}) {
    argv.push_back("-x");
    argv.push_back(v);
  }
  // What the operator set for the ranks' libraries, NCCL and CUDA, and the workers' telemetry
  // interval, goes to every rank too (mpirun only guarantees the environment to ranks it starts on
  // its own host).
  for (char** e = environ; e && *e; ++e) {
    const std::string_view kv(*e);
    const std::string_view name = kv.substr(0, kv.find('='));
    if (name == "LD_LIBRARY_PATH" || name == "KILN_TELEMETRY_INTERVAL" || name.starts_with("NCCL_") ||
        name.starts_with("CUDA_")) {
      argv.push_back("-x");
      argv.push_back(std::string(name));
    }
  }
  for (const auto& a : req.extra_args) argv.push_back(a);
  argv.push_back(req.worker_binary.string());
  return argv;
}

void LocalLauncher::launch(const LaunchRequest& req) {
  std::map<std::string, std::string> env{
      {"KILN_COORDINATOR", req.coordinator},
      {"KILN_SECRET_FILE", req.secret_file.string()},
      // Ranks share the host's cores; spinning would starve each other.
      {"OMPI_MCA_mpi_yield_when_idle", "1"},
      {"OMPI_MCA_hwloc_base_binding_policy", "none"},
      // Containers often forbid the ptrace-based single-copy path of the shared-memory BTL.
      {"OMPI_MCA_btl_vader_single_copy_mechanism", "none"},
      {"OMPI_MCA_rmaps_base_oversubscribe", "1"},
  };
  child_.spawn(mpirun_argv(req), env, req.run_dir / "workers.log");
}

// The ranks were told to exit; mpirun ends with them (it is killed if it does not).
void LocalLauncher::relaunch(const LaunchRequest& req, std::chrono::milliseconds grace) {
  child_.wait_or_kill(grace);
  child_.reset();
  launch(req);
}

namespace {

// When a process started, in clock ticks since boot (/proc/PID/stat field 22): with the pid it
// names one process, never a later one that reused the pid. 0 when there is no such process, or
// only its zombie.
unsigned long long start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 0;
  const auto paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(paren + 1));
  std::string f;
  for (int i = 3; i <= 22 && fields >> f; ++i) {
    if (i == 3 && f == "Z") return 0;
    if (i == 22) return std::strtoull(f.c_str(), nullptr, 10);
  }
  return 0;
}

}  // namespace

nlohmann::json LocalLauncher::identity() const {
  if (child_.pid() <= 0) return nullptr;
  return {{"pid", child_.pid()}, {"pid_start", start_time(child_.pid())}};
}

std::string LocalLauncher::stop_earlier(const nlohmann::json& id) {
  if (!id.is_object() || !id.contains("pid") || !id.contains("pid_start")) return {};
  const auto pid = static_cast<pid_t>(id.value("pid", 0));
  const auto started = id.value("pid_start", 0ull);
  if (pid <= 1 || started == 0 || start_time(pid) != started) return {};
  // mpirun leads its own process group (spawn); SIGTERM lets it take its ranks down with it.
  ::kill(-pid, SIGTERM);
  for (int i = 0; i < 100 && start_time(pid) == started; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::kill(-pid, SIGKILL);
  return "stopped the earlier session's mpirun (process group " + std::to_string(pid) + ")";
}

}  // namespace kiln::coord
