// What the slurm launcher asks of sbatch, from what SLURM says of its nodes: one rank per GPU that
// SLURM schedules (and the GPUs asked for), --ranks-per-node or --ranks to override, one rank per
// node without GPUs. SLURM's answers are the testbed's captured output, with Gres edited in.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "coordinator/slurm_launcher.hpp"
#include "slurm/fake_runner.hpp"
#include "slurm/slurm_client.hpp"

using namespace kiln;
using namespace kiln::coord;

namespace {

slurm::CommandResult captured(const std::string& name, std::vector<std::string>& argv) {
  std::ifstream in(std::filesystem::path(KILN_TEST_DATA) / "slurm" / (name + ".json"));
  const auto j = nlohmann::json::parse(in);
  argv = j.at("argv").get<std::vector<std::string>>();
  slurm::CommandResult r;
  r.exit_code = j.at("exit_code").get<int>();
  r.out = j.at("stdout").get<std::string>();
  return r;
}

// SLURM's answers, with every node's Gres=(null) replaced by `gres`.
SlurmPlan plan_for(const std::string& gres, SlurmJobRequest req) {
  slurm::FakeRunner fake;
  std::vector<std::string> argv;
  auto sinfo = captured("sinfo_idle", argv);
  fake.add(argv, sinfo);
  auto nodes = captured("scontrol_nodes", argv);
  for (std::size_t at = 0; (at = nodes.out.find("Gres=(null)", at)) != std::string::npos; at += 5 + gres.size())
    nodes.out.replace(at, 11, "Gres=" + gres);
  fake.add(argv, nodes);
  slurm::SlurmClient client(fake);
  req.job_template = std::filesystem::path(KILN_TEST_DATA) / ".." / ".." / "jobs" / "burnin.sbatch.in";
  return SlurmLauncher::validate(client, req);
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

TEST_CASE("a node's GPUs from its Gres", "[slurm]") {
  slurm::NodeInfo n;
  CHECK(n.gpus() == 0);
  for (const auto& [gres, gpus] : std::vector<std::pair<std::string, int>>{
           {"(null)", 0}, {"gpu:8", 8}, {"gpu:h200:8(S:0-1)", 8}, {"gpu:a100:2,gpu:h100:2", 4},
           {"mps:100,gpu:4", 4}, {"gpu:h200:x", 0}, {"shard:8", 0}}) {
    n.fields["Gres"] = gres;
    CHECK(n.gpus() == gpus);
  }
}

TEST_CASE("the slurm launcher runs one rank per GPU and asks sbatch for the GPUs", "[slurm]") {
  SlurmJobRequest req;
  req.nodes = 2;
  auto p = plan_for("gpu:h200:8(S:0-1)", req);
  CHECK(p.tasks_per_node == 8);
  CHECK(p.gpus_per_node == 8);
  CHECK(p.ranks() == 16);
  slurm::FakeRunner unused;
  SlurmLauncher l(p, "jobs/burnin.sbatch.in", "kiln-test", {}, unused);
  const auto opts = l.sbatch_options(LaunchRequest{"h:1", "/s", "/r", "/w", 16, {}});
  CHECK(has(opts, "--ntasks-per-node=8"));
  CHECK(has(opts, "--gpus-per-node=8"));

  req.ranks_per_node = 2;  // --ranks-per-node wins over the GPU count; the GPUs are still asked for
  p = plan_for("gpu:8", req);
  CHECK(p.tasks_per_node == 2);
  CHECK(p.gpus_per_node == 8);

  req.ranks_per_node = 0;
  req.ranks = 6;  // --ranks: a multiple of the nodes
  CHECK(plan_for("gpu:8", req).tasks_per_node == 3);

  req.ranks = 0;  // no GPUs: one rank per node, and no GPU request
  p = plan_for("(null)", req);
  CHECK(p.tasks_per_node == 1);
  CHECK(p.gpus_per_node == 0);
  SlurmLauncher none(p, "jobs/burnin.sbatch.in", "kiln-test", {}, unused);
  const auto plain = none.sbatch_options(LaunchRequest{"h:1", "/s", "/r", "/w", 2, {}});
  CHECK_FALSE(std::any_of(plain.begin(), plain.end(), [](const std::string& o) { return o.rfind("--gpus", 0) == 0; }));
}
