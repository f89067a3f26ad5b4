// `kiln run`: its options, their checks, and starting a campaign (also for kiln resume).
#include <boost/asio/ip/address.hpp>
#include <boost/program_options.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "common/auth.hpp"
#include "common/checks.hpp"
#include "common/env_options.hpp"
#include "common/hostlist.hpp"
#include "common/ingested.hpp"
#include "common/net.hpp"
#include "common/text.hpp"
#include "coordinator/cli.hpp"
#include "coordinator/expectations.hpp"
#include "coordinator/history.hpp"
#include "coordinator/launcher.hpp"
#include "coordinator/report.hpp"
#include "coordinator/store.hpp"

namespace kiln::cli {

namespace po = boost::program_options;
namespace fs = std::filesystem;

int fail(const std::string& msg) {
  std::cerr << "kiln: error: " << msg << std::endl;
  return 2;
}

fs::path self_dir() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : p.parent_path();
}

// The sbatch template: an installed kiln's (PREFIX/bin/kiln -> PREFIX/share/kiln/jobs), else the
// source tree's that this build came from (build/bin/kiln).
fs::path default_job_template() {
  const fs::path installed = self_dir() / ".." / "share" / "kiln" / "jobs" / "burnin.sbatch.in";
  std::error_code ec;
  if (fs::exists(installed, ec)) return installed.lexically_normal();
#ifdef KILN_JOBS_DIR
  return fs::path(KILN_JOBS_DIR) / "burnin.sbatch.in";
#else
  return installed.lexically_normal();
#endif
}

std::string make_run_id() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::gmtime(&t));
  return std::string(buf) + "-" + auth::random_hex(3);
}

po::options_description run_options(RunConfig& c) {
  po::options_description desc(
      "usage: kiln run [options]\n\nLaunches kiln-worker ranks, runs the test plan round by round, streams every\n"
      "result to OUT/results.jsonl and writes OUT/report.json, with report.junit.xml (JUnit XML),\n"
      "kiln.prom (Prometheus textfile) and report.influx (Influx line protocol) beside it.\n\noptions");
  desc.add_options()
      ("help,h", "show this help")
      ("launcher", po::value(&c.launcher)->default_value(c.launcher),
       "how workers start: local (mpirun on this host), none (start kiln-worker yourself with the printed "
       "address and secret), slurm (sbatch; one rank per GPU, or per node without GPUs), step (inside a SLURM allocation: "
       "srun on the allocation's nodes, --ranks-per-node or SLURM_NTASKS_PER_NODE ranks each; kiln job render writes a "
       "batch script that runs it), auto (step inside an allocation (SLURM_JOB_ID), else slurm when sbatch is on PATH, "
       "else local; --ranks without --nodes/--nodelist/--partition means local)")
      ("ranks,n", po::value(&c.ranks)->default_value(c.ranks), "number of worker ranks (local/none launchers)")
      ("nodelist,w", po::value(&c.nodelist), "SLURM hostlist to run on, e.g. gpu[001-004,010]")
      ("partition,p", po::value(&c.partition), "SLURM partition")
      ("nodes,N", po::value(&c.nodes), "number of SLURM nodes")
      ("ranks-per-node", po::value(&c.ranks_per_node),
       "slurm: worker ranks per node (default: one per GPU that SLURM schedules on the nodes, from their "
       "Gres, and sbatch is asked for those GPUs; one on nodes without GPUs)")
      ("job-template", po::value(&c.job_template), ("sbatch template for the slurm launcher (default: " + default_job_template().string() +
       ": PREFIX/share/kiln/jobs next to an installed kiln, else the source tree's jobs/)").c_str())
      ("sbatch-arg", po::value(&c.sbatch_args)->composing(),
       "extra sbatch option for the slurm launcher, e.g. --sbatch-arg=--time=02:00:00 (repeatable)")
      ("out,o", po::value(&c.out), "run directory (default: kiln-runs/RUN_ID)")
      ("listen", po::value(&c.listen), "ADDR:PORT to listen on (default 127.0.0.1:0 for local, 0.0.0.0:0 for slurm; port 0 = any)")
      ("advertise", po::value(&c.advertise), "host name or address workers dial (default: the listen address; for slurm on 0.0.0.0, this host's "
       "address on the route to the first compute node)")
      ("worker", po::value(&c.worker), "path to kiln-worker (default: next to kiln)")
      ("profile", po::value(&c.profile)->default_value(c.profile),
       "the test plan: burnin (the full plan, --tests' default) or health (a few minutes: host.inventory, "
       "gpu.health, ib.ports, a 10 s GPU burn, short MPI and NCCL all-reduces, no localization; for a periodic "
       "check, e.g. jobs/kiln-health.scrontab). --tests, --params, --deadline and --localize-by given explicitly "
       "win over it. Not the hardware profiles of --spec (profiles/*.toml)")
      ("tests", po::value(&c.tests)->default_value(c.tests), "comma-separated test keys, one round each")
      ("params", po::value(&c.params), "JSON object of per-test parameters, e.g. '{\"mpi.all_reduce\":{\"max_bytes\":1048576}}'")
      ("deadline", po::value(&c.deadline)->default_value(c.deadline), "seconds each test may take before it counts as timed out; a group check that overruns it with an MPI "
       "operation outstanding has the workers restarted after its round (at most 3 times)")
      ("connect-timeout", po::value(&c.connect_timeout)->default_value(c.connect_timeout),
       "seconds to wait for all workers to connect (and to connect again after a restart)")
      ("mpirun-arg", po::value(&c.mpirun_args)->composing(), "extra argument for mpirun (repeatable)")
      ("quiet,q", po::bool_switch(&c.quiet), "no progress lines on stderr")
      ("drain", po::bool_switch(&c.drain),
       "slurm: at the end, drain the nodes with confirmed findings that take a node out of service (as kiln drain "
       "RUN_DIR: reason \"kiln <code> <run-id>\"); without --yes only print the scontrol commands")
      ("yes,y", po::bool_switch(&c.yes), "with --drain: run the scontrol commands")
      ("only-allocation", po::bool_switch(&c.only_allocation),
       "slurm: accept connections only from the allocation's node addresses (SLURM's NodeAddr; they must be "
       "IP addresses, and workers must reach the coordinator from them)")
      ("localize-by", po::value(&c.localize.by)->default_value(c.localize.by),
       "find slow units after the plan: node, rank, off, or auto (node when there are 2+ nodes)")
      ("localize-test", po::value(&c.localize.test)->default_value(c.localize.test),
       "group test the localization rounds run (it must load every link of its group)")
      ("localize-bytes", po::value(&c.localize.size_bytes)->default_value(c.localize.size_bytes),
       "bytes each rank sends per operation in localization rounds")
      ("localize-deadline", po::value(&c.localize.deadline_s)->default_value(c.localize.deadline_s),
       "seconds a localization group may take before it counts as slow")
      ("localize-mode", po::value(&c.localize.mode)->default_value(c.localize.mode),
       "adaptive (group testing, O(log N) rounds) or full (every pair, circle method, with retests)")
      ("slow-cutoff", po::value(&c.localize.rel_cutoff)->default_value(c.localize.rel_cutoff, short_number(c.localize.rel_cutoff)),
       "a group is slow below this fraction of the expected figure (peers' median or spec)")
      ("votes", po::value(&c.localize.votes)->default_value(c.localize.votes),
       "independent slow observations needed before a node or link finding")
      ("spec", po::value(&c.spec),
       "spec file (docs/spec.md) the nodes are judged against: each node's class, the checks it requires "
       "(not.tested when they did not run), its figures (spec.below) and versions; validated before anything "
       "starts and kept as OUT/spec.toml. Without it, each node is matched to a shipped profile by its GPUs; "
       "'none' judges against no expectations")
      ("optional", po::value(&c.optional),
       "comma-separated checks a verdict does not need, on top of the spec's optional lists")
      ("prom-textfile", po::value(&c.prom_textfile),
       "also write OUT/kiln.prom (Prometheus metrics) to this path, replaced atomically, e.g. "
       "/var/lib/prometheus/node-exporter/kiln.prom for node_exporter's textfile collector")
      ("history", po::value(&c.history),
       "history database the run is recorded in (default: $KILN_HISTORY, else ~/.local/share/kiln/history.sqlite; KILN_HISTORY=off: none)")
      ("no-history", po::bool_switch(&c.no_history), "neither record the run nor compare it with earlier runs")
      ("regression-runs", po::value(&c.regression_runs)->default_value(c.regression_runs),
       "node.regressed: compare each node's figures with the median of its last K recorded runs (at least 2 needed)")
      ("regression-threshold", po::value(&c.regression_threshold)->default_value(c.regression_threshold, short_number(c.regression_threshold)),
       "node.regressed: a figure worse than that median by more than this fraction");
  return desc;
}

namespace {

// Bounds every value of `kiln run` before anything is written or launched; fills c.hosts and
// resolves --launcher auto. Returns the error, or an empty string.

// The test plan from --tests and --params, each check's parameters validated against what it
// declares. Throws std::invalid_argument with one line.
std::vector<proto::TestSpec> parse_plan(const RunConfig& c) {
  nlohmann::json params = nlohmann::json::object();
  if (!c.params.empty()) {
    params = nlohmann::json::parse(c.params, nullptr, false);
    if (params.is_discarded() || !params.is_object()) throw std::invalid_argument("--params is not a JSON object");
  }
  std::vector<std::string> keys;
  std::size_t start = 0;
  for (;;) {
    auto comma = c.tests.find(',', start);
    keys.push_back(c.tests.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (keys.back().empty()) throw std::invalid_argument("--tests has an empty test name");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (const auto& [key, _] : params.items())
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      throw std::invalid_argument("--params names '" + key.substr(0, 64) + "', which is not in --tests");
  std::vector<proto::TestSpec> plan;
  for (const auto& key : keys) {
    const auto* spec = find_check(key);
    if (!spec) throw std::invalid_argument("--tests: unknown check '" + key.substr(0, 64) + "' (kiln catalog lists them)");
    if (ingested_check(key))
      throw std::invalid_argument("--tests: " + key + " is not run by kiln-worker (jobs/kiln-user-job.sh and kiln ingest record it)");
    try {
      plan.push_back({key, validate_params(*spec, params.value(key, nlohmann::json::object()))});
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("--params: ") + e.what());
    }
  }
  return plan;
}

// Checks the SLURM request against the cluster before the run directory is written.
// The leaf switches of SLURM's topology and their nodes, for the fleet's uplink comparison; empty
// under topology/none or when scontrol cannot tell (it is evidence, not a requirement).
nlohmann::json leaf_switches(slurm::SlurmClient& client) {
  nlohmann::json out = nlohmann::json::object();
  try {
    for (const auto& sw : client.topology())
      if (sw.is_leaf() && !sw.nodes.empty()) out[sw.name] = sw.nodes;
  } catch (const std::exception& e) {
    spdlog::debug("no topology: {}", e.what());
  }
  return out;
}

std::string plan_slurm(RunConfig& c, coord::CampaignOptions& o, slurm::CommandRunner& runner,
                       std::optional<coord::SlurmPlan>& plan) {
  coord::SlurmJobRequest req;
  req.partition = c.partition;
  req.nodes = c.nodes;
  req.nodelist = c.hosts;
  req.ranks = c.ranks_given ? c.ranks : 0;
  req.ranks_per_node = c.ranks_per_node;
  req.job_template = c.job_template.empty() ? default_job_template() : fs::path(c.job_template);
  try {
    slurm::SlurmClient client(runner);
    plan = coord::SlurmLauncher::validate(client, req);
    o.leaves = leaf_switches(client);
  } catch (const coord::SlurmRequestError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("cannot ask SLURM about the request: ") + e.what();
  }
  for (const auto& w : plan->warnings) spdlog::warn("{}", w);
  o.ranks = plan->ranks();
  o.expected_nodes = plan->nodelist;
  o.allowed_hosts.insert(plan->candidates.begin(), plan->candidates.end());
  if (c.only_allocation) {
    boost::system::error_code ec;
    for (const auto& a : plan->node_addresses) {
      boost::asio::ip::make_address(a, ec);
      if (ec) return "--only-allocation: node address '" + a + "' is not an IP address";
      o.allowed_peers.insert(a);
    }
  }
  o.launcher_args.clear();  // --mpirun-arg is for the local launcher
  o.worker = fs::absolute(o.worker);
  if (o.advertise_host.empty() && (o.listen.host == "0.0.0.0" || o.listen.host == "::"))
    o.advertise_host = coord::reachable_address(plan->node_addresses);
  c.job_template = req.job_template.string();
  return "";
}

// --launcher step: the allocation kiln runs in (SLURM_JOB_ID), its nodes and their addresses, and
// SLURM's topology for the switches.
std::string plan_step(RunConfig& c, coord::CampaignOptions& o, slurm::CommandRunner& runner,
                      std::optional<coord::Allocation>& alloc) {
  try {
    slurm::SlurmClient client(runner);
    alloc = coord::current_allocation(client, c.ranks_per_node);
    o.leaves = leaf_switches(client);
  } catch (const std::exception& e) {
    return std::string("--launcher step: ") + e.what();
  }
  o.ranks = alloc->ranks();
  o.expected_nodes = alloc->nodes;
  o.allowed_hosts.insert(alloc->nodes.begin(), alloc->nodes.end());
  o.launcher_args.clear();
  if (o.advertise_host.empty() && (o.listen.host == "0.0.0.0" || o.listen.host == "::"))
    o.advertise_host = coord::reachable_address(alloc->addresses);
  return "";
}

nlohmann::json localization_section(const coord::LocalizeOptions& lo, const coord::LocalizeOutcome& out) {
  nlohmann::json section = {{"ran", out.ran},     {"by", lo.by},         {"test", lo.test},
                            {"size_bytes", lo.size_bytes}, {"units", out.units}, {"unit_ranks", out.unit_ranks}, {"rounds", out.rounds},
                            {"story", out.story}, {"votes", lo.votes}, {"slow_cutoff", lo.rel_cutoff},
                            {"mode", lo.mode}};
  if (!out.skipped_because.empty()) section["skipped_because"] = out.skipped_because;
  if (out.reference)
    section["reference"] = {{"value", out.reference->value}, {"scope", out.reference->scope}, {"source", out.reference->source}};
  return section;
}


// Reads and validates --spec and --optional before anything is written or launched: each problem
// of the spec is one FILE:LINE:COL line on stderr. Returns 0, or the exit code (2).
int load_expectations(const RunConfig& c, coord::ExpectRequest& req, analysis::Expectations& out) {
  req = {c.spec, "", c.optional, c.partition, c.tests};
  if (!c.spec.empty() && c.spec != "none") {
    std::error_code ec;
    std::ifstream in(c.spec, std::ios::binary);
    if (!in || fs::is_directory(c.spec, ec)) return fail("--spec: cannot read " + c.spec);
    req.spec_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) return fail("--spec: cannot read " + c.spec);
  }
  std::vector<std::string> errors;
  try {
    out = coord::make_expectations(req, errors);
  } catch (const std::invalid_argument& e) {
    return fail(e.what());
  }
  for (const auto& e : errors) std::cerr << e << "\n";
  return errors.empty() ? 0 : 2;
}

}  // namespace

std::string check_run_config(RunConfig& c) {
  if (c.regression_runs < 2 || c.regression_runs > 1000)
    return "--regression-runs must be between 2 and 1000 (got " + std::to_string(c.regression_runs) + ")";
  if (!(c.regression_threshold > 0 && c.regression_threshold < 1))
    return "--regression-threshold must be a fraction between 0 and 1";
  if (!c.nodelist.empty()) {
    try {
      c.hosts = hostlist::expand(c.nodelist);
    } catch (const std::exception& e) {
      return std::string("--nodelist: ") + e.what();
    }
  }
  const bool slurm_nodes = !c.hosts.empty() || !c.partition.empty() || c.nodes_given;
  // auto: SLURM where sbatch is installed or a node set is asked for; --ranks alone asks for
  // ranks on this host.
  if (c.launcher == "auto") {
    const char* job = std::getenv("SLURM_JOB_ID");
    if (job && *job && !slurm_nodes && !c.ranks_given) c.launcher = "step";
    else c.launcher = slurm_nodes || (coord::on_path("sbatch") && !c.ranks_given) ? "slurm" : "local";
  }
  if (c.launcher != "local" && c.launcher != "none" && c.launcher != "slurm" && c.launcher != "step")
    return "unknown launcher '" + c.launcher + "' (want local, slurm, step, none or auto)";
  const bool on_slurm = c.launcher == "slurm" || c.launcher == "step";
  if (c.drain && !on_slurm) return "--drain needs the slurm or step launcher (the nodes are SLURM's to drain)";
  if (c.launcher == "step" && slurm_nodes)
    return "--launcher step runs on the allocation it is in: --nodelist, --partition and --nodes are sbatch's to give";
  if (c.launcher == "step" && !coord::on_path("srun")) return "the step launcher needs srun, which is not on PATH";
  if (c.yes && !c.drain) return "--yes goes with --drain";
  if (c.launcher != "slurm" && slurm_nodes)
    return "--nodelist, --partition and --nodes need the slurm launcher (got --launcher " + c.launcher + ")";
  if (c.launcher == "slurm" && !coord::on_path("sbatch"))
    return "the slurm launcher needs sbatch, which is not on PATH (install SLURM's client commands or use --launcher local)";
  if (c.ranks < 1) return "--ranks must be at least 1 (got " + std::to_string(c.ranks) + ")";
  if (c.ranks_per_node < 0 || c.ranks_per_node > 1024)
    return "--ranks-per-node must be 1-1024 (got " + std::to_string(c.ranks_per_node) + ")";
  if (c.ranks_per_node > 0 && !on_slurm) return "--ranks-per-node needs the slurm or step launcher (use --ranks)";
  if (c.ranks_per_node > 0 && c.ranks_given) return "give --ranks or --ranks-per-node, not both";
  if (c.launcher == "local" && c.ranks > 4096)
    return "--ranks " + std::to_string(c.ranks) + " is more than the local launcher supports (4096)";
  if (c.ranks > 1000000) return "--ranks " + std::to_string(c.ranks) + " is more than one coordinator takes (1000000)";
  // Durations: finite, positive and at most a week, or rounds end at once with nonsense deadlines.
  auto duration = [](const char* name, double v) -> std::string {
    if (!std::isfinite(v) || v <= 0 || v > 7 * 86400.0)
      return std::string(name) + " must be a number of seconds between 0 and 604800";
    return "";
  };
  for (auto [name, v] : {std::pair{"--deadline", c.deadline}, std::pair{"--connect-timeout", c.connect_timeout},
                         std::pair{"--localize-deadline", c.localize.deadline_s}})
    if (auto e = duration(name, v); !e.empty()) return e;
  if (c.localize.by != "auto" && c.localize.by != "node" && c.localize.by != "rank" && c.localize.by != "off")
    return "--localize-by must be node, rank, off or auto (got '" + c.localize.by + "')";
  if (c.localize.mode != "adaptive" && c.localize.mode != "full")
    return "--localize-mode must be adaptive or full (got '" + c.localize.mode + "')";
  if (c.localize.votes < 1 || c.localize.votes > 100) return "--votes must be between 1 and 100";
  if (!(c.localize.rel_cutoff > 0 && c.localize.rel_cutoff < 1)) return "--slow-cutoff must be between 0 and 1";
  if (c.localize.size_bytes < 1) return "--localize-bytes must be positive";
  const auto* lt = find_check(c.localize.test);
  if (!lt) return "--localize-test: unknown check '" + c.localize.test + "' (kiln catalog lists them)";
  if (lt->scope != Scope::Group || !lt->figure)
    return "--localize-test: " + c.localize.test + " is not a group check with a figure of merit";
  return "";
}

void to_json(nlohmann::json& j, const RunConfig& c) {
  const auto& lo = c.localize;
  j = {{"launcher", c.launcher}, {"ranks", c.ranks}, {"ranks_given", c.ranks_given},
       {"listen", c.listen}, {"advertise", c.advertise}, {"worker", c.worker},
       {"tests", c.tests}, {"params", c.params}, {"deadline", c.deadline},
       {"connect_timeout", c.connect_timeout}, {"mpirun_args", c.mpirun_args},
       {"localize", {{"by", lo.by}, {"test", lo.test}, {"size_bytes", lo.size_bytes}, {"deadline_s", lo.deadline_s},
                     {"votes", lo.votes}, {"rel_cutoff", lo.rel_cutoff}, {"mode", lo.mode}}},
       {"nodelist", c.nodelist}, {"partition", c.partition}, {"nodes", c.nodes}, {"nodes_given", c.nodes_given},
       {"ranks_per_node", c.ranks_per_node},
       {"job_template", c.job_template}, {"sbatch_args", c.sbatch_args}, {"only_allocation", c.only_allocation},
       {"prom_textfile", c.prom_textfile},
       {"spec", c.spec}, {"optional", c.optional}, {"history", c.history}, {"no_history", c.no_history},
       {"regression_runs", c.regression_runs}, {"regression_threshold", c.regression_threshold}};
}

void from_json(const nlohmann::json& j, RunConfig& c) {
  const RunConfig d;
  c.launcher = j.value("launcher", d.launcher);
  c.ranks = j.value("ranks", d.ranks);
  c.ranks_given = j.value("ranks_given", false);
  c.ranks_per_node = j.value("ranks_per_node", 0);
  c.listen = j.value("listen", d.listen);
  c.advertise = j.value("advertise", d.advertise);
  c.worker = j.value("worker", d.worker);
  c.tests = j.value("tests", d.tests);
  c.history = j.value("history", d.history);
  c.no_history = j.value("no_history", d.no_history);
  c.regression_runs = j.value("regression_runs", d.regression_runs);
  c.regression_threshold = j.value("regression_threshold", d.regression_threshold);
  c.params = j.value("params", d.params);
  c.deadline = j.value("deadline", d.deadline);
  c.connect_timeout = j.value("connect_timeout", d.connect_timeout);
  c.mpirun_args = j.value("mpirun_args", d.mpirun_args);
  const auto lo = j.value("localize", nlohmann::json::object());
  c.localize.by = lo.value("by", d.localize.by);
  c.localize.test = lo.value("test", d.localize.test);
  c.localize.size_bytes = lo.value("size_bytes", d.localize.size_bytes);
  c.localize.deadline_s = lo.value("deadline_s", d.localize.deadline_s);
  c.localize.votes = lo.value("votes", d.localize.votes);
  c.localize.rel_cutoff = lo.value("rel_cutoff", d.localize.rel_cutoff);
  c.localize.mode = lo.value("mode", d.localize.mode);
  c.nodelist = j.value("nodelist", d.nodelist);
  c.partition = j.value("partition", d.partition);
  c.nodes = j.value("nodes", d.nodes);
  c.nodes_given = j.value("nodes_given", false);
  c.job_template = j.value("job_template", d.job_template);
  c.sbatch_args = j.value("sbatch_args", d.sbatch_args);
  c.only_allocation = j.value("only_allocation", false);
  c.prom_textfile = j.value("prom_textfile", std::string());
  c.spec = j.value("spec", d.spec);
  c.optional = j.value("optional", d.optional);
}

std::string campaign_options(RunConfig& c, coord::CampaignOptions& o, slurm::CommandRunner& runner, LaunchPlan& plan) {
  try {
    o.tests = parse_plan(c);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  o.ranks = c.ranks;
  // --history off (or KILN_HISTORY=off, which sets it): no history, as --no-history.
  if (!c.no_history) o.history = coord::history_path(c.history);
  o.regression = {c.regression_runs, c.regression_threshold};
  o.plan_name = c.tests;
  o.test_deadline_s = c.deadline;
  o.connect_timeout_s = c.connect_timeout;
  o.quiet = c.quiet;
  o.exports.prom_textfile = c.prom_textfile;
  o.launcher_args = c.mpirun_args;
  try {
    const char* default_listen = c.launcher == "slurm" || c.launcher == "step" ? "0.0.0.0:0" : "127.0.0.1:0";
    o.listen = net::parse_endpoint(c.listen.empty() ? default_listen : c.listen, /*allow_zero=*/true);
  } catch (const std::exception& e) {
    return std::string("--listen: ") + e.what();
  }
  o.advertise_host = c.advertise;
  // Absolute, so that kiln resume finds the same binary from anywhere.
  o.worker = fs::absolute(c.worker.empty() ? self_dir() / "kiln-worker" : fs::path(c.worker));
  if (c.launcher != "none" && !fs::exists(o.worker)) return "worker binary " + o.worker.string() + " not found (use --worker)";
  c.worker = o.worker.string();
  if (c.launcher == "slurm")
    if (auto e = plan_slurm(c, o, runner, plan.slurm); !e.empty()) return e;
  if (c.launcher == "step")
    if (auto e = plan_step(c, o, runner, plan.step); !e.empty()) return e;
  // After plan_slurm, which fills o.leaves from SLURM's topology: the planner names switches.
  coord::LocalizeOptions lo = c.localize;
  lo.leaves = coord::leaves_of(o.leaves);
  o.localize = [lo](coord::Campaign& camp) {
    auto out = coord::localize(camp, lo);
    return std::make_pair(out.findings, localization_section(lo, out));
  };
  RunConfig kept = c;
  o.spec = {{"config", kept}};
  return "";
}

int run_campaign(const RunConfig& c, coord::CampaignOptions& o, const LaunchPlan& plan,
                 slurm::CommandRunner& runner) {
  std::unique_ptr<coord::Launcher> launcher;
  if (c.launcher == "local")
    launcher = std::make_unique<coord::LocalLauncher>();
  else if (c.launcher == "slurm")
    launcher = std::make_unique<coord::SlurmLauncher>(*plan.slurm, c.job_template, "kiln-" + o.run_id, c.sbatch_args, runner);
  else if (c.launcher == "step")
    launcher = std::make_unique<coord::StepLauncher>(*plan.step, runner);
  else
    launcher = std::make_unique<coord::ExternalLauncher>();
  std::signal(SIGINT, coord::request_stop);
  std::signal(SIGTERM, coord::request_stop);
  try {
    coord::Campaign campaign(o, *launcher);
    if (c.launcher == "none")
      std::cerr << "kiln: start the workers with KILN_COORDINATOR from " << (o.out / "campaign.json").string()
                << " and KILN_SECRET_FILE=" << fs::absolute(o.out / "secret").string() << std::endl;
    const int rc = campaign.run();
    if (!c.drain || rc == 2) return rc;  // a campaign that could not run has no verdict to drain on
    const int drc = run_drain(o.out, c.yes);
    return drc != 0 ? drc : rc;
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

namespace {

// --profile health: a plan of a few minutes for a periodic check. Returns the error, or "".
std::string apply_profile(RunConfig& c, const po::variables_map& vm) {
  if (c.profile == "burnin") return "";
  if (c.profile != "health") return "--profile must be burnin or health";
  if (vm["tests"].defaulted()) {
    c.tests = "host.inventory,gpu.health,ib.ports,gpu.burn,mpi.all_reduce,nccl.all_reduce";
    if (c.params.empty())
      c.params = R"({"ib.ports": {"window_s": 5}, "gpu.burn": {"duration_s": 10, "warmup_s": 2},)"
                 R"( "mpi.all_reduce": {"max_bytes": 16777216, "bytes_per_size": 67108864},)"
                 R"( "nccl.all_reduce": {"min_bytes": 1048576, "max_bytes": 268435456, "check": true}})";
  }
  if (vm["deadline"].defaulted()) c.deadline = 60;
  if (vm["localize-by"].defaulted()) c.localize.by = "off";
  return "";
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  RunConfig c;
  const auto desc = run_options(c);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    po::store(po::parse_environment(desc, env_option_mapper(desc)), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return fail(std::string(e.what()) + " (see kiln run --help)");
  }
  if (vm.count("help")) {
    std::cout << desc
              << "\nVerdicts and exit codes (docs/operator-guide.md):\n"
                 "  pass        0  every required check ran and nothing was found\n"
                 "  fail        1  a finding of severity error or critical (a figure below the spec, a bad GPU, ...)\n"
                 "  incomplete  1  nothing failed, but a check the spec requires did not run on some node\n"
                 "              (not.tested findings say which and why): the nodes are not shown to be fit\n"
                 "  error       2  the campaign could not run (bad options or spec, launch failure, interrupted)\n";
    return 0;
  }
  if (auto e = apply_profile(c, vm); !e.empty()) return fail(e);
  c.ranks_given = !vm["ranks"].defaulted();
  c.nodes_given = vm.count("nodes") > 0;
  if (auto e = check_run_config(c); !e.empty()) return fail(e);
  coord::ExpectRequest expect_req;
  analysis::Expectations expect;
  if (int rc = load_expectations(c, expect_req, expect); rc != 0) return rc;
  coord::CampaignOptions o;
  slurm::ProcessRunner slurm_runner;
  LaunchPlan slurm_plan;
  if (auto e = campaign_options(c, o, slurm_runner, slurm_plan); !e.empty()) return fail(e);
  o.expect = std::move(expect);
  o.spec["expectations"] = coord::expectations_record(expect_req);
  o.run_id = make_run_id();
  o.out = c.out.empty() ? fs::path("kiln-runs") / o.run_id : fs::path(c.out);
  if (fs::exists(o.out / "results.jsonl") || fs::exists(o.out / "secret"))
    return fail("output directory " + o.out.string() + " already holds a campaign; choose another --out (kiln resume " +
                o.out.string() + " continues it)");
  try {
    coord::create_run_dir(o.out);
    if (o.expect.mode == analysis::ExpectMode::Spec)
      coord::write_file_atomic(o.out / coord::kSpecFile, expect_req.spec_text);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  return run_campaign(c, o, slurm_plan, slurm_runner);
}

}  // namespace kiln::cli
