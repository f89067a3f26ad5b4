#include "coordinator/analysis/simulate_model.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace kiln::analysis {

namespace {

constexpr int kExactEdges = 64;       // a rank with more peers has its sum drawn from the CLT
constexpr double kStragglerCap = 10.0;
constexpr double kStragglerAlpha = 1.5;
constexpr double kStragglerScale = 0.5;

// Mean and second moment of the straggler multiplier, by the midpoint rule over its quantiles.
std::pair<double, double> straggler_moments() {
  constexpr int kSteps = 200000;
  double m1 = 0.0, m2 = 0.0;
  for (int i = 0; i < kSteps; ++i) {
    const double s = straggler_factor((i + 0.5) / kSteps);
    m1 += s, m2 += s * s;
  }
  return {m1 / kSteps, m2 / kSteps};
}

}  // namespace

double straggler_factor(double u) {
  const double lomax = kStragglerScale * (std::pow(u, -1.0 / kStragglerAlpha) - 1.0);
  return std::min(kStragglerCap, 1.0 + lomax);
}

ModelCluster::ModelCluster(const SimulateOptions& opt, std::vector<Switch> leaves, std::mt19937_64& rng)
    : opt_(opt), n_(opt.nodes), leaves_(std::move(leaves)) {
  leaf_of_.assign(static_cast<std::size_t>(n_), -1);
  for (std::size_t l = 0; l < leaves_.size(); ++l)
    for (int u : leaves_[l].nodes) leaf_of_[static_cast<std::size_t>(u)] = static_cast<int>(l);
  nf_.assign(static_cast<std::size_t>(n_), 1.0);
  link_adj_.resize(static_cast<std::size_t>(n_));
  stamp_.assign(static_cast<std::size_t>(n_), 0);
  place_faults(rng);
  // Moments of one draw (lognormal exp(noise z) times the straggler mixture), for the CLT path.
  const double s2 = opt_.noise * opt_.noise;
  const auto [sm1, sm2] = opt_.stragglers > 0.0 ? straggler_moments() : std::pair<double, double>{1.0, 1.0};
  const double p = opt_.stragglers;
  const double m1 = std::exp(s2 / 2) * ((1 - p) + p * sm1);
  const double m2 = std::exp(2 * s2) * ((1 - p) + p * sm2);
  mean_ = m1;
  sd_ = std::sqrt(std::max(0.0, m2 - m1 * m1));
  refresh_factors();
}

void ModelCluster::place_faults(std::mt19937_64& rng) {
  // Same draws, in the same order, as the original model: nodes, then links between good nodes.
  std::uniform_int_distribution<int> pick(0, n_ - 1);
  std::vector<char> bad(static_cast<std::size_t>(n_), 0);
  while (static_cast<int>(nodes_.size()) < opt_.bad_nodes) {
    const int u = pick(rng);
    if (!bad[u]) bad[u] = 1, nodes_.push_back({u, -1, opt_.slow_factor, true});
  }
  std::set<std::pair<int, int>> seen;
  while (static_cast<int>(links_.size()) < opt_.bad_links) {
    int a = pick(rng), b = pick(rng);
    if (a == b || bad[a] || bad[b]) continue;  // a bad node's links cannot be told apart
    if (a > b) std::swap(a, b);
    if (!seen.insert({a, b}).second) continue;
    links_.push_back({a, b, opt_.slow_factor, true});
  }
  std::uniform_int_distribution<int> rail(0, std::max(1, opt_.rails) - 1);
  std::set<std::pair<int, int>> rails_seen;
  while (static_cast<int>(rails_.size()) < opt_.bad_rails) {
    const int u = pick(rng), r = rail(rng);
    if (bad[u] || !rails_seen.insert({u, r}).second) continue;
    rails_.push_back({u, -1, opt_.slow_factor, true});
    rail_index_.push_back(r);
  }
  if (opt_.severity_spread && opt_.slow_factor < 10.0) {
    std::uniform_real_distribution<double> logf(std::log(opt_.slow_factor), std::log(10.0));
    for (auto* list : {&nodes_, &links_, &rails_})
      for (auto& f : *list) f.factor = std::exp(logf(rng));
  }
  if (opt_.congestion_rate > 0.0 && leaves_.size() >= 2) {
    std::uniform_int_distribution<int> leaf(0, static_cast<int>(leaves_.size()) - 1);
    congested_leaf_ = leaf(rng);
  }
}

void ModelCluster::begin_round(std::mt19937_64& rng) {
  // No draws when nothing is intermittent, so the basic model's sequence is unchanged.
  if (opt_.fault_rate < 1.0) {
    std::bernoulli_distribution on(opt_.fault_rate);
    for (auto* list : {&nodes_, &links_, &rails_})
      for (auto& f : *list) f.active = on(rng);
  }
  congested_now_ = congested_leaf_ >= 0 &&
                   (opt_.congestion_rate >= 1.0 || std::bernoulli_distribution(opt_.congestion_rate)(rng));
  refresh_factors();
}

void ModelCluster::refresh_factors() {
  for (const auto* list : {&nodes_, &rails_})
    for (const auto& f : *list) nf_[static_cast<std::size_t>(f.a)] = 1.0;
  for (const auto& f : links_) link_adj_[f.a].clear(), link_adj_[f.b].clear();
  for (const auto& f : nodes_)
    if (f.active) nf_[f.a] = std::max(nf_[f.a], f.factor);
  // Rails: a rail-aligned all-to-all splits each peer's bytes evenly over the K rails. With a
  // static split the rank waits for its slowest rail (the node's factor is that rail's); with
  // balancing the node runs at the sum of its rails' rates: K / (K - m + sum 1/s_i).
  std::vector<std::pair<int, double>> rail_load;  // node, sum over its slow rails of (1 - 1/s)
  for (const auto& f : rails_) {
    if (!f.active) continue;
    if (!opt_.rail_balance) {
      nf_[f.a] = std::max(nf_[f.a], f.factor);
      continue;
    }
    auto it = std::find_if(rail_load.begin(), rail_load.end(), [&](const auto& p) { return p.first == f.a; });
    if (it == rail_load.end()) it = rail_load.insert(rail_load.end(), {f.a, 0.0});
    it->second += 1.0 - 1.0 / f.factor;
  }
  const double k = std::max(1, opt_.rails);
  for (const auto& [u, load] : rail_load) nf_[u] = std::max(nf_[u], k / (k - load));
  for (const auto& f : links_)
    if (f.active) link_adj_[f.a].push_back({f.b, f.factor}), link_adj_[f.b].push_back({f.a, f.factor});
}

bool ModelCluster::crosses(int u, int v) const {
  if (!congested_now_) return false;
  return (leaf_of_[u] == congested_leaf_) != (leaf_of_[v] == congested_leaf_);
}

double ModelCluster::node_eff(int u) const {
  const double f = nf_[static_cast<std::size_t>(u)];
  return f > 1.0 ? std::max(1.0, f * node_scale_) : 1.0;
}

double ModelCluster::link_eff(double lf) const { return std::max(1.0, lf * link_scale_); }

double ModelCluster::edge_factor(int u, int v) const {
  double f = std::max(node_eff(u), node_eff(v));
  for (const auto& [w, lf] : link_adj_[u])
    if (w == v) f = std::max(f, link_eff(lf));
  if (crosses(u, v)) f = std::max(f, opt_.congestion_factor);
  return f;
}

double ModelCluster::draw(std::mt19937_64& rng) {
  double x = std::exp(opt_.noise * z_(rng));
  if (opt_.stragglers > 0.0 && u01_(rng) < opt_.stragglers) x *= straggler_factor(1.0 - u01_(rng));
  return x;
}

double ModelCluster::sum_draws(int count, std::mt19937_64& rng) {
  if (count <= 0) return 0.0;
  if (count <= kExactEdges) {
    double s = 0.0;
    for (int i = 0; i < count; ++i) s += draw(rng);
    return s;
  }
  return std::max(0.0, count * mean_ + std::sqrt(static_cast<double>(count)) * sd_ * z_(rng));
}

GroupOutcome ModelCluster::evaluate(const std::vector<int>& g, std::mt19937_64& rng) {
  GroupOutcome out;
  out.members = g;
  const int size = static_cast<int>(g.size());
  const bool want_edges = opt_.per_peer && static_cast<std::size_t>(size) <= timed_group_size(static_cast<std::size_t>(opt_.nodes));
  // A pair test pushes one flow at the full rate; a rank of a larger all-to-all pushes a2a_demand
  // of it, split over its size-1 peers.
  const bool capped = opt_.rate_caps && size > 2;
  node_scale_ = capped ? opt_.a2a_demand : 1.0;
  link_scale_ = capped ? opt_.a2a_demand / static_cast<double>(size - 1) : 1.0;
  if (!opt_.dilution) {
    out.value = undiluted(g, rng);
    if (want_edges) diluted_exact(g, rng, &out.edges);
  } else if (want_edges || size - 1 <= kExactEdges) {
    out.value = diluted_exact(g, rng, want_edges ? &out.edges : nullptr);
  } else {
    out.value = diluted_clt(g, rng);
  }
  return out;
}

double ModelCluster::undiluted(const std::vector<int>& g, std::mt19937_64& rng) {
  ++epoch_;
  for (int u : g) stamp_[u] = epoch_;
  double f = 1.0;
  int in_leaf = 0;
  for (int u : g) {
    f = std::max(f, node_eff(u));
    for (const auto& [v, lf] : link_adj_[u])
      if (stamp_[v] == epoch_) f = std::max(f, link_eff(lf));
    in_leaf += congested_now_ && leaf_of_[u] == congested_leaf_ ? 1 : 0;
  }
  if (in_leaf > 0 && in_leaf < static_cast<int>(g.size())) f = std::max(f, opt_.congestion_factor);
  return opt_.test_seconds * f * draw(rng);
}

double ModelCluster::diluted_exact(const std::vector<int>& g, std::mt19937_64& rng,
                                   std::vector<EdgeFigure>* edges) {
  const std::size_t size = g.size();
  std::vector<double> rank(size, 0.0);
  for (std::size_t i = 0; i < size; ++i)
    for (std::size_t j = i + 1; j < size; ++j) {
      // One draw per pair: the edge figure stands for the worse of its two directions.
      const double e = opt_.test_seconds * edge_factor(g[i], g[j]) * draw(rng);
      rank[i] += e, rank[j] += e;
      if (edges) edges->push_back({g[i], g[j], e});
    }
  return *std::max_element(rank.begin(), rank.end()) / static_cast<double>(size - 1);
}

double ModelCluster::diluted_clt(const std::vector<int>& g, std::mt19937_64& rng) {
  ++epoch_;
  std::vector<int> bad;  // members slower than healthy: their edges are drawn one by one
  int in_leaf = 0;
  for (int u : g) {
    stamp_[u] = epoch_;
    if (node_eff(u) > 1.0) bad.push_back(u);
    in_leaf += congested_now_ && leaf_of_[u] == congested_leaf_ ? 1 : 0;
  }
  double worst = 0.0;
  for (int u : g) worst = std::max(worst, rank_sum_clt(u, g, bad, in_leaf, rng));
  return opt_.test_seconds * worst / static_cast<double>(g.size() - 1);
}

// Sum over u's peers of edge factor x draw: the peers with a fault of their own (bad nodes, u's
// bad links) exactly, the rest in two classes (across the congested uplink or not) by the CLT.
double ModelCluster::rank_sum_clt(int u, const std::vector<int>& g, const std::vector<int>& bad,
                                  int in_leaf, std::mt19937_64& rng) {
  double sum = 0.0;
  int exact = 0, exact_crossing = 0;
  auto take = [&](int v) {
    sum += edge_factor(u, v) * draw(rng);
    ++exact;
    exact_crossing += crosses(u, v) ? 1 : 0;
  };
  for (int v : bad)
    if (v != u) take(v);
  for (const auto& [v, lf] : link_adj_[u])
    if (stamp_[v] == epoch_ && node_eff(v) <= 1.0) take(v);
  const bool inside = congested_now_ && leaf_of_[u] == congested_leaf_;
  const int size = static_cast<int>(g.size());
  const int crossing = congested_now_ ? (inside ? size - in_leaf : in_leaf) - exact_crossing : 0;
  const int plain = size - 1 - exact - crossing;
  sum += node_eff(u) * sum_draws(plain, rng);
  sum += std::max(node_eff(u), opt_.congestion_factor) * sum_draws(crossing, rng);
  return sum;
}

std::vector<TruthItem> ModelCluster::truth(const std::function<std::string(int)>& name) const {
  std::vector<TruthItem> items;
  std::set<int> seen_nodes;
  for (const auto* list : {&nodes_, &rails_})
    for (const auto& f : *list)
      if (seen_nodes.insert(f.a).second) items.push_back({"node:" + name(f.a), {name(f.a)}});
  for (const auto& f : links_) {
    const std::string id = name(f.a) + "<->" + name(f.b);
    items.push_back({"link:" + id, {id, name(f.a), name(f.b)}});
  }
  if (congested_leaf_ >= 0) {
    const auto& leaf = leaves_[static_cast<std::size_t>(congested_leaf_)].name;
    items.push_back({"switch:" + leaf, {leaf}});
  }
  return items;
}

}  // namespace kiln::analysis
