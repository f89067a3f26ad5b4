#include "coordinator/analysis/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <random>
#include <set>
#include <stdexcept>
#include <unordered_set>

#include "common/findings.hpp"
#include "coordinator/analysis/planner.hpp"

namespace kiln::analysis {

namespace {

struct Cluster {
  int n = 0;
  std::vector<char> bad_node;
  std::vector<std::vector<int>> bad_partners;  // per node: other ends of its bad links
  std::vector<std::pair<int, int>> bad_links;
  std::vector<std::uint32_t> stamp;            // membership marks for group evaluation
  std::uint32_t epoch = 0;

  // Largest slowdown carried by the group: a bad member, or both ends of a bad link.
  bool slow(const std::vector<int>& g) {
    ++epoch;
    for (int u : g) stamp[u] = epoch;
    for (int u : g) {
      if (bad_node[u]) return true;
      for (int v : bad_partners[u])
        if (stamp[v] == epoch) return true;
    }
    return false;
  }
};

Cluster make_cluster(const SimulateOptions& opt, std::mt19937_64& rng) {
  Cluster c;
  c.n = opt.nodes;
  c.bad_node.assign(static_cast<std::size_t>(c.n), 0);
  c.bad_partners.resize(static_cast<std::size_t>(c.n));
  c.stamp.assign(static_cast<std::size_t>(c.n), 0);
  std::uniform_int_distribution<int> pick(0, c.n - 1);
  for (int k = 0; k < opt.bad_nodes;) {
    const int u = pick(rng);
    if (!c.bad_node[u]) c.bad_node[u] = 1, ++k;
  }
  std::set<std::pair<int, int>> seen;
  while (static_cast<int>(c.bad_links.size()) < opt.bad_links) {
    int a = pick(rng), b = pick(rng);
    if (a == b || c.bad_node[a] || c.bad_node[b]) continue;  // a bad node's links cannot be told apart
    if (a > b) std::swap(a, b);
    if (!seen.insert({a, b}).second) continue;
    c.bad_links.emplace_back(a, b);
    c.bad_partners[a].push_back(b);
    c.bad_partners[b].push_back(a);
  }
  return c;
}

void validate(const SimulateOptions& opt) {
  if (opt.nodes < 2) throw std::invalid_argument("--nodes must be at least 2");
  if (opt.bad_nodes < 0 || opt.bad_nodes > opt.nodes / 2)
    throw std::invalid_argument("--bad-nodes must be between 0 and nodes/2");
  const double good = opt.nodes - opt.bad_nodes;
  if (opt.bad_links < 0 || opt.bad_links > good * (good - 1) / 4)
    throw std::invalid_argument("--bad-links is too large for the number of good nodes");
  if (opt.noise < 0.0 || opt.noise > 1.0) throw std::invalid_argument("--noise must be in [0, 1]");
  if (opt.trials < 1) throw std::invalid_argument("--trials must be at least 1");
  if (opt.mode != "adaptive" && opt.mode != "full") throw std::invalid_argument("--mode must be adaptive or full");
  if (opt.mode == "full" && opt.nodes > 4096)
    throw std::invalid_argument("--mode full materialises every pair; use at most 4096 nodes");
  if (!(opt.slow_factor > 1.0)) throw std::invalid_argument("slow factor must be above 1");
  // The planner needs at least one slow observation for a finding; 0 would be silently raised to 1.
  if (opt.votes < 1 || opt.votes > 100) throw std::invalid_argument("--votes must be between 1 and 100");
}

}  // namespace

std::int64_t circle_rounds(int nodes) { return nodes % 2 == 0 ? nodes - 1 : nodes; }

double circle_modelled_seconds(const SimulateOptions& opt) {
  // Every round holds N/2 pairs; with a bad node every round has a slow pair, so every round waits
  // for it. The slowest of N/2 lognormal draws sits about sqrt(2 ln(N/2)) sigmas high.
  const double pairs = std::max(1, opt.nodes / 2);
  const double noise_max = std::exp(opt.noise * std::sqrt(2.0 * std::log(std::max(2.0, pairs))));
  const double slow = opt.bad_nodes > 0 ? opt.slow_factor : 1.0;
  const double rounds = static_cast<double>(circle_rounds(opt.nodes));
  double t = rounds * (opt.test_seconds * slow * noise_max + opt.round_overhead_seconds);
  if (opt.bad_nodes == 0 && opt.bad_links > 0) {
    // Only the rounds that hold a bad link wait for it.
    t += std::min<double>(opt.bad_links, rounds) * opt.test_seconds * (opt.slow_factor - 1.0) * noise_max;
  }
  return t;
}

TrialResult simulate_trial(const SimulateOptions& opt, std::uint64_t seed, bool keep_detail) {
  validate(opt);
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + 12345);
  Cluster cluster = make_cluster(opt, rng);
  std::normal_distribution<double> z(0.0, 1.0);

  PlannerConfig cfg;
  cfg.votes = opt.votes;
  cfg.mode = opt.mode == "full" ? Mode::Full : Mode::Adaptive;
  cfg.seed = seed;
  cfg.outliers.size_invariant = true;
  Planner planner(opt.nodes, cfg);

  TrialResult r;
  r.seed = seed;
  while (auto plan = planner.next()) {
    std::vector<GroupOutcome> outcomes;
    outcomes.reserve(plan->groups.size());
    double slowest = 0.0;
    for (const auto& g : plan->groups) {
      const double factor = cluster.slow(g) ? opt.slow_factor : 1.0;
      const double figure = opt.test_seconds * factor * std::exp(opt.noise * z(rng));
      slowest = std::max(slowest, figure);
      outcomes.push_back({g, figure, false, {}});
    }
    r.modelled_seconds += slowest + opt.round_overhead_seconds;
    planner.observe(*plan, std::move(outcomes));
  }
  r.rounds = planner.rounds();
  r.tests = planner.tests();

  std::set<std::string> truth;
  for (int u = 0; u < cluster.n; ++u)
    if (cluster.bad_node[u]) truth.insert("node:" + planner.node_name(u));
  for (auto [a, b] : cluster.bad_links)
    truth.insert("link:" + planner.node_name(a) + "<->" + planner.node_name(b));
  auto findings = planner.findings();
  // localize.unresolved says "could not decide", not "this is broken": counted apart, not in precision.
  const auto undecided = std::stable_partition(findings.begin(), findings.end(), [](const kiln::Finding& f) {
    return f.code != kiln::Code::LocalizeUnresolved;
  });
  r.unresolved = static_cast<int>(findings.end() - undecided);
  r.truth = static_cast<int>(truth.size());
  r.findings = static_cast<int>(undecided - findings.begin());
  std::int64_t localized = 0;
  for (auto it = findings.begin(); it != undecided; ++it) {
    const auto& f = *it;
    if (truth.count(f.entity.kind + ":" + f.entity.id)) {
      ++r.true_positives;
      localized = std::max<std::int64_t>(localized, f.evidence.value("confirmed_round", r.rounds));
    }
  }
  r.localized_round = r.true_positives == r.truth ? localized : r.rounds;
  if (keep_detail) {
    r.detail["truth"] = truth;
    r.detail["findings"] = findings;
    if (opt.story) r.detail["story"] = planner.story();
  }
  return r;
}

int run_simulate(const SimulateOptions& opt, std::ostream& out) {
  try {
    validate(opt);
  } catch (const std::invalid_argument& e) {
    out << "kiln simulate: " << e.what() << "\n";
    return 2;
  }
  std::int64_t tp = 0, found = 0, truth = 0, rounds_sum = 0, rounds_max = 0, loc_sum = 0,
               loc_max = 0, tests_sum = 0, unresolved = 0;
  double time_sum = 0.0;
  int exact = 0;
  std::vector<TrialResult> trials;
  for (int t = 0; t < opt.trials; ++t) {
    auto r = simulate_trial(opt, opt.seed + static_cast<std::uint64_t>(t), opt.trials == 1);
    tp += r.true_positives, found += r.findings, truth += r.truth, unresolved += r.unresolved;
    rounds_sum += r.rounds, rounds_max = std::max(rounds_max, r.rounds);
    loc_sum += r.localized_round, loc_max = std::max(loc_max, r.localized_round);
    tests_sum += r.tests, time_sum += r.modelled_seconds;
    exact += (r.true_positives == r.truth && r.findings == r.truth) ? 1 : 0;
    if (opt.trials == 1) trials.push_back(std::move(r));
  }
  const double n = opt.trials;
  const double precision = found == 0 ? 1.0 : static_cast<double>(tp) / static_cast<double>(found);
  const double recall = truth == 0 ? 1.0 : static_cast<double>(tp) / static_cast<double>(truth);
  nlohmann::json j = {
      {"nodes", opt.nodes}, {"bad_nodes", opt.bad_nodes}, {"bad_links", opt.bad_links},
      {"noise", opt.noise}, {"seed", opt.seed}, {"trials", opt.trials}, {"mode", opt.mode},
      {"precision", precision}, {"recall", recall}, {"exact_trials", exact},
      {"unresolved", unresolved},
      {"rounds_mean", static_cast<double>(rounds_sum) / n}, {"rounds_max", rounds_max},
      {"localized_round_mean", static_cast<double>(loc_sum) / n}, {"localized_round_max", loc_max},
      {"tests_mean", static_cast<double>(tests_sum) / n},
      {"modelled_seconds_mean", time_sum / n},
      {"circle_rounds", circle_rounds(opt.nodes)},
      {"circle_modelled_seconds", circle_modelled_seconds(opt)}};
  if (opt.trials == 1) j["detail"] = trials.front().detail;
  if (opt.json) {
    out << j.dump(2) << "\n";
    return 0;
  }
  out << std::fixed << std::setprecision(3);
  out << "kiln simulate: " << opt.nodes << " nodes, " << opt.bad_nodes << " bad node(s), "
      << opt.bad_links << " bad link(s), noise " << opt.noise << ", " << opt.trials
      << " trial(s), mode " << opt.mode << "\n"
      << "  precision " << precision << "  recall " << recall << "  (" << exact << "/" << opt.trials
      << " trials exact)\n"
      << std::setprecision(1) << "  rounds mean " << static_cast<double>(rounds_sum) / n << " max "
      << rounds_max << "; faults localized by round " << static_cast<double>(loc_sum) / n
      << " mean, " << loc_max << " max\n"
      << "  tests mean " << static_cast<double>(tests_sum) / n << "; modelled wall time "
      << time_sum / n << " s\n"
      << "  circle method: " << circle_rounds(opt.nodes) << " rounds, "
      << circle_modelled_seconds(opt) << " s\n";
  if (opt.trials == 1) {
    for (const auto& f : trials.front().detail["findings"])
      out << "  finding " << f.value("code", "") << " " << f["entity"].value("id", "") << ": "
          << f.value("summary", "") << "\n";
  }
  return 0;
}

}  // namespace kiln::analysis
