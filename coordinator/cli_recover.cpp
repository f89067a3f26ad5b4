// `kiln report RUN_DIR` rebuilds report.json from what a run directory holds; `kiln resume RUN_DIR`
// continues a campaign whose coordinator died (SIGKILL, a crash, a full disk): the same launcher
// and ranks, the plan rounds that did not finish, appending to the same results.jsonl.
#include <boost/program_options.hpp>

#include <filesystem>
#include <iostream>

#include "coordinator/cli.hpp"
#include "coordinator/journal.hpp"
#include "coordinator/report.hpp"
#include "coordinator/report_html.hpp"
#include "coordinator/report_exports.hpp"
#include "coordinator/run_dir.hpp"
#include "coordinator/store.hpp"

namespace kiln::cli {

namespace po = boost::program_options;
namespace fs = std::filesystem;

po::variables_map parse_with_words(const std::vector<std::string>& args, const po::options_description& desc,
                                   std::vector<std::string>& words, int max_words) {
  po::options_description hidden;
  hidden.add_options()("words", po::value(&words));
  po::options_description all;
  all.add(desc).add(hidden);
  po::positional_options_description pos;
  pos.add("words", max_words);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
  po::notify(vm);
  return vm;
}

std::string parse_run_dir_args(const std::vector<std::string>& args, po::options_description& desc,
                               const std::string& exit_codes, std::string& dir, bool& help) {
  desc.add_options()("help,h", "show this help");
  std::vector<std::string> words;
  po::variables_map vm;
  try {
    vm = parse_with_words(args, desc, words, 1);
  } catch (const po::error& e) {
    return e.what();
  }
  if (!words.empty()) dir = words[0];
  if (vm.count("help")) {
    std::cout << desc << "\n" << exit_codes << "\n";
    help = true;
    return "";
  }
  if (dir.empty()) return "name the run directory (RUN_DIR)";
  if (!fs::is_directory(dir)) return dir + " is not a directory";
  if (coord::campaign_running(dir))
    return "a coordinator is still running the campaign in " + dir + " (it holds results.jsonl); wait for it to end";
  return "";
}

namespace {

struct RecoverArgs {
  std::string dir;
  std::string html;  // kiln report --html: where report.html goes instead of RUN_DIR
  bool quiet = false;
  bool help = false;
  coord::ExportTargets exports;  // kiln report: copies of kiln.prom and report.influx elsewhere
};

// Parses `kiln report|resume RUN_DIR [--quiet]` (and kiln report's --html, --prom-textfile,
// --influx); returns the error, or "".
std::string parse_recover_args(const std::vector<std::string>& args, const std::string& usage, RecoverArgs& a,
                               bool report = false) {
  po::options_description desc(usage + "\n\noptions");
  desc.add_options()("quiet,q", po::bool_switch(&a.quiet), "no progress lines on stderr");
  if (report)
    desc.add_options()("html", po::value(&a.html)->value_name("PATH"),
                       "write the HTML report to PATH instead of RUN_DIR/report.html")(
        "prom-textfile", po::value(&a.exports.prom_textfile)->value_name("PATH"),
        "also write kiln.prom to PATH (atomically), e.g. for node_exporter's textfile collector")(
        "influx", po::value(&a.exports.influx)->value_name("PATH"),
        "also write report.influx (Influx line protocol) to PATH");
  return parse_run_dir_args(args, desc, "Exit codes: 0 pass, 1 fail or incomplete, 2 the campaign could not run (or is unfinished).",
                            a.dir, a.help);
}

}  // namespace

int cmd_report(const std::vector<std::string>& args) {
  RecoverArgs a;
  const std::string usage =
      "usage: kiln report RUN_DIR [--html PATH] [--prom-textfile PATH] [--influx PATH]\n\nRebuilds RUN_DIR/report.json from results.jsonl, campaign.json and journal.jsonl (and\n"
      "the old report.json, for runs from before the journal), judging the plan again from the\n"
      "records, and prints the summary. A campaign whose coordinator died gets verdict error,\n"
      "with how far it got; `kiln resume RUN_DIR` continues it. Writes RUN_DIR/report.html too (or\n"
      "--html PATH): the same report as one self-contained page (findings, nodes, per-GPU bars, a\n"
      "host x host heatmap of pair figures, the rounds), and rewrites the exports beside it:\n"
      "report.junit.xml (JUnit XML), kiln.prom (Prometheus textfile) and report.influx (Influx\n"
      "line protocol). A failure to write any of these is only a warning.";
  if (auto e = parse_recover_args(args, usage, a, /*report=*/true); !e.empty()) return fail(e + " (see kiln report --help)");
  if (a.help) return 0;
  const fs::path dir = a.dir;
  coord::Report rep;
  bool torn = false;
  try {
    const auto run = coord::load_run(dir);
    torn = run.torn_tail;
    rep = coord::rebuild_report(dir, run);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  if (torn && !a.quiet)
    std::cerr << "kiln: the last line of results.jsonl is torn (a write that was never acknowledged); left out\n";
  int code = coord::exit_code(rep);
  try {
    coord::write_json_atomic(dir / "report.json", rep);
  } catch (const std::exception& e) {
    std::cerr << "kiln: error: could not write " << (dir / "report.json").string() << ": " << e.what() << std::endl;
    code = 2;
  }
  const fs::path html = a.html.empty() ? dir / "report.html" : fs::path(a.html);
  if (auto e = coord::write_report_html(html, rep, dir / "results.jsonl"); !e.empty())
    std::cerr << "kiln: warning: could not write " << html.string() << ": " << e << std::endl;
  coord::write_exports(dir, rep, a.exports);  // only warns: an export never changes the exit code
  std::cout << coord::render_summary(rep, (dir / "results.jsonl").string(), (dir / "report.json").string())
            << std::flush;
  return code;
}

int cmd_resume(const std::vector<std::string>& args) {
  RecoverArgs a;
  const std::string usage =
      "usage: kiln resume RUN_DIR\n\nContinues the campaign in RUN_DIR after its coordinator died (or stopped on an\n"
      "error): starts the workers again with the same launcher and ranks (a new sbatch on SLURM),\n"
      "runs the plan rounds that did not finish (a round cut short runs again whole, as a new\n"
      "round) and the localization if it did not finish, appends to the same results.jsonl, and\n"
      "writes a report that covers the whole campaign.";
  if (auto e = parse_recover_args(args, usage, a); !e.empty()) return fail(e + " (see kiln resume --help)");
  if (a.help) return 0;
  const fs::path dir = a.dir;
  coord::LoadedRun run;
  try {
    run = coord::load_run(dir);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  if (!run.journal || !run.campaign.is_object() || !run.campaign.contains("config"))
    return fail(dir.string() + " was written by a kiln without journal.jsonl or launch settings: it cannot be resumed "
                "(kiln report rebuilds its report)");
  if (coord::campaign_complete(*run.journal))
    return fail("the campaign in " + dir.string() + " already finished (verdict " +
                run.journal->end->value("verdict", std::string("?")) + "); kiln report " + dir.string() +
                " rebuilds its report");
  RunConfig c;
  try {
    c = run.campaign.at("config").get<RunConfig>();
  } catch (const std::exception& e) {
    return fail(dir.string() + "/campaign.json: cannot read its launch settings: " + e.what());
  }
  c.quiet = a.quiet;
  if (auto e = check_run_config(c); !e.empty()) return fail(e);
  coord::CampaignOptions o;
  slurm::ProcessRunner slurm_runner;
  LaunchPlan slurm_plan;
  if (auto e = campaign_options(c, o, slurm_runner, slurm_plan); !e.empty()) return fail(e);
  const int had = run.campaign.value("ranks", 0);
  if (had != o.ranks)
    return fail("the campaign ran " + std::to_string(had) + " rank(s) but would now get " + std::to_string(o.ranks));
  o.run_id = run.campaign.value("run_id", dir.filename().string());
  o.out = dir;
  o.expect = run.expect;  // judged as the campaign started: its spec copy, its --optional
  if (run.campaign.contains("expectations")) o.spec["expectations"] = run.campaign.at("expectations");
  o.resume = &run;
  return run_campaign(c, o, slurm_plan, slurm_runner);
}

}  // namespace kiln::cli
