// kiln-worker: started on every node by mpirun or sbatch. Connects to the coordinator, proves it
// knows the campaign secret, then runs the rounds it is sent and streams every result back.
#include <algorithm>
#include <boost/program_options.hpp>

#include <cmath>
#include <cstdio>
#include <tuple>
#include <thread>
#include <optional>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>

#include "common/auth.hpp"
#include "common/env_options.hpp"
#include "common/net.hpp"
#include "worker/health/run.hpp"
#include "worker/link.hpp"
#include "worker/progress.hpp"
#include "worker/relay.hpp"
#include "worker/node_info.hpp"
#include "worker/runner.hpp"

namespace po = boost::program_options;
using namespace kiln;
using namespace kiln::worker;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  std::string coordinator;
  std::string secret_file;
  double connect_timeout = 60;
  bool standalone = false;
  bool list_tests = false;
  std::string tests = "host.inventory,mpi.all_reduce";
  std::string params;
  double deadline = 120;
  double watchdog = 10;
  double telemetry_interval = 1;
  std::string node_relay = "on";
  bool health_check = false;
  health::Options health;
};

// A worker whose coordinator is gone (connection closed, or silent past the bound: it sends a
// heartbeat every few seconds) leaves at once, even in the middle of a check, instead of running a
// long burn for nobody. Exit 3; under mpirun that ends the other ranks too.
class Watchdog {
 public:
  Watchdog(const Link& link, double bound_s, int rank) : link_(link), bound_s_(bound_s), rank_(rank) {
    thread_ = std::thread([this] { loop(); });
  }
  ~Watchdog() {
    stop_ = true;
    thread_.join();
  }

 private:
  void loop() {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (stop_) return;
      const bool closed = link_.closed();
      if (!closed && link_.silent_s() <= bound_s_) continue;
      std::fprintf(stderr, "kiln-worker[%d]: error: %s; leaving\n", rank_,
                   closed ? ("lost the coordinator: " + link_.close_reason()).c_str()
                          : ("the coordinator has been silent for " + std::to_string(static_cast<int>(bound_s_)) +
                             " s").c_str());
      std::fflush(stderr);
      std::_Exit(3);
    }
  }
  const Link& link_;
  double bound_s_;
  int rank_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};


// Exits this rank with a one-line reason. Under mpirun a non-zero exit ends the whole job,
// which is what we want when a rank cannot take part.
[[noreturn]] void die(int rank, const std::string& msg, int code = 2) {
  std::fprintf(stderr, "kiln-worker[%d]: error: %s\n", rank, msg.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

int run_standalone(const Config& c, const NodeInfo& node, const Faults& faults) {
  nlohmann::json params = nlohmann::json::object();
  if (!c.params.empty()) {
    params = nlohmann::json::parse(c.params, nullptr, false);
    if (params.is_discarded() || !params.is_object()) die(node.world_rank, "--params is not a JSON object");
  }
  proto::Round round;
  round.id = 1;
  round.deadline_s = c.deadline;
  std::vector<int> all(static_cast<std::size_t>(node.world_size));
  for (int i = 0; i < node.world_size; ++i) all[static_cast<std::size_t>(i)] = i;
  round.groups = {all};
  std::vector<std::string> keys;
  std::size_t start = 0;
  while (start <= c.tests.size()) {
    auto comma = c.tests.find(',', start);
    auto key = c.tests.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!key.empty()) keys.push_back(key);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  // {"key": {...}} when a top-level name is one of the tests; otherwise one object for all.
  const bool per_test = std::any_of(keys.begin(), keys.end(), [&](const auto& k) { return params.contains(k); });
  for (const auto& key : keys)
    round.tests.push_back({key, per_test ? params.value(key, nlohmann::json::object()) : params});
  int worst = 0;
  Runner runner(node, faults, [&](const Record& r) {
    const std::string line = nlohmann::json(r).dump() + "\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
    const Status s = std::visit([](const auto& v) { return v.status; }, r);
    if (s == Status::Fail || s == Status::Error || s == Status::Timeout) worst = 1;
  });
  runner.telemetry(c.telemetry_interval);
  runner.run_round(round);
  return worst;
}

struct Coordinator {
  net::Endpoint ep;
  std::string secret;
};

Coordinator coordinator_of(const Config& c, int rank) {
  if (c.coordinator.empty()) die(rank, "no coordinator address: set KILN_COORDINATOR or --coordinator (or use --standalone)");
  if (c.secret_file.empty()) die(rank, "no secret file: set KILN_SECRET_FILE or --secret-file");
  try {
    return {net::parse_endpoint(c.coordinator), auth::read_secret_file(c.secret_file)};
  } catch (const std::exception& e) {
    die(rank, e.what());
  }
}

// The node's ranks, as the relay needs them: set up once at start-up, the only MPI it takes
// (MPI is used from the main thread only, never during rounds).
struct NodeRelay {
  std::string name;        // the agent's socket; empty: every rank connects on its own
  int listen_fd = -1;      // the agent's
  std::vector<int> ranks;  // the node's world ranks in local-rank order (the agent's)
};

NodeRelay node_relay(const Config& c, const NodeInfo& node) {
  NodeRelay out;
  if (c.node_relay != "on" || node.local_size < 2) return out;
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, node.world_rank, MPI_INFO_NULL, &local);
  char name[relay::kMaxNameSize + 1] = {};
  if (node.local_rank == 0) {
    try {
      out.listen_fd = relay::listen_socket(out.name);
      std::snprintf(name, sizeof name, "%s", out.name.c_str());
    } catch (const std::exception& e) {  // then every rank connects on its own
      std::fprintf(stderr, "kiln-worker[%d]: warning: no node relay: %s\n", node.world_rank, e.what());
    }
    out.ranks.resize(static_cast<std::size_t>(node.local_size));
  }
  MPI_Bcast(name, sizeof name, MPI_CHAR, 0, local);
  MPI_Gather(&node.world_rank, 1, MPI_INT, out.ranks.data(), 1, MPI_INT, 0, local);
  MPI_Comm_free(&local);
  out.name = name;
  return out;
}

std::unique_ptr<Link> open_link(const Config& c, const NodeInfo& node, const Progress& progress) {
  const int rank = node.world_rank;
  const auto relay = node_relay(c, node);
  const auto timeout = std::chrono::milliseconds(static_cast<long long>(c.connect_timeout * 1000));
  ProgressSource mine = [&progress] { return std::vector<proto::RankProgress>{progress.snapshot()}; };
  try {
    if (relay.name.empty()) {
      const auto [ep, secret] = coordinator_of(c, rank);
      auto link = std::make_unique<CoordinatorLink>(ep, secret, LinkIdentity{rank, node.world_size, node.host, node});
      link->connect(timeout);
      link->progress_source(mine);
      link->start();
      return link;
    }
    if (node.local_rank != 0) {
      auto link = std::make_unique<RelayClient>();
      // The agent first waits for the node's ranks, then connects: up to a connect timeout each.
      link->connect(relay.name, {rank, node}, Clock::now() + 2 * timeout + std::chrono::seconds(30));
      link->progress_source(mine);
      link->start();
      return link;
    }
    const auto [ep, secret] = coordinator_of(c, rank);
    auto agent = std::make_unique<NodeAgent>(
        relay.listen_fd, AgentSetup{ep, secret, LinkIdentity{rank, node.world_size, node.host, node}, relay.ranks, c.connect_timeout});
    agent->connect();
    agent->start(mine);
    return agent;
  } catch (const std::exception& e) {
    die(rank, e.what());
  }
}

// After a restart that lost a node, the new step's MPI ranks are not the campaign's: the coordinator
// named each rank in its welcome (by host and local rank). Every rank learns every rank's name, so
// that the groups the coordinator sends (in campaign ranks) map to MPI ranks. Collective.
std::vector<int> campaign_names(int mine) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<int> all(static_cast<std::size_t>(size));
  MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
  return all;
}

int run_connected(const Config& c, NodeInfo node, const Faults& faults) {
  Progress progress;  // outlives the link, whose I/O thread reads it
  progress.rank(node.world_rank);
  auto owned = open_link(c, node, progress);
  Link& link = *owned;
  const int mpi_rank = node.world_rank;
  const auto names = campaign_names(link.campaign_rank() >= 0 ? link.campaign_rank() : mpi_rank);
  node.world_rank = names[static_cast<std::size_t>(mpi_rank)];  // what the coordinator calls us
  progress.rank(node.world_rank);
  const int rank = node.world_rank;
  // Off while the campaign is ending normally: the watchdog is destroyed before the link closes.
  std::optional<Watchdog> watchdog;
  if (c.watchdog > 0) watchdog.emplace(link, c.watchdog, rank);
  Runner runner(node, faults, [&](const Record& r) { link.send_record(r); }, &progress);
  runner.mpi_ranks(names);
  runner.telemetry(c.telemetry_interval);
  const bool debug = std::getenv("KILN_DEBUG") != nullptr;
  bool restart = false;  // the coordinator will launch the workers again
  for (;;) {
    auto cmd = link.next_command(Clock::now() + std::chrono::seconds(1));
    if (!cmd) {
      if (link.closed()) die(rank, "lost the coordinator: " + link.close_reason(), 3);
      continue;
    }
    proto::MsgType t;
    try {
      t = proto::type_of(*cmd);
    } catch (const std::exception& e) {
      die(rank, std::string("bad command from the coordinator: ") + e.what());
    }
    if (t == proto::MsgType::Bye) {
      restart = cmd->value("restart", false) == true;
      break;
    }
    if (t == proto::MsgType::Error) die(rank, "the coordinator ended the campaign: " + cmd->value("message", std::string("?")));
    if (t != proto::MsgType::Round) continue;
    proto::Round round;
    try {
      round = proto::unwrap<proto::Round>(*cmd);
    } catch (const std::exception& e) {
      link.send(proto::wrap(proto::Error{"bad_round", e.what()}));
      continue;
    }
    if (debug) std::fprintf(stderr, "kiln-worker[%d]: round %lld received\n", rank, static_cast<long long>(round.id));
    runner.run_round(round);
    link.send(proto::wrap(proto::Done{round.id, rank, link.last_seq()}));
    if (debug) std::fprintf(stderr, "kiln-worker[%d]: round %lld done\n", rank, static_cast<long long>(round.id));
  }
  // Nothing lost: leave only once every result is on the coordinator's disk.
  if (!link.wait_acked(Clock::now() + std::chrono::seconds(30)))
    std::fprintf(stderr, "kiln-worker[%d]: warning: not every result was acknowledged before exit\n", rank);
  watchdog.reset();
  link.send(proto::wrap(proto::Bye{"done"}));
  link.close();  // a node agent's: once the node's other ranks have finished too
  if (restart) {
    // No MPI_Finalize: with a request abandoned it may hang or crash. Every rank leaves alike.
    std::fflush(nullptr);
    std::_Exit(proto::kRestartExitCode);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  po::options_description desc(
      "usage: kiln-worker [options]\n\nThe kiln worker: started by `kiln run` (through mpirun or sbatch) on every node.\n"
      "It reads KILN_COORDINATOR and KILN_SECRET_FILE from the environment. With --standalone it\n"
      "runs tests without a coordinator and prints one JSON result per line. With --health-check it\n"
      "checks this node alone, for slurm.conf's HealthCheckProgram (docs/operator-guide.md).\n\noptions");
  desc.add_options()
      ("help,h", "show this help")
      ("coordinator", po::value(&c.coordinator), "HOST:PORT of the coordinator (env KILN_COORDINATOR)")
      ("secret-file", po::value(&c.secret_file), "campaign secret file (env KILN_SECRET_FILE)")
      ("connect-timeout", po::value(&c.connect_timeout)->default_value(c.connect_timeout), "seconds to keep trying to connect")
      ("standalone", po::bool_switch(&c.standalone), "run --tests without a coordinator, results as JSON lines on stdout")
      ("tests", po::value(&c.tests)->default_value(c.tests), "tests for --standalone (comma-separated keys)")
      ("params", po::value(&c.params), "JSON parameters for --standalone: {\"key\": {...}} or one object for all")
      ("deadline", po::value(&c.deadline)->default_value(c.deadline), "seconds per test for --standalone")
      ("watchdog", po::value(&c.watchdog)->default_value(c.watchdog),
       "leave (exit 3) when the coordinator's connection is closed or silent for this many seconds, even "
       "mid-check; 0 turns it off")
      ("telemetry-interval", po::value(&c.telemetry_interval)->default_value(c.telemetry_interval),
       "seconds between the node's telemetry readings during every check (CPU, memory, IB ports, and per GPU "
       "power, clocks, temperature, throttle reasons, ECC, PCIe and NVLink throughput; docs/telemetry.md); "
       "read by the node's lowest local rank, streamed as results of the running check with metric "
       "\"telemetry\"; 0 turns it off")
      ("node-relay", po::value(&c.node_relay)->default_value(c.node_relay),
       "on: one connection per node; the node's local rank 0 connects for all of the node's ranks and "
       "relays for the others over a unix-domain socket (env KILN_NODE_RELAY); off: one connection per rank")
      ("list-tests", po::bool_switch(&c.list_tests), "list the tests this build knows and exit")
      ("health-check", po::bool_switch(&c.health_check),
       "check this node alone in under a minute, for slurm.conf's HealthCheckProgram (no coordinator, no "
       "mpirun: NVML health, a short verified GEMM on every GPU, NCCL inside the node, IB ports); one line per "
       "part, then `kiln-health: OK|FAIL CODE: REASON`; exit 0 healthy, 1 a fault found, 2 the check could not run")
      ("drain-on-fail", po::bool_switch(&c.health.drain_on_fail),
       "--health-check: on a fault (exit 1), drain this node (SLURMD_NODENAME, else the short host name) with "
       "reason \"kiln-health CODE: REASON\"")
      ("resume-on-pass", po::bool_switch(&c.health.resume_on_pass),
       "--health-check: on a pass, resume this node if it is drained with a kiln-health reason (only then)")
      ("json", po::bool_switch(&c.health.json), "--health-check: print one JSON object instead of lines")
      ("spec", po::value(&c.health.spec), "--health-check: spec file (docs/spec.md) giving the node's GPU count and "
       "model and HCA rate")
      ("budget", po::value(&c.health.budget_s)->default_value(c.health.budget_s),
       "--health-check: seconds for all parts together (past it by 10 s the check gives up: exit 2)");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::store(po::parse_environment(desc, env_option_mapper(desc)), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "kiln-worker: error: %s (see kiln-worker --help)\n", e.what());
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (c.list_tests) {
    std::cout << describe_checks(Registry::instance().keys());
    return 0;
  }
  for (auto [name, v, zero_ok] : {std::tuple{"--connect-timeout", c.connect_timeout, false},
                                  std::tuple{"--deadline", c.deadline, false}, std::tuple{"--watchdog", c.watchdog, true},
                                  std::tuple{"--telemetry-interval", c.telemetry_interval, true},
                                  std::tuple{"--budget", c.health.budget_s, false}})
    if (!std::isfinite(v) || v < 0 || (v == 0 && !zero_ok) || v > 7 * 86400.0) {
      std::fprintf(stderr, "kiln-worker: error: %s must be a number of seconds up to 604800\n", name);
      return 2;
    }
  if (c.telemetry_interval > 0 && c.telemetry_interval < 0.1) {
    std::fprintf(stderr, "kiln-worker: error: --telemetry-interval must be 0 (off) or at least 0.1 s\n");
    return 2;
  }
  if (c.node_relay != "on" && c.node_relay != "off") {
    std::fprintf(stderr, "kiln-worker: error: --node-relay must be on or off\n");
    return 2;
  }
  // Without mpirun (--health-check under slurmd, --standalone by hand) this is a singleton MPI
  // process of one rank: Open MPI 4.1 starts one without a launcher or any environment.
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "kiln-worker: error: MPI_Init failed\n");
    return 2;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const NodeInfo node = gather_node_info();
  Faults faults;
  try {
    faults = faults_from_env();
  } catch (const std::exception& e) {
    die(node.world_rank, e.what());
  }
  const int rc = c.health_check ? health::run_health_check(c.health, node, faults)
                 : c.standalone ? run_standalone(c, node, faults)
                                : run_connected(c, node, faults);
  MPI_Finalize();
  return rc;
}
