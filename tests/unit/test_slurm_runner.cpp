// ProcessRunner on real processes, and the environment it hands to SLURM commands.
#include <catch2/catch.hpp>

#include <chrono>

#include "slurm/command_runner.hpp"

using namespace kiln::slurm;
using namespace std::chrono_literals;

TEST_CASE("ProcessRunner captures stdout, stderr and the exit code", "[slurm]") {
  ProcessRunner r;
  auto ok = r.run({"printf", "%s\\n", "a b", "c"}, 5s);
  CHECK(ok.ok());
  CHECK(ok.out == "a b\nc\n");  // argv, not a shell: "a b" stayed one argument
  auto bad = r.run({"ls", "/nonexistent-kiln-path"}, 5s);
  CHECK(bad.exit_code != 0);
  CHECK_FALSE(bad.err.empty());
  auto missing = r.run({"kiln-no-such-program"}, 5s);
  CHECK(missing.spawn_failed);
  CHECK_FALSE(missing.ok());
}

TEST_CASE("ProcessRunner kills a command at its deadline", "[slurm]") {
  ProcessRunner r;
  auto start = std::chrono::steady_clock::now();
  auto res = r.run({"sleep", "30"}, 300ms);
  CHECK(res.timed_out);
  CHECK_FALSE(res.ok());
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}

TEST_CASE("SLURM job variables are not inherited, SLURM_CONF is", "[slurm]") {
  auto env = ProcessRunner::clean_environment({"PATH=/usr/bin", "SLURM_CONF=/run/kiln-testbed/slurm.conf",
                                               "SLURM_JOB_ID=5", "SLURM_NNODES=4", "SBATCH_PARTITION=gpu",
                                               "SQUEUE_FORMAT=%all", "SINFO_FORMAT=%all", "HOME=/root"});
  CHECK(env == std::vector<std::string>{"PATH=/usr/bin", "SLURM_CONF=/run/kiln-testbed/slurm.conf", "HOME=/root"});
}
