// The model cluster behind `kiln simulate`: where the faults are, which are active in a round, and
// what figure (and per-peer edge figures) a group of nodes produces. docs/localization.md describes
// the model; the short version:
//   edge time e(u,v) = test_seconds x max(nf(u), nf(v), lf(u,v), congestion(u,v)) x noise x straggler
//   diluted group figure = max over ranks u of mean over peers v of e(u,v)   (--dilution on)
//   undiluted (basic) figure = test_seconds x the largest slowdown in the group x noise x straggler
#pragma once

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "coordinator/analysis/planner.hpp"
#include "coordinator/analysis/simulate.hpp"

namespace kiln::analysis {

// One true fault, as the scoring sees it: key "kind:id" of the finding that is a true positive, and
// the entity ids a localize.unresolved (or intermittent) finding may name to account for it.
struct TruthItem {
  std::string key;
  std::vector<std::string> aliases;
};

class ModelCluster {
 public:
  // Places the faults (drawing from rng in the basic model's order, so old seeds reproduce).
  // leaves: the leaf switches (empty when the model has none).
  ModelCluster(const SimulateOptions& opt, std::vector<Switch> leaves, std::mt19937_64& rng);

  // Draws which faults (and whether the congested uplink) are active this round.
  void begin_round(std::mt19937_64& rng);
  // The figure of one group (and its per-peer edges under --per-peer), in seconds per op.
  GroupOutcome evaluate(const std::vector<int>& group, std::mt19937_64& rng);

  std::vector<TruthItem> truth(const std::function<std::string(int)>& name) const;
  const std::vector<Switch>& leaves() const { return leaves_; }
  // Slowdown of node u this round (1 when healthy or inactive); for tests and the docs' figures.
  double node_factor(int u) const { return nf_[static_cast<std::size_t>(u)]; }
  bool congested() const { return congested_now_; }

 private:
  struct Fault {
    int a = -1, b = -1;   // node a; link a-b when b >= 0
    double factor = 1.0;
    bool active = true;
  };

  double edge_factor(int u, int v) const;
  // This group's slowdown of node u and of a link of factor lf: the full factor, or under
  // --rate-caps what the cap leaves of it at the group's rate per rank and per peer.
  double node_eff(int u) const;
  double link_eff(double lf) const;
  double draw(std::mt19937_64& rng);                    // one edge's noise x straggler
  double sum_draws(int count, std::mt19937_64& rng);    // sum of count draws (CLT above 64)
  double undiluted(const std::vector<int>& g, std::mt19937_64& rng);
  double diluted_exact(const std::vector<int>& g, std::mt19937_64& rng, std::vector<EdgeFigure>* edges);
  double diluted_clt(const std::vector<int>& g, std::mt19937_64& rng);
  double rank_sum_clt(int u, const std::vector<int>& g, const std::vector<int>& bad, int in_leaf,
                      std::mt19937_64& rng);
  bool crosses(int u, int v) const;
  void place_faults(std::mt19937_64& rng);
  void refresh_factors();

  SimulateOptions opt_;
  int n_ = 0;
  std::vector<Fault> nodes_, links_, rails_;
  std::vector<int> rail_index_;               // rail of each rail fault (for distinctness)
  std::vector<Switch> leaves_;
  std::vector<int> leaf_of_;                  // leaf index per node, -1 without leaves
  int congested_leaf_ = -1;
  bool congested_now_ = false;
  std::vector<double> nf_;                     // this round's node factors
  std::vector<std::vector<std::pair<int, double>>> link_adj_;  // this round's active links
  std::vector<std::uint32_t> stamp_;
  std::uint32_t epoch_ = 0;
  double mean_ = 1.0, sd_ = 0.0;               // of one draw, for the CLT
  double node_scale_ = 1.0, link_scale_ = 1.0; // the group being evaluated: its rate per rank and per
                                               // peer as shares of a pair test's (1 without rate caps)
  std::normal_distribution<double> z_{0.0, 1.0};
  std::uniform_real_distribution<double> u01_{0.0, 1.0};
};

// The straggler multiplier for a uniform draw u in (0, 1): 1 + Lomax(alpha 1.5, scale 0.5), capped at 10.
double straggler_factor(double u);

}  // namespace kiln::analysis
