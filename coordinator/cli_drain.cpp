// `kiln drain RUN_DIR` and `kiln undrain RUN_DIR` (coordinator/drain.hpp); `kiln run --drain` calls
// run_drain at the end of its campaign.
#include <boost/program_options.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "coordinator/cli.hpp"
#include "coordinator/drain.hpp"
#include "coordinator/store.hpp"

namespace kiln::cli {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

struct DrainArgs {
  std::string dir;
  bool yes = false;
  bool help = false;
};

std::string parse_drain_args(const std::vector<std::string>& args, const std::string& usage, DrainArgs& a) {
  po::options_description desc(usage + "\n\noptions");
  desc.add_options()("yes,y", po::bool_switch(&a.yes), "run the scontrol commands (without it they are only printed)");
  return parse_run_dir_args(args, desc, "Exit codes: 0 done (or, without --yes, printed), 2 bad input or a SLURM command failed.",
                            a.dir, a.help);
}

}  // namespace

int run_drain(const fs::path& dir, bool yes) {
  nlohmann::json report;
  try {
    std::ifstream in(dir / "report.json");
    if (!in) return fail((dir / "report.json").string() + " is missing: run kiln report " + dir.string() + " first");
    report = nlohmann::json::parse(in);
    const auto plan = coord::plan_drain(report);
    slurm::ProcessRunner runner;
    slurm::SlurmClient client(runner);
    return coord::drain_run(dir, plan, yes, client, std::cout);
  } catch (const std::exception& e) {
    return fail((dir / "report.json").string() + ": " + e.what());
  }
}

int cmd_drain(const std::vector<std::string>& args) {
  DrainArgs a;
  const std::string usage =
      "usage: kiln drain RUN_DIR [--yes]\n\nDrains the nodes with a confirmed finding that takes a node out of service (node.slow,\n"
      "node.lost, gpu.count, gpu.lost, gpu.sdc, gpu.memory, gpu.ecc_uncorrectable,\n"
      "gpu.row_remap_failure, gpu.reset_required, gpu.xid, gpu.hang; severity error or critical,\n"
      "confidence >= 0.9), each once, with reason \"kiln <code> <run-id>\". Unresolved findings and\n"
      "link or switch findings never drain a node. Without --yes it prints the scontrol commands and\n"
      "changes nothing. What it drained is kept in RUN_DIR/drained.json for kiln undrain.";
  if (auto e = parse_drain_args(args, usage, a); !e.empty()) return fail(e + " (see kiln drain --help)");
  if (a.help) return 0;
  return run_drain(a.dir, a.yes);
}

int cmd_undrain(const std::vector<std::string>& args) {
  DrainArgs a;
  const std::string usage =
      "usage: kiln undrain RUN_DIR [--yes]\n\nResumes exactly the nodes kiln drain (or kiln run --drain) drained for this run\n"
      "(RUN_DIR/drained.json), and only those still drained with this run's reason: a node drained\n"
      "since for another reason, or already back in service, is left as it is. Without --yes it prints\n"
      "the scontrol commands and changes nothing.";
  if (auto e = parse_drain_args(args, usage, a); !e.empty()) return fail(e + " (see kiln undrain --help)");
  if (a.help) return 0;
  try {
    slurm::ProcessRunner runner;
    slurm::SlurmClient client(runner);
    return coord::undrain_run(a.dir, a.yes, client, std::cout);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

}  // namespace kiln::cli
