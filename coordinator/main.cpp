// kiln: the coordinator. `kiln run` launches workers and drives a campaign (cli_run.cpp), `kiln
// report` and `kiln resume` rebuild or continue one from its run directory (cli_recover.cpp);
// `kiln simulate` runs the localization planner against a model cluster; `kiln spec check` validates
// spec files (common/spec.hpp).
#include <boost/program_options.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>

#include "common/checks.hpp"
#include "common/findings.hpp"
#include "common/protocol.hpp"
#include "common/spec.hpp"
#include "coordinator/run_dir.hpp"
#include "coordinator/spec_baseline.hpp"
#include "coordinator/store.hpp"
#include "coordinator/analysis/simulate.hpp"
#include "coordinator/cli.hpp"

namespace po = boost::program_options;
using namespace kiln;

namespace {

constexpr const char* kUsage = R"(kiln - GPU cluster burn-in and health checks

usage: kiln <command> [options]

commands:
  run        launch kiln-worker on the nodes and run a campaign
  report     rebuild RUN_DIR/report.json from what the run directory holds
  resume     continue a campaign whose coordinator died (or stopped on an error)
  drain      drain the nodes a run's confirmed findings take out of service (SLURM)
  undrain    resume exactly the nodes a run drained
  history    a node's (or a link's) recorded runs and figures; history import RUN_DIR records one
  diff       two runs' figures side by side, with their ratios and the findings only one has
  job        job render: write a batch script that runs a whole campaign by itself (sbatch it)
  ingest     record a user's own job (jobs/kiln-user-job.sh, KILN_METRIC lines) as a run directory
  simulate   run the localization planner against a model cluster
  catalog    print the findings catalog (code, severity, meaning, next step)
  spec       check a spec file: what each class of node should have and do (docs/spec.md)
  version    print the version

`kiln <command> --help` describes each command. Exit codes: 0 pass, 1 fail or incomplete
(a check the spec requires did not run), 2 the campaign could not run (bad input, launcher or
network failure).
)";

using cli::fail;

// The --model list for --help, one line each.
std::string simulate_model_help() {
  std::string text = "models (--model; explicit options override the model's):\n";
  for (const auto& [name, line] : analysis::simulate_models()) text += "  " + name + std::string(14 - name.size(), ' ') + line + "\n";
  return text;
}

int cmd_simulate(const std::vector<std::string>& args) {
  po::options_description desc(
      "usage: kiln simulate [options]\n\nRuns the localization planner against a model cluster and reports rounds, tests,\n"
      "modelled time, precision, recall, false findings and unresolved faults next to the circle\n"
      "method (every pair). The models are described in docs/localization.md. Defaults are the\n"
      "basic model's unless --model sets them.\n\n" + simulate_model_help() + "\noptions");
  std::vector<std::pair<const char*, const char*>> valued = {
      {"model", "cluster model preset (default basic)"},
      {"nodes", "nodes in the model cluster (64; a topology.conf sets it)"},
      {"bad-nodes", "slow nodes to plant (1)"},
      {"bad-links", "slow links to plant between good nodes (0)"},
      {"bad-rails", "slow NICs to plant, one rail of one good node each (0)"},
      {"slow-factor", "how much slower a fault is, above 1 (3)"},
      {"severity-spread", "on: each fault's factor log-uniform in [slow-factor, 10] (off)"},
      {"noise", "relative sigma of the lognormal noise (0.03)"},
      {"stragglers", "probability an edge is a heavy-tailed straggler, up to 10x (0)"},
      {"dilution", "on: a rank's time is the mean of its edges, a group's its slowest rank's (off)"},
      {"per-peer", "on: groups of up to 256 members (512 from 5,820 nodes, 1,024 from 11,639 to 23,276) report per-edge figures (off)"},
      {"fault-rate", "probability a fault is active in a round, per fault (1)"},
      {"leaf-size", "nodes per leaf switch; 0 none, -1 N/4 within 2..32 (0)"},
      {"topology-conf", "SLURM topology.conf with the leaves and node names"},
      {"congestion-rate", "probability per round that one leaf's uplink is congested (0)"},
      {"congestion-factor", "slowdown of edges crossing the congested uplink (3)"},
      {"rails", "GPUs and NICs per node (1)"},
      {"rail-balance", "on: traffic moves off a slow rail; off: a static split waits for it (off)"},
      {"rate-caps", "on: a fault caps a port or path at 1/factor of a pair test's rate (off)"},
      {"a2a-demand", "with --rate-caps: a rank's all-to-all rate as a share of a pair test's (1)"},
      {"reference", "a healthy group's figure given to the planner (as a spec's figure is), as a "
                    "multiple of the true one: 1 exact, 1.1 a spec 10% slow; 0 none (0)"},
      {"seed", "first random seed (1)"},
      {"trials", "trials (seeds seed, seed+1, ...) (1)"},
      {"mode", "adaptive or full (adaptive)"},
      {"votes", "independent slow observations before a finding (2)"}};
  desc.add_options()("help,h", "show this help");
  for (const auto& [name, text] : valued) desc.add_options()(name, po::value<std::string>(), text);
  analysis::SimulateOptions o;
  bool json = false, story = false;
  desc.add_options()("story", po::bool_switch(&story), "include the round-by-round story (one trial)")(
      "json", po::bool_switch(&json), "JSON output");
  po::variables_map vm;
  std::vector<std::pair<std::string, std::string>> given;
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    po::notify(vm);
    for (const auto& [name, text] : valued)
      if (vm.count(name)) given.emplace_back(name, vm[name].as<std::string>());
  } catch (const po::error& e) {
    return fail(std::string(e.what()) + " (see kiln simulate --help)");
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  try {
    o = analysis::parse_simulate_options(given);
  } catch (const std::invalid_argument& e) {
    return fail(std::string(e.what()) + " (see kiln simulate --help)");
  }
  o.json = json, o.story = story;
  if (!o.topology_conf.empty()) {
    std::ifstream conf(o.topology_conf, std::ios::binary);
    if (!conf) return fail("cannot read --topology-conf " + o.topology_conf);
    o.topology_text.assign(std::istreambuf_iterator<char>(conf), std::istreambuf_iterator<char>());
  }
  try {
    return analysis::run_simulate(o, std::cout);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

// Prints the findings catalog and every check's parameters and figure of merit.
int cmd_catalog(const std::vector<std::string>& args) {
  const bool markdown = args.size() == 1 && args[0] == "--markdown";
  if (!args.empty() && !markdown) {
    if (args[0] == "--help" || args[0] == "-h") {
      std::cout << "usage: kiln catalog [--markdown]\n\nPrints the findings catalog (code, severity, entity, "
                   "meaning, next step) and every check with its parameters and figure of merit. --markdown "
                   "prints docs/findings.md.\n";
      return 0;
    }
    return fail("kiln catalog takes only --markdown (got '" + args[0] + "')");
  }
  if (markdown) {
    std::cout << catalog_markdown();
    return 0;
  }
  std::cout << "Findings (code, severity, entity: meaning; next step)\n";
  for (const auto& e : catalog())
    std::cout << "  " << e.name << "  " << to_string(e.severity) << "  " << e.entity_kind << ": " << e.meaning
              << "\n      next: " << e.next_step << "\n";
  std::cout << "\nChecks (key, scope, default deadline; figure of merit; parameters)\n" << describe_checks();
  return 0;
}

std::string count_of(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// `kiln spec from-run RUN_DIR [--out FILE] [--tolerance F] [--name CLASS]`.
int spec_from_run(const std::vector<std::string>& args) {
  coord::BaselineOptions o;
  std::string out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto value = [&](const char* flag) -> const std::string* {
      return args[i] == flag && i + 1 < args.size() ? &args[++i] : nullptr;
    };
    if (auto* v = value("--out")) {
      out = *v;
    } else if (auto* t = value("--tolerance")) {
      char* end = nullptr;
      o.tolerance = std::strtod(t->c_str(), &end);
      if (end == t->c_str() || *end || !(o.tolerance > 0 && o.tolerance < 1))
        return fail("--tolerance must be a fraction between 0 and 1 (got '" + *t + "')");
    } else if (auto* n = value("--name")) {
      o.name = *n;
    } else if (o.run_dir.empty() && args[i].rfind("--", 0) != 0) {
      o.run_dir = args[i];
    } else {
      return fail("kiln spec from-run: unexpected '" + args[i] + "' (see kiln spec --help)");
    }
  }
  if (o.run_dir.empty()) return fail("kiln spec from-run needs a RUN_DIR (see kiln spec --help)");
  std::string text;
  try {
    text = coord::baseline_spec(coord::load_run(o.run_dir), o);
  } catch (const std::exception& e) {
    return fail(std::string("kiln spec from-run: ") + e.what());
  }
  const auto check = spec::parse_spec(text, out.empty() ? "(from-run)" : out);
  for (const auto& e : check.errors) std::cerr << e << "\n";
  if (!check.spec) return fail("kiln spec from-run wrote a spec that does not validate (a bug)");
  if (out.empty()) {
    std::cout << text;
    return 0;
  }
  try {
    coord::write_file_atomic(out, text);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  std::cerr << "kiln: wrote " << out << " (" << count_of(check.spec->figure_count(), "figure", "figures") << ")\n";
  return 0;
}

// `kiln spec check FILE...`: one "FILE: ok (...)" line per good file on stdout, one
// "FILE:LINE:COL: message" line per problem on stderr; exit 2 when any file has a problem.
int cmd_spec(const std::vector<std::string>& args) {
  constexpr const char* usage =
      "usage: kiln spec check FILE...\n       kiln spec from-run RUN_DIR [--out FILE] [--tolerance F] [--name CLASS]\n\n"
      "check: validates spec files (docs/spec.md): node classes, their hardware, software,\n"
      "expected figures and optional checks. Prints FILE: ok (N classes, M figures), or one\n"
      "FILE:LINE:COL: message line per problem on stderr and exits 2.\n\n"
      "from-run: writes a spec from a known-good run (to FILE, else stdout): each check's figure of\n"
      "merit is the run's median (per GPU or node; per group and message size from 64 MiB, inside a\n"
      "node or across nodes), with tolerance F (default 0.10), for a class named CLASS (default\n"
      "baseline) selecting the run's hosts.\n";
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << usage;
    return 0;
  }
  if (!args.empty() && args[0] == "from-run") return spec_from_run({args.begin() + 1, args.end()});
  if (args.empty() || args[0] != "check")
    return fail("kiln spec takes: check FILE..., or from-run RUN_DIR (see kiln spec --help)");
  if (args.size() < 2) return fail("kiln spec check needs a FILE (see kiln spec --help)");
  int rc = 0;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const auto r = spec::load_spec(args[i]);
    for (const auto& e : r.errors) std::cerr << e << "\n";
    if (r.spec)
      std::cout << args[i] << ": ok (" << count_of(r.spec->classes.size(), "class", "classes") << ", "
                << count_of(r.spec->figure_count(), "figure", "figures") << ")\n";
    else rc = 2;
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("kiln"));
  spdlog::set_pattern("kiln: %^%l%$: %v");
  if (const char* lvl = std::getenv("KILN_LOG_LEVEL")) spdlog::set_level(spdlog::level::from_str(lvl));
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string cmd = argv[1];
  std::vector<std::string> rest(argv + 2, argv + argc);
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::cout << kUsage;
    return 0;
  }
  if (cmd == "version" || cmd == "--version") {
    std::cout << "kiln " << KILN_VERSION << " (protocol " << proto::kProtocolVersion << ", report schema "
              << kSchemaVersion << ")\n";
    return 0;
  }
  if (cmd == "run") return cli::cmd_run(rest);
  if (cmd == "report") return cli::cmd_report(rest);
  if (cmd == "resume") return cli::cmd_resume(rest);
  if (cmd == "drain") return cli::cmd_drain(rest);
  if (cmd == "history") return cli::cmd_history(rest);
  if (cmd == "diff") return cli::cmd_diff(rest);
  if (cmd == "job") return cli::cmd_job(rest);
  if (cmd == "undrain") return cli::cmd_undrain(rest);
  if (cmd == "ingest") return cli::cmd_ingest(rest);
  if (cmd == "simulate") return cmd_simulate(rest);
  if (cmd == "catalog") return cmd_catalog(rest);
  if (cmd == "spec") return cmd_spec(rest);
  return fail("unknown command '" + cmd + "' (see kiln --help)");
}

