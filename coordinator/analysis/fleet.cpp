#include "coordinator/analysis/fleet.hpp"

#include <algorithm>
#include <cmath>

#include "common/checks.hpp"
#include "common/findings.hpp"
#include "common/stats.hpp"
#include "common/text.hpp"

namespace kiln::analysis {

namespace {

// The settings a node's hello tells, by name. Empty values are kept as "(none)": a node without
// NCCL among nodes with it is a difference.
void put(std::map<std::string, std::string>& m, const std::string& name, const std::string& value) {
  m[name] = value.empty() ? "(none)" : value;
}

}  // namespace

void Fleet::add(const Result& r) {
  if (r.status != Status::Pass && r.status != Status::Fail) return;
  if (r.entity.kind != "gpu" && r.entity.kind != "node") return;
  if (!std::isfinite(r.value)) return;
  const auto* spec = find_check(r.test);
  if (!spec || !spec->figure || r.metric != spec->figure->metric) return;
  auto& f = figures_[Key{r.test, r.metric, r.size_bytes.value_or(-1), r.entity.kind}];
  f.unit = spec->figure->unit;
  f.higher_is_better = spec->figure->higher_is_better;
  auto& a = f.by_entity[r.entity.id];
  a.sum += r.value;
  ++a.n;
  a.host = r.host;
}

void Fleet::add_node(const NodeInfo& n) {
  auto& s = settings_[n.host];
  put(s, "CUDA driver", n.cuda_driver);
  put(s, "CUDA runtime", n.cuda_runtime);
  put(s, "NCCL", n.nccl_version);
  put(s, "MPI", n.mpi_version);
  std::string models;
  for (const auto& m : n.gpu_models) models += (models.empty() ? "" : ", ") + m;
  put(s, "GPU model", models);
  put(s, "GPUs", std::to_string(n.gpu_count));
}

void Fleet::add_inventory(const std::string& host, const nlohmann::json& extra) {
  if (!extra.is_object()) return;
  auto& s = settings_[host];
  for (const char* key : {"kernel", "cpu_model", "arch", "rdma_core"})
    if (auto it = extra.find(key); it != extra.end() && it->is_string()) put(s, key, it->get<std::string>());
  // null: the node has no rdma-core, which differs from a node that has it.
  if (auto it = extra.find("rdma_core"); it != extra.end() && it->is_null()) put(s, "rdma_core", "");
  for (const char* key : {"cpus", "cpus_usable"})
    if (auto it = extra.find(key); it != extra.end() && it->is_number()) put(s, key, it->dump());
  if (auto it = extra.find("memory_gib"); it != extra.end() && it->is_number())
    put(s, "memory GiB", std::to_string(static_cast<long long>(std::lround(it->get<double>()))));
}

void Fleet::add_record(const Result& r) {
  if (r.test == "host.inventory" && r.metric == "inventory")
    add_inventory(r.host, r.extra);
  else
    add(r);
}

void Fleet::merge(const Fleet& other) {
  for (const auto& [key, fig] : other.figures_) {
    auto& mine = figures_[key];
    mine.unit = fig.unit;
    mine.higher_is_better = fig.higher_is_better;
    for (const auto& [id, a] : fig.by_entity) {
      auto& m = mine.by_entity[id];
      m.sum += a.sum;
      m.n += a.n;
      m.host = a.host;
    }
  }
  for (const auto& [host, s] : other.settings_)
    for (const auto& [name, value] : s) settings_[host][name] = value;
}

std::vector<Finding> Fleet::findings(const FleetConfig& cfg) const {
  auto out = figure_findings(cfg);
  auto more = setting_findings(cfg);
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

// One finding per entity and check: its worst figure against the fleet.
std::vector<Finding> Fleet::figure_findings(const FleetConfig& cfg) const {
  struct Worst {
    double deficit = 0;
    Finding f;
  };
  std::map<std::pair<std::string, std::string>, Worst> worst;  // (check, entity id)
  for (const auto& [key, fig] : figures_) {
    if (static_cast<int>(fig.by_entity.size()) < cfg.min_entities) continue;
    std::vector<double> means;
    for (const auto& [id, a] : fig.by_entity) means.push_back(a.sum / a.n);
    const double m = stats::median(means);
    if (!(m > 0)) continue;
    const double mad = stats::mad(means);
    const double sigma = std::max(1.4826 * mad, cfg.min_rel_sigma * m);
    for (const auto& [id, a] : fig.by_entity) {
      const double v = a.sum / a.n;
      const double worse = fig.higher_is_better ? m - v : v - m;  // > 0: worse than the fleet
      const double deficit = worse / m, z = worse / sigma;
      if (deficit < cfg.rel_cutoff || z < cfg.z_cutoff) continue;
      auto& w = worst[{key.check, id}];
      if (deficit <= w.deficit) continue;
      const std::string at = key.size >= 0 ? " at " + std::to_string(key.size) + " B" : "";
      w.deficit = deficit;
      w.f = make_finding(Code::FleetOutlier, {key.kind, id},
                         key.check + " " + key.metric + at + " on " + key.kind + " " + id + " is " + short_number(v) + " " +
                             fig.unit + ", " + std::to_string(static_cast<int>(std::lround(deficit * 100))) +
                             "% worse than the fleet median of " + short_number(m) + " " + fig.unit + " (" +
                             std::to_string(means.size()) + " " + key.kind + "s)",
                         nlohmann::json::array({{{"check", key.check},
                                                 {"metric", key.metric},
                                                 {"size_bytes", key.size},
                                                 {"host", a.host},
                                                 {"value", v},
                                                 {"fleet_median", m},
                                                 {"fleet_mad", mad},
                                                 {"fleet_min", *std::min_element(means.begin(), means.end())},
                                                 {"fleet_max", *std::max_element(means.begin(), means.end())},
                                                 {"fleet_size", means.size()},
                                                 {"robust_z", z}}}));
    }
  }
  std::vector<Finding> out;
  for (auto& [k, w] : worst) out.push_back(std::move(w.f));
  return out;
}

// A node whose setting differs from what a clear majority of nodes have.
std::vector<Finding> Fleet::setting_findings(const FleetConfig& cfg) const {
  std::vector<Finding> out;
  if (static_cast<int>(settings_.size()) < cfg.min_nodes) return out;
  std::map<std::string, std::map<std::string, int>> counts;  // name -> value -> nodes
  for (const auto& [host, s] : settings_)
    for (const auto& [name, value] : s) ++counts[name][value];
  for (const auto& [name, values] : counts) {
    if (values.size() < 2) continue;
    const auto common = std::max_element(values.begin(), values.end(),
                                         [](const auto& a, const auto& b) { return a.second < b.second; });
    int holders = 0;
    for (const auto& [v, n] : values) holders += n;
    if (common->second < cfg.majority * holders) continue;  // no clear majority: nobody is odd
    for (const auto& [host, s] : settings_) {
      const auto it = s.find(name);
      if (it == s.end() || it->second == common->first) continue;
      out.push_back(make_finding(Code::FleetSetting, {"node", host},
                                 name + " on " + host + " is '" + it->second + "' where " +
                                     std::to_string(common->second) + " of " + std::to_string(holders) +
                                     " nodes have '" + common->first + "'",
                                 nlohmann::json::array({{{"setting", name},
                                                         {"value", it->second},
                                                         {"fleet_value", common->first},
                                                         {"fleet_count", common->second},
                                                         {"nodes", holders}}})));
    }
  }
  return out;
}

}  // namespace kiln::analysis
