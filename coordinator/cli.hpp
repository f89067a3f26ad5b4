// The kiln subcommands that run campaigns: `run` (cli_run.cpp), `report` and `resume`
// (cli_recover.cpp). main.cpp dispatches to them. A campaign's RunConfig is kept in its
// campaign.json ("config"), so that kiln resume starts the same campaign again.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <nlohmann/json.hpp>

#include "coordinator/campaign.hpp"
#include "coordinator/localize.hpp"
#include "coordinator/slurm_launcher.hpp"
#include "coordinator/step_launcher.hpp"
#include "slurm/command_runner.hpp"

namespace kiln::cli {

struct RunConfig {
  std::string launcher = "auto";
  int ranks = 4;
  bool ranks_given = false;  // --ranks was on the command line (or in the environment)
  std::string out;
  std::string listen;
  std::string advertise;
  std::string worker;
  // The embedded default burn-in plan: GPU, NCCL and RDMA tests report SKIP where the hardware is absent.
  std::string tests = "host.inventory,gpu.health,mpi.all_reduce,gpu.burn,gpu.memtest,gpu.copy_bw,nccl.all_reduce,ib.ports";
  std::string params;  // JSON object: {"test.key": {...}}
  // The plan profile: burnin (the plan above) or health (kHealthTests, minutes); --tests, --params,
  // --deadline and --localize-by given explicitly win over it.
  std::string profile = "burnin";
  double deadline = 120;
  double connect_timeout = 60;
  std::vector<std::string> mpirun_args;
  bool quiet = false;
  coord::LocalizeOptions localize;
  std::string nodelist;
  std::string partition;
  int nodes = 0;
  bool nodes_given = false;  // --nodes was given
  int ranks_per_node = 0;    // slurm: 0 = one per GPU SLURM schedules (Gres), else one
  std::string job_template;
  std::vector<std::string> sbatch_args;
  std::vector<std::string> hosts;  // --nodelist, expanded
  bool only_allocation = false;
  std::string spec;      // --spec: a spec file, "none", or "" (match the shipped profiles)
  std::string optional;  // --optional: checks a verdict does not need, on top of the spec's
  bool drain = false;    // --drain: drain on the findings at the end (only printed without yes)
  bool yes = false;
  std::string prom_textfile;  // --prom-textfile: a copy of kiln.prom for node_exporter's textfile collector
  // The history database the run is recorded in and compared with (empty: the default path).
  std::string history;
  bool no_history = false;
  int regression_runs = 5;
  double regression_threshold = 0.10;
};

// What the launcher needs, found while checking the config: a SLURM request (sbatch), or the
// allocation kiln runs in (--launcher step).
struct LaunchPlan {
  std::optional<coord::SlurmPlan> slurm;
  std::optional<coord::Allocation> step;
};

// The settings kiln resume needs (not out, not quiet), as campaign.json keeps them.
void to_json(nlohmann::json& j, const RunConfig& c);
void from_json(const nlohmann::json& j, RunConfig& c);

// One line on stderr ("kiln: error: ..."); returns 2.
int fail(const std::string& msg);

// Bounds every value before anything is written or launched; fills c.hosts and resolves
// --launcher auto. Returns the error, or an empty string.
std::string check_run_config(RunConfig& c);

// What a campaign needs to start, from a checked config: the plan, the listen address, the
// localization, the worker and (slurm) the request checked against the cluster. Returns the
// error, or an empty string. o.run_id and o.out are the caller's.
std::string campaign_options(RunConfig& c, coord::CampaignOptions& o, slurm::CommandRunner& runner, LaunchPlan& plan);

// Starts the launcher and runs the campaign to its end (or takes over `resume`); the exit code.
int run_campaign(const RunConfig& c, coord::CampaignOptions& o, const LaunchPlan& plan,
                 slurm::CommandRunner& runner);

int cmd_run(const std::vector<std::string>& args);
int cmd_report(const std::vector<std::string>& args);
int cmd_resume(const std::vector<std::string>& args);
int cmd_drain(const std::vector<std::string>& args);
int cmd_job(const std::vector<std::string>& args);
// Every kiln run option, bound to c (cli_run.cpp).
boost::program_options::options_description run_options(RunConfig& c);
// The directory this kiln binary is in, and the sbatch template it uses by default: an installed
// kiln's (PREFIX/share/kiln/jobs), else the source tree's it was built from.
std::filesystem::path self_dir();
std::filesystem::path default_job_template();
// Parses args with desc's options, the words between them into `words` (at most max_words, -1
// any). Throws boost::program_options::error.
boost::program_options::variables_map parse_with_words(const std::vector<std::string>& args,
                                                       const boost::program_options::options_description& desc,
                                                       std::vector<std::string>& words, int max_words);
// Parses `kiln CMD RUN_DIR [options]`: desc holds the command's own options (--help is added). On
// --help prints desc and exit_codes and sets help. Checks RUN_DIR is a directory no coordinator
// holds. Returns the error, or "".
std::string parse_run_dir_args(const std::vector<std::string>& args, boost::program_options::options_description& desc,
                               const std::string& exit_codes, std::string& dir, bool& help);
// `kiln history` and `kiln diff` (cli_history.cpp).
int cmd_history(const std::vector<std::string>& args);
int cmd_diff(const std::vector<std::string>& args);
int cmd_undrain(const std::vector<std::string>& args);
// `kiln ingest`: a user's own job's task log recorded as a run directory (cli_ingest.cpp).
int cmd_ingest(const std::vector<std::string>& args);
// Drains what RUN_DIR/report.json says to (cli_drain.cpp); prints only, without yes. The exit code.
int run_drain(const std::filesystem::path& dir, bool yes);

}  // namespace kiln::cli
