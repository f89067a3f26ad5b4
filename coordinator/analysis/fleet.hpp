// The fleet compared: every node (and GPU) of the campaign measured against all the others, not
// only against the GPUs of its own node. A node whose GPUs are all slow (a power cap, a wrong
// clock, a throttled PCIe switch) looks healthy inside the node and stands out in the fleet.
//
// Figures: for every per-GPU and per-node figure (the figure of merit each check declares, at each
// message size), each entity's mean is compared with the median of all entities of that kind. An
// entity is an outlier when it is worse than the fleet median by at least rel_cutoff AND its robust
// z (MAD-based, floored at min_rel_sigma of the median) reaches z_cutoff, so neither a wide but
// harmless spread nor a tiny but tight difference makes a finding. Heavy tails in the others do
// not move a median.
//
// Links: a pair check's figure is about a link between two nodes, in its worse direction (a fault
// may shape one direction only; averaging both would halve it). Each node's figure is then the
// median of its links (net.pair_bw meets every node with several partners), compared like a
// per-node figure: a slow node is slow with every partner, while a healthy node with one slow
// partner keeps a healthy median. Its robust z is taken on a log scale (bandwidth noise and faults
// are multiplicative) against the spread of single links: node
// medians of 3 links are tight, and a node whose median is the lower of two healthy links (its
// third partner is slow) must not stand out from them. That spread leaves out the node's own links
// when they are a sizeable part of all links (a small fleet), so a slow node does not widen it.
//
// Uplinks: with the leaf switches known (SLURM's topology), the links that cross between leaves
// are compared with the links inside leaves. Every node of a leaf behind a slow uplink is slow
// with its partners in other leaves only, so its median link may look like everyone's; the links
// through the uplink stand out instead. Two leaves: the uplink path between them (either uplink,
// or the spine) is one switch.slow finding; three or more: the leaf whose crossing links are slow
// while links between the other leaves are not.
//
// Settings: software versions and node properties (driver, CUDA, NCCL, MPI, kernel, CPU model,
// GPU model and count, memory) are compared across nodes; a node whose value differs from what a
// clear majority of nodes have is an odd one out.
//
// Pure: fed results and node facts, returns findings. Bounded memory: one running sum per entity
// and figure, one map of settings per node.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/checks.hpp"
#include "common/types.hpp"

namespace kiln::analysis {

struct FleetConfig {
  double rel_cutoff = 0.10;     // at least 10% worse than the fleet median
  double z_cutoff = 4.0;        // and a robust z of at least 4
  double min_rel_sigma = 0.02;  // floor on the spread: 2% of the median
  int min_entities = 4;         // fewer entities of a kind: no fleet to compare with
  int min_link_nodes = 6;       // nodes judged by their links: fewer, and single links decide too much
  double majority = 0.6;        // settings: the common value must be held by at least 60% of nodes
  int min_nodes = 3;
};

class Fleet {
 public:
  // A result of a plan round. Kept (as a running mean per entity) when it is a numeric per-GPU or
  // per-node figure of merit; anything else is ignored.
  void add(const Result& r);
  // What a node reported of itself: its hello (NodeInfo) and host.inventory's inventory record.
  void add_node(const NodeInfo& info);
  void add_inventory(const std::string& host, const nlohmann::json& extra);
  // stack.versions' record: each version a setting ("stack driver"); a per-device one (hca_fw,
  // vbios) as the node's distinct values, so one odd device makes its node differ.
  void add_versions(const std::string& host, const nlohmann::json& extra);
  // A plan round's result: host.inventory's or stack.versions' record, or a figure.
  void add_record(const Result& r);
  void merge(const Fleet& other);

  std::vector<Finding> findings(const FleetConfig& cfg = {}) const;
  // Leaf switches and the hosts under each (empty: no topology, no uplink comparison).
  void set_leaves(std::map<std::string, std::vector<std::string>> leaves) { leaves_ = std::move(leaves); }
  std::size_t figures() const { return figures_.size(); }

 private:
  struct Key {
    std::string check, metric;
    std::int64_t size = -1;
    std::string kind;
    auto operator<=>(const Key&) const = default;
  };
  struct Acc {
    double sum = 0;
    int n = 0;
    std::string host;
    double sigma = 0;  // > 0: the log-scale spread to judge this entity against (a node's links: see above)
  };
  struct Figure {
    std::string unit;
    bool higher_is_better = true;
    std::map<std::string, Acc> by_entity;
    std::string how;  // how an entity's figure is made, when not its own mean (links: the median)
  };
  void add_link(const Result& r, const FigureSpec& figure);
  static std::map<std::string, double> worst_directions(const Figure& fig);
  std::map<Key, Figure> node_figures_from_links(const FleetConfig& cfg) const;
  static double robust_z(const Figure& fig, const Acc& a, double m, double mad, const FleetConfig& cfg);
  // Link-derived node figures of `explained` hosts (behind a slow uplink) are not judged.
  std::vector<Finding> figure_findings(const FleetConfig& cfg, const std::set<std::string>& explained) const;
  std::vector<Finding> setting_findings(const FleetConfig& cfg) const;
  std::vector<Finding> uplink_findings(const FleetConfig& cfg) const;

  std::map<Key, Figure> figures_;
  std::map<Key, Figure> links_;  // per link between two hosts and direction, "a<->b|direction"
  std::map<std::string, std::vector<std::string>> leaves_;
  std::map<std::string, std::map<std::string, std::string>> settings_;  // host -> name -> value
};

}  // namespace kiln::analysis
