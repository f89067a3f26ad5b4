// kiln: the coordinator. `kiln run` launches workers and drives a campaign (cli_run.cpp), `kiln
// report` and `kiln resume` rebuild or continue one from its run directory (cli_recover.cpp);
// `kiln simulate` runs the localization planner against a model cluster; `kiln spec check` validates
// spec files (common/spec.hpp).
#include <boost/program_options.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <iostream>

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
  simulate   run the localization planner against a model cluster
  catalog    print the findings catalog (code, severity, meaning, next step)
  spec       check a spec file: what each class of node should have and do (docs/spec.md)
  version    print the version

`kiln <command> --help` describes each command. Exit codes: 0 pass, 1 fail or incomplete
(a check the spec requires did not run), 2 the campaign could not run (bad input, launcher or
network failure).
)";

using cli::fail;

int cmd_simulate(const std::vector<std::string>& args) {
  analysis::SimulateOptions o;
  po::options_description desc(
      "usage: kiln simulate [options]\n\nRuns the localization planner against a model cluster (a group's time is set by\n"
      "its slowest member and link, times noise) and reports rounds, tests, modelled time,\n"
      "precision and recall next to the circle method (every pair).\n\noptions");
  desc.add_options()
      ("help,h", "show this help")
      ("nodes", po::value(&o.nodes)->default_value(o.nodes), "nodes in the model cluster")
      ("bad-nodes", po::value(&o.bad_nodes)->default_value(o.bad_nodes), "slow nodes to plant")
      ("bad-links", po::value(&o.bad_links)->default_value(o.bad_links), "slow links to plant")
      ("noise", po::value(&o.noise)->default_value(o.noise), "relative sigma of the multiplicative noise")
      ("seed", po::value(&o.seed)->default_value(o.seed), "first random seed")
      ("trials", po::value(&o.trials)->default_value(o.trials), "trials (seeds seed, seed+1, ...)")
      ("mode", po::value(&o.mode)->default_value(o.mode), "adaptive or full")
      ("slow-factor", po::value(&o.slow_factor)->default_value(o.slow_factor), "how much slower a bad node or link is")
      ("votes", po::value(&o.votes)->default_value(o.votes), "independent slow observations before a finding")
      ("story", po::bool_switch(&o.story), "include the round-by-round story (one trial)")
      ("json", po::bool_switch(&o.json), "JSON output");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return fail(std::string(e.what()) + " (see kiln simulate --help)");
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
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
  if (cmd == "simulate") return cmd_simulate(rest);
  if (cmd == "catalog") return cmd_catalog(rest);
  if (cmd == "spec") return cmd_spec(rest);
  return fail("unknown command '" + cmd + "' (see kiln --help)");
}

