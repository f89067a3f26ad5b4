// Job script rendering, and the real templates in jobs/.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "slurm/command_runner.hpp"
#include "slurm/job_template.hpp"
#include "common/protocol.hpp"
#include "coordinator/restart.hpp"

#include <unistd.h>

using namespace kiln::slurm;

namespace {
std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
std::filesystem::path jobs_dir() { return std::filesystem::path(KILN_TEST_DATA).parent_path().parent_path() / "jobs"; }
}  // namespace

TEST_CASE("render_template replaces placeholders and refuses holes", "[slurm]") {
  CHECK(render_template("a={{x}} b={{ y }} c={{x}}", {{"x", "1"}, {"y", "2"}}) == "a=1 b=2 c=1");
  CHECK(render_template("no placeholders ${HOME} {x}", {}) == "no placeholders ${HOME} {x}");
  CHECK_THROWS_WITH(render_template("line1\nw={{worker}}", {}), Catch::Contains("line 2") && Catch::Contains("worker"));
  CHECK_THROWS_AS(render_template("{{x", {{"x", "1"}}), TemplateError);
  CHECK_THROWS_AS(render_template("{{x\n}}", {{"x", "1"}}), TemplateError);
  CHECK_THROWS_AS(render_template("{{a-b}}", {{"a-b", "1"}}), TemplateError);
  // A value containing braces is inserted once, not expanded again.
  CHECK(render_template("{{x}}", {{"x", "{{y}}"}}) == "{{y}}");
}

TEST_CASE("shell_quote makes one word bash reads back exactly", "[slurm]") {
  CHECK(shell_quote("plain") == "'plain'");
  CHECK(shell_quote("it's") == "'it'\\''s'");
  ProcessRunner r;
  const std::string nasty = "a b'c\"$(touch /tmp/kiln-pwned)`x`;\\";
  auto res = r.run({"bash", "-c", "printf %s " + shell_quote(nasty)}, std::chrono::seconds(5));
  CHECK(res.out == nasty);
}

TEST_CASE("the jobs/ templates render with kiln's values into valid bash", "[slurm]") {
  const std::map<std::string, std::string> values = {
      {"worker", shell_quote("/opt/kiln/bin/kiln-worker")},
      {"coordinator", shell_quote("198.18.0.1:7000")},
      {"secret_file", shell_quote("/run/kiln/campaign/secret")},
      {"worker_args", shell_quote("--log-level") + " " + shell_quote("debug")},
      {"gpus_per_node", "8"},
  };
  ProcessRunner r;
  for (const char* name : {"burnin.sbatch.in", "health.sbatch.in"}) {
    INFO(name);
    const std::string text = read(jobs_dir() / name);
    REQUIRE_FALSE(text.empty());
    std::string rendered;
    REQUIRE_NOTHROW(rendered = render_template(text, values));
    CHECK(rendered.find("{{") == std::string::npos);
    auto syntax = r.run({"bash", "-n", "-c", rendered}, std::chrono::seconds(5));
    CHECK(syntax.ok());
    CHECK(syntax.err == "");
  }
}

namespace {
// Runs the rendered burnin script with a fake srun whose steps exit with `codes` in turn; returns
// the job's exit code and how many steps it ran.
std::pair<int, int> run_burnin_steps(const std::vector<int>& codes) {
  const auto dir = std::filesystem::temp_directory_path() / ("kiln-steps-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "bin");
  std::string list;
  for (int c : codes) list += std::to_string(c) + " ";
  {
    std::ofstream srun(dir / "bin" / "srun");
    srun << "#!/bin/bash\ncodes=(" << list << ")\nn=$(cat " << (dir / "steps").string() << " 2>/dev/null || echo 0)\n"
         << "echo $((n + 1)) > " << (dir / "steps").string() << "\nexit ${codes[$n]}\n";
  }
  // The script asks scontrol for the allocation before a restart's step. A real scontrol would ask
  // whatever controller the environment names (a stopped testbed's makes it wait out its timeout), so
  // this one answers as a controller with no such job does.
  std::ofstream(dir / "bin" / "scontrol") << "#!/bin/bash\necho 'slurm_load_jobs error: Invalid job id specified' >&2\nexit 1\n";
  for (const char* tool : {"srun", "scontrol"})
    std::filesystem::permissions(dir / "bin" / tool, std::filesystem::perms::owner_all);
  const std::string script = render_template(read(jobs_dir() / "burnin.sbatch.in"),
                                             {{"worker", shell_quote("/bin/true")}, {"coordinator", shell_quote("h:1")},
                                              {"secret_file", shell_quote("/dev/null")}, {"worker_args", ""}});
  std::ofstream(dir / "job.sh") << script;
  ProcessRunner r;
  auto res = r.run({"env", "PATH=" + (dir / "bin").string() + ":/usr/bin:/bin", "SLURM_JOB_ID=7", "SLURM_JOB_NODELIST=n[1-2]",
                    "SLURM_NNODES=2", "bash", (dir / "job.sh").string()},
                   std::chrono::seconds(10));
  const int steps = std::stoi(read(dir / "steps"));
  std::filesystem::remove_all(dir);
  return {res.exit_code, steps};
}
}  // namespace

TEST_CASE("the burnin job runs a new srun step only when the last one ended for a restart", "[slurm]") {
  const int restart = kiln::proto::kRestartExitCode;
  CHECK(run_burnin_steps({0}) == std::pair{0, 1});                      // an ordinary end ends the job
  CHECK(run_burnin_steps({1}) == std::pair{1, 1});                      // so does a failure
  CHECK(run_burnin_steps({restart, 0}) == std::pair{0, 2});             // a restart: a second step
  CHECK(run_burnin_steps({restart, restart, 137}) == std::pair{137, 3});
  // At most 4 steps (the coordinator restarts at most 3 times): a fifth is never started.
  CHECK(run_burnin_steps({restart, restart, restart, restart, 0}) == std::pair{restart, 4});
  CHECK(kiln::coord::kMaxRestarts + 1 == 4);
}
