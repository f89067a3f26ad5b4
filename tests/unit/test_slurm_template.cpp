// Job script rendering, and the real templates in jobs/.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "slurm/command_runner.hpp"
#include "slurm/job_template.hpp"

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
