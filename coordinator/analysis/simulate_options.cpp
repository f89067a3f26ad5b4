// `kiln simulate`: the --model presets and the validation of the options.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <type_traits>

#include "coordinator/analysis/simulate.hpp"
#include "coordinator/analysis/simulate_internal.hpp"

namespace kiln::analysis {

namespace {

// What every model but basic shares: lognormal noise of 5%, 0.5% stragglers, diluted figures.
void live_defaults(SimulateOptions& o) {
  o.noise = 0.05;
  o.stragglers = 0.005;
  o.dilution = true;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& simulate_models() {
  static const std::vector<std::pair<std::string, std::string>> models = {
      {"basic", "the original model: a group is 3x slow if it holds a fault, 3% noise (the default)"},
      {"severity", "diluted, one bad node 2x slow; sweep --slow-factor from 1.1 to 10"},
      {"diluted", "diluted as on the live check: one node and one link 1.25x slow"},
      {"intermittent", "one bad node 3x slow, active in a round with probability 0.5 (--fault-rate)"},
      {"heavy-tail", "one bad node 2x slow among 5% heavy-tailed stragglers (--stragglers)"},
      {"congestion", "no bad node: one leaf's uplink 2x slow in 80% of rounds (truth: the leaf switch)"},
      {"topology", "leaves from --topology-conf (or blocks of N/4, 2..32): one node and one link 2x slow"},
      {"per-rail", "8 rails per node, one NIC 3x slow (truth: its node)"},
      {"many", "4 nodes, 2 links and 2 rails, each from 1.5x to 10x (log-uniform)"},
      {"rate-cap", "one node and one link capped at half a pair test's rate: the link shows in pairs only"}};
  return models;
}

void apply_model(SimulateOptions& o, const std::string& name) {
  const auto& models = simulate_models();
  if (std::none_of(models.begin(), models.end(), [&](const auto& m) { return m.first == name; }))
    throw std::invalid_argument("--model must be one of basic, severity, diluted, intermittent, heavy-tail, "
                                "congestion, topology, per-rail, many, rate-cap (got '" + name + "')");
  o.model = name;
  if (name == "basic") return;
  live_defaults(o);
  o.bad_nodes = 1, o.bad_links = 0;
  if (name == "severity") o.slow_factor = 2.0;
  if (name == "diluted") o.slow_factor = 1.25, o.bad_links = 1;
  if (name == "intermittent") o.slow_factor = 3.0, o.fault_rate = 0.5;
  if (name == "heavy-tail") o.slow_factor = 2.0, o.stragglers = 0.05;
  if (name == "congestion")
    o.bad_nodes = 0, o.leaf_size = -1, o.congestion_rate = 0.8, o.congestion_factor = 2.0;
  if (name == "topology") o.slow_factor = 2.0, o.bad_links = 1, o.leaf_size = -1;
  if (name == "per-rail") o.slow_factor = 3.0, o.bad_nodes = 0, o.rails = 8, o.bad_rails = 1;
  if (name == "many")
    o.slow_factor = 1.5, o.bad_nodes = 4, o.bad_links = 2, o.rails = 8, o.bad_rails = 2, o.severity_spread = true;
  if (name == "rate-cap") o.slow_factor = 2.0, o.bad_links = 1, o.rate_caps = true;
}

int auto_leaf_size(int nodes) { return std::clamp(nodes / 4, 2, 32); }

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument(message);
}

void validate_model(const SimulateOptions& o) {
  require(o.stragglers >= 0.0 && o.stragglers <= 0.5, "--stragglers must be in [0, 0.5]");
  require(o.fault_rate > 0.0 && o.fault_rate <= 1.0, "--fault-rate must be in (0, 1]");
  require(o.congestion_rate >= 0.0 && o.congestion_rate <= 1.0, "--congestion-rate must be in [0, 1]");
  require(o.congestion_factor > 1.0 && o.congestion_factor <= 100.0, "--congestion-factor must be in (1, 100]");
  require(o.slow_factor <= 100.0, "--slow-factor must be at most 100");
  require(o.rails >= 1 && o.rails <= 64, "--rails must be between 1 and 64");
  require(o.a2a_demand > 0.0 && o.a2a_demand <= 1.0, "--a2a-demand must be in (0, 1]");
  const double good = o.nodes - o.bad_nodes;
  require(o.bad_rails >= 0 && o.bad_rails <= good * o.rails / 2,
          "--bad-rails must be between 0 and (nodes - bad nodes) x rails / 2");
  require(o.leaf_size >= -1 && o.leaf_size <= o.nodes, "--leaf-size must be between 0 and --nodes (-1: auto)");
  const bool leaves = !o.topology_conf.empty() || o.leaf_size == -1 || (o.leaf_size > 0 && o.leaf_size < o.nodes);
  require(o.congestion_rate == 0.0 || leaves,
          "--congestion-rate needs at least two leaves (--leaf-size below --nodes, or --topology-conf)");
}

}  // namespace

void validate_options(const SimulateOptions& opt) {
  require(opt.nodes >= 2, "--nodes must be at least 2");
  require(opt.nodes <= 100000, "--nodes must be at most 100000");
  require(opt.bad_nodes >= 0 && opt.bad_nodes <= opt.nodes / 2, "--bad-nodes must be between 0 and nodes/2");
  const double good = opt.nodes - opt.bad_nodes;
  require(opt.bad_links >= 0 && opt.bad_links <= good * (good - 1) / 4,
          "--bad-links is too large for the number of good nodes");
  require(opt.noise >= 0.0 && opt.noise <= 1.0, "--noise must be in [0, 1]");
  require(opt.trials >= 1, "--trials must be at least 1");
  require(opt.mode == "adaptive" || opt.mode == "full", "--mode must be adaptive or full");
  require(opt.mode != "full" || opt.nodes <= 4096, "--mode full materialises every pair; use at most 4096 nodes");
  require(opt.slow_factor > 1.0, "--slow-factor must be above 1");
  require(opt.reference == 0.0 || (opt.reference >= 0.1 && opt.reference <= 10.0),
          "--reference must be 0 (none) or in [0.1, 10]");
  // The planner needs at least one slow observation for a finding; 0 would be silently raised to 1.
  require(opt.votes >= 1 && opt.votes <= 100, "--votes must be between 1 and 100");
  validate_model(opt);
}

namespace {

template <typename T>
T parse_number(const std::string& flag, const std::string& text) {
  std::size_t used = 0;
  T v{};
  try {
    if constexpr (std::is_same_v<T, int>) v = std::stoi(text, &used);
    else if constexpr (std::is_same_v<T, std::uint64_t>) v = std::stoull(text, &used);
    else v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  require(used == text.size() && !text.empty(), "--" + flag + ": not a number: '" + text + "'");
  return v;
}

bool parse_on_off(const std::string& flag, const std::string& text) {
  require(text == "on" || text == "off", "--" + flag + " must be on or off");
  return text == "on";
}

using Setter = std::function<void(SimulateOptions&, const std::string&, const std::string&)>;

template <typename T>
Setter number(T SimulateOptions::*field) {
  return [field](SimulateOptions& o, const std::string& f, const std::string& v) { o.*field = parse_number<T>(f, v); };
}

Setter on_off(bool SimulateOptions::*field) {
  return [field](SimulateOptions& o, const std::string& f, const std::string& v) { o.*field = parse_on_off(f, v); };
}

Setter text(std::string SimulateOptions::*field) {
  return [field](SimulateOptions& o, const std::string&, const std::string& v) { o.*field = v; };
}

const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> table = {
      {"nodes", number(&SimulateOptions::nodes)}, {"bad-nodes", number(&SimulateOptions::bad_nodes)},
      {"bad-links", number(&SimulateOptions::bad_links)}, {"noise", number(&SimulateOptions::noise)},
      {"seed", number(&SimulateOptions::seed)}, {"trials", number(&SimulateOptions::trials)},
      {"mode", text(&SimulateOptions::mode)}, {"slow-factor", number(&SimulateOptions::slow_factor)},
      {"votes", number(&SimulateOptions::votes)}, {"dilution", on_off(&SimulateOptions::dilution)},
      {"per-peer", on_off(&SimulateOptions::per_peer)}, {"stragglers", number(&SimulateOptions::stragglers)},
      {"fault-rate", number(&SimulateOptions::fault_rate)},
      {"severity-spread", on_off(&SimulateOptions::severity_spread)},
      {"leaf-size", number(&SimulateOptions::leaf_size)}, {"topology-conf", text(&SimulateOptions::topology_conf)},
      {"congestion-rate", number(&SimulateOptions::congestion_rate)},
      {"congestion-factor", number(&SimulateOptions::congestion_factor)},
      {"rails", number(&SimulateOptions::rails)}, {"bad-rails", number(&SimulateOptions::bad_rails)},
      {"rail-balance", on_off(&SimulateOptions::rail_balance)},
      {"rate-caps", on_off(&SimulateOptions::rate_caps)}, {"a2a-demand", number(&SimulateOptions::a2a_demand)},
      {"reference", number(&SimulateOptions::reference)}};
  return table;
}

}  // namespace

SimulateOptions parse_simulate_options(const std::vector<std::pair<std::string, std::string>>& given) {
  SimulateOptions o;
  for (const auto& [flag, value] : given)
    if (flag == "model") apply_model(o, value);
  for (const auto& [flag, value] : given) {
    if (flag == "model") continue;
    const auto it = setters().find(flag);
    require(it != setters().end(), "unknown option --" + flag);
    it->second(o, flag, value);
  }
  return o;
}

}  // namespace kiln::analysis
