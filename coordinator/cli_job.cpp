// `kiln job render`: writes a batch script that runs a whole campaign by itself inside its own
// allocation (jobs/kiln-burnin.sbatch.in; kiln run --launcher step).
#include <boost/program_options.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "coordinator/cli.hpp"
#include "coordinator/store.hpp"
#include "slurm/job_template.hpp"

namespace kiln::cli {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

constexpr const char* kJobUsage =
    "usage: kiln job render [--out FILE] [--template FILE] [-- KILN RUN OPTIONS...]\n\n"
    "Writes a batch script that runs a whole burn-in campaign by itself: `sbatch --nodes=64\n"
    "kiln-burnin.sbatch` starts the coordinator on the job's first node (kiln run --launcher step)\n"
    "and kiln-worker on every node as a step of the same job; the report goes to kiln-JOBID in the\n"
    "directory sbatch ran in (or $KILN_OUT), and the job's exit code is the verdict's (0 pass,\n"
    "1 fail or incomplete, 2 error). Options after -- are kiln run's (--tests, --params, --spec,\n"
    "--drain --yes, ...), checked now; the node set is sbatch's to give (--nodes, --nodelist,\n"
    "--partition on the sbatch command line), and --launcher and --out are the script's.";

// The kiln run options after --, checked as kiln run would read them. Returns the error, or "".
std::string check_run_args(const std::vector<std::string>& run_args) {
  RunConfig c;
  const auto desc = run_options(c);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(run_args).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return std::string("the kiln run options: ") + e.what();
  }
  for (const char* own : {"launcher", "out", "nodes", "nodelist", "partition", "ranks", "help"})
    if (vm.count(own) && !vm[own].defaulted())
      return std::string("--") + own + " is not for the script: " +
             (std::string(own) == "launcher" || std::string(own) == "out" ? "the script sets it"
                                                                          : "give the node set to sbatch");
  return "";
}

}  // namespace

int cmd_job(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kJobUsage << "\n";
    return args.empty() ? 2 : 0;
  }
  if (args[0] != "render") return fail("unknown job command '" + args[0] + "' (see kiln job --help)");
  std::vector<std::string> mine(args.begin() + 1, args.end()), run_args;
  if (auto dd = std::find(mine.begin(), mine.end(), "--"); dd != mine.end()) {
    run_args.assign(dd + 1, mine.end());
    mine.erase(dd, mine.end());
  }
  std::string out = "kiln-burnin.sbatch", tmpl = (default_job_template().parent_path() / "kiln-burnin.sbatch.in").string();
  po::options_description desc(std::string(kJobUsage) + "\n\noptions");
  desc.add_options()("help,h", "show this help")("out,o", po::value(&out)->default_value(out), "the script to write")(
      "template", po::value(&tmpl)->default_value(tmpl), "the batch script template");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(mine).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return fail(std::string(e.what()) + " (see kiln job --help)");
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (auto e = check_run_args(run_args); !e.empty()) return fail(e + " (see kiln job --help)");
  std::ifstream in(tmpl);
  if (!in) return fail("cannot read the template " + tmpl);
  std::stringstream text;
  text << in.rdbuf();
  std::string words;
  for (const auto& a : run_args) words += (words.empty() ? "" : " ") + slurm::shell_quote(a);
  try {
    const auto script = slurm::render_template(
        text.str(), {{"kiln", slurm::shell_quote(fs::absolute(self_dir() / "kiln").lexically_normal().string())},
                     {"run_args", words}});
    coord::write_file_atomic(out, script);
    fs::permissions(out, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  std::cout << "wrote " << out << ": submit it with sbatch --nodes=N [--partition=P] " << out << "\n";
  return 0;
}

}  // namespace kiln::cli
