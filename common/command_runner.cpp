#include "common/command_runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <thread>

#include "common/text.hpp"

extern char** environ;

namespace kiln {

std::string format_argv(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    if (a.empty() || a.find_first_of(" \t'\"") != std::string::npos) {
      s += '\'';
      for (char c : a) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
      s += '\'';
    } else {
      s += a;
    }
  }
  return s;
}

namespace {

bool starts_with_any(const std::string& s, std::initializer_list<const char*> prefixes) {
  for (const char* p : prefixes)
    if (s.rfind(p, 0) == 0) return true;
  return false;
}

// A pipe whose ends close themselves.
struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() {
    if (::pipe2(fd, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  }
  ~Pipe() { close_all(); }
  void close_end(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
  void close_all() { close_end(0); close_end(1); }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
};

struct SpawnActions {
  posix_spawn_file_actions_t a;
  SpawnActions() { posix_spawn_file_actions_init(&a); }
  ~SpawnActions() { posix_spawn_file_actions_destroy(&a); }
};

struct SpawnAttr {
  posix_spawnattr_t a;
  SpawnAttr() { posix_spawnattr_init(&a); }
  ~SpawnAttr() { posix_spawnattr_destroy(&a); }
};

void fill_status(CommandResult& r, int status) {
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.exit_code = -1;
    r.term_signal = WTERMSIG(status);
  }
}

}  // namespace

std::vector<std::string> ProcessRunner::clean_environment(const std::vector<std::string>& env) {
  std::vector<std::string> kept;
  for (const auto& kv : env) {
    if (kv.rfind("SLURM_CONF=", 0) == 0) {
      kept.push_back(kv);
      continue;
    }
    if (starts_with_any(kv, {"SLURM_", "SBATCH_", "SALLOC_", "SRUN_", "SQUEUE_", "SINFO_", "SCANCEL_",
                             "SCONTROL_"}))
      continue;
    kept.push_back(kv);
  }
  return kept;
}

ProcessRunner::ProcessRunner() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  env_ = clean_environment(env);
}

CommandResult ProcessRunner::run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  CommandResult r;
  if (argv.empty()) {
    r.spawn_failed = true;
    r.err = "empty command";
    return r;
  }
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<char*> cenv;
  for (const auto& e : env_) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  Pipe out, err;
  SpawnActions actions;
  posix_spawn_file_actions_addopen(&actions.a, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions.a, out.fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions.a, err.fd[1], STDERR_FILENO);
  SpawnAttr attr;
  // Own process group, so a timeout kills whatever the command started too; default signal
  // handling, so a SIGPIPE we ignore does not leak into it.
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setsigdefault(&attr.a, &all);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr.a, &none);
  posix_spawnattr_setpgroup(&attr.a, 0);
  posix_spawnattr_setflags(&attr.a, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  pid_t pid = -1;
  int rc = posix_spawnp(&pid, cargv[0], &actions.a, &attr.a, cargv.data(), cenv.data());
  if (rc != 0) {
    r.spawn_failed = true;
    r.exit_code = 127;
    r.err = "cannot run " + argv[0] + ": " + std::strerror(rc);
    return r;
  }
  out.close_end(1);
  err.close_end(1);

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::array<pollfd, 2> fds{pollfd{out.fd[0], POLLIN, 0}, pollfd{err.fd[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      break;
    }
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }

  // Both pipes closed (or the deadline passed): reap, still within the deadline.
  int status = 0;
  while (!r.timed_out) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      fill_status(r, status);
      return r;
    }
    if (w < 0 && errno != EINTR) {
      r.err += "waitpid failed: " + std::string(std::strerror(errno));
      return r;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(-pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  fill_status(r, status);
  r.exit_code = -1;
  return r;
}

std::string CommandResult::err_tail(std::size_t max) const {
  if (err.size() <= max) return printable(err, max);
  return "..." + printable(std::string_view(err).substr(err.size() - max), max);
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  const std::string dirs = path ? path : "";
  std::size_t from = 0;
  while (from <= dirs.size()) {
    auto to = dirs.find(':', from);
    if (to == std::string::npos) to = dirs.size();
    const std::string dir = dirs.substr(from, to - from);
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    from = to + 1;
  }
  return false;
}

}  // namespace kiln
