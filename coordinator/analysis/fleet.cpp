#include "coordinator/analysis/fleet.hpp"

#include <algorithm>
#include <cmath>
#include <set>

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
  if (r.entity.kind != "gpu" && r.entity.kind != "node" && r.entity.kind != "link") return;
  if (!std::isfinite(r.value)) return;
  const auto* spec = find_check(r.test);
  const FigureSpec* figure = spec ? spec->figure_for(r.metric) : nullptr;
  if (!figure) return;
  if (r.entity.kind == "link") return add_link(r, *figure);
  auto& f = figures_[Key{r.test, r.metric, r.size_bytes.value_or(-1), r.entity.kind}];
  f.unit = figure->unit;
  f.higher_is_better = figure->higher_is_better;
  auto& a = f.by_entity[r.entity.id];
  a.sum += r.value;
  ++a.n;
  a.host = r.host;
}

// A link between two hosts ("a<->b"); links inside one host ("a/rank0<->a/rank1") are not about the
// network between nodes and are left out.
void Fleet::add_link(const Result& r, const FigureSpec& figure) {
  const auto sep = r.entity.id.find("<->");
  if (sep == std::string::npos || r.entity.id.find('/') != std::string::npos) return;
  if (r.entity.id.compare(0, sep, r.entity.id, sep + 3) == 0) return;
  auto& f = links_[Key{r.test, r.metric, r.size_bytes.value_or(-1), "link"}];
  f.unit = figure.unit;
  f.higher_is_better = figure.higher_is_better;
  // Each direction apart: a link's figure is its worse direction (a fault may shape only one).
  std::string dir;
  if (auto it = r.extra.find("direction"); r.extra.is_object() && it != r.extra.end() && it->is_string())
    dir = it->get<std::string>();
  auto& a = f.by_entity[r.entity.id + "|" + dir];
  a.sum += r.value;
  ++a.n;
}

namespace {

// Link figures are compared on a log scale: bandwidth noise and faults are multiplicative, and a
// link 50x slow must stand out however widely healthy links swing.
double log_of(double v) { return std::log(std::max(v, 1e-12)); }

// The robust spread (1.4826 MAD) of the log figures of the links that `host` is not an end of; all
// links when the host's are under 5% of them (leaving them out would change nothing, and costs a
// pass per host).
double spread_without(const std::vector<std::pair<std::string, double>>& links, const std::string& host,
                      std::size_t own) {
  std::vector<double> v;
  v.reserve(links.size());
  const bool leave_out = own * 20 > links.size();
  for (const auto& [id, x] : links) {
    if (leave_out) {
      const auto sep = id.find("<->");
      if (id.compare(0, sep, host) == 0 || id.compare(sep + 3, std::string::npos, host) == 0) continue;
    }
    v.push_back(log_of(x));
  }
  return v.empty() ? 0.0 : 1.4826 * stats::mad(v);
}

// Which single links are far worse than the others (as a figure's outlier rule, on links). A node
// with a minority of such links has them set aside: they are link faults or slow partners, and
// with them a median of 3 is the lower of 2 healthy links. A node with a majority keeps them all:
// that is what a slow node looks like.
struct LinkCut {
  double log_median = 0, log_sigma = 0, rel_cutoff = 0, z_cutoff = 0;
  bool higher_is_better = true;
  bool bad(double v) const {
    const double worse = higher_is_better ? log_median - log_of(v) : log_of(v) - log_median;
    return worse >= std::log(1 / (1 - rel_cutoff)) && worse >= z_cutoff * log_sigma;
  }
  std::vector<double> keep_minority(const std::vector<double>& values) const {
    std::vector<double> good;
    for (double v : values)
      if (!bad(v)) good.push_back(v);
    return good.size() * 2 > values.size() && good.size() < values.size() ? good : values;
  }
};

LinkCut link_cut(const std::vector<std::pair<std::string, double>>& links, bool higher_is_better,
                 const FleetConfig& cfg) {
  std::vector<double> v;
  for (const auto& [id, x] : links) v.push_back(log_of(x));
  LinkCut c;
  c.log_median = stats::median(v);
  c.log_sigma = std::max(1.4826 * stats::mad(v), std::log1p(cfg.min_rel_sigma));
  c.rel_cutoff = cfg.rel_cutoff;
  c.z_cutoff = cfg.z_cutoff;
  c.higher_is_better = higher_is_better;
  return c;
}

}  // namespace

// Each host's figure from its links: the median of the means of the links it is an end of, judged
// against the spread of single links.
std::map<Fleet::Key, Fleet::Figure> Fleet::node_figures_from_links(const FleetConfig& cfg) const {
  std::map<Key, Figure> out;
  for (const auto& [key, fig] : links_) {
    const auto worst = worst_directions(fig);  // link -> its worse direction's mean
    std::map<std::string, std::vector<double>> by_host;
    std::vector<std::pair<std::string, double>> links;
    for (const auto& [id, v] : worst) {
      const auto sep = id.find("<->");
      links.emplace_back(id, v);
      by_host[id.substr(0, sep)].push_back(v);
      by_host[id.substr(sep + 3)].push_back(v);
    }
    Key k = key;
    k.kind = "node";
    auto& f = out[k];
    f.unit = fig.unit;
    f.higher_is_better = fig.higher_is_better;
    f.how = "the median of its links";
    const LinkCut cut = link_cut(links, fig.higher_is_better, cfg);
    for (auto& [host, values] : by_host) {
      if (values.size() < 3) continue;  // one slow peer would decide a median of two
      const double spread = spread_without(links, host, values.size());
      if (spread > 0) f.by_entity[host] = Acc{stats::median(cut.keep_minority(values)), 1, host, spread};
    }
  }
  return out;
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

void Fleet::add_versions(const std::string& host, const nlohmann::json& extra) {
  if (!extra.is_object()) return;
  auto& s = settings_[host];
  for (const auto& [name, v] : extra.items()) {
    if (v.is_string()) put(s, "stack " + name, v.get<std::string>());
    if (!v.is_object() || v.empty()) continue;
    std::set<std::string> distinct;
    for (const auto& [device, x] : v.items())
      if (x.is_string()) distinct.insert(x.get<std::string>());
    std::string joined;
    for (const auto& x : distinct) joined += (joined.empty() ? "" : ", ") + x;
    put(s, "stack " + name, joined);
  }
}

void Fleet::add_record(const Result& r) {
  if (r.test == "host.inventory" && r.metric == "inventory")
    add_inventory(r.host, r.extra);
  else if (r.test == "stack.versions" && r.metric == "versions")
    add_versions(r.host, r.extra);
  else
    add(r);
}

void Fleet::merge(const Fleet& other) {
  for (const auto& [key, fig] : other.links_) {
    auto& mine = links_[key];
    mine.unit = fig.unit;
    mine.higher_is_better = fig.higher_is_better;
    for (const auto& [id, a] : fig.by_entity) {
      mine.by_entity[id].sum += a.sum;
      mine.by_entity[id].n += a.n;
    }
  }
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
  auto up = uplink_findings(cfg);
  // A node behind a slow uplink is slow with its partners in other leaves: the uplink explains
  // its median link, so it is not a finding of its own.
  std::set<std::string> explained;
  for (const auto& f : up) {
    const auto sep = f.entity.id.find("<->");
    for (const auto& leaf : {f.entity.id.substr(0, sep), sep == std::string::npos ? "" : f.entity.id.substr(sep + 3)})
      if (auto it = leaves_.find(leaf); it != leaves_.end()) explained.insert(it->second.begin(), it->second.end());
  }
  auto out = figure_findings(cfg, explained);
  auto more = setting_findings(cfg);
  out.insert(out.end(), more.begin(), more.end());
  out.insert(out.end(), up.begin(), up.end());
  return out;
}

// How far an entity's figure is from the fleet median m, in robust standard deviations: against the
// entities' MAD, or for a node's link median on a log scale against the spread of single links.
double Fleet::robust_z(const Figure& fig, const Acc& a, double m, double mad, const FleetConfig& cfg) {
  const double v = a.sum / a.n;
  if (a.sigma > 0) {
    const double worse = fig.higher_is_better ? log_of(m) - log_of(v) : log_of(v) - log_of(m);
    return worse / std::max(a.sigma, std::log1p(cfg.min_rel_sigma));
  }
  const double worse = fig.higher_is_better ? m - v : v - m;
  return worse / std::max(1.4826 * mad, cfg.min_rel_sigma * m);
}

// One finding per entity and check: its worst figure against the fleet.
std::vector<Finding> Fleet::figure_findings(const FleetConfig& cfg, const std::set<std::string>& explained) const {
  struct Worst {
    double deficit = 0;
    Finding f;
  };
  std::map<std::pair<std::string, std::string>, Worst> worst;  // (check, entity id)
  auto all = node_figures_from_links(cfg);
  for (const auto& [key, fig] : figures_) all.emplace(key, fig);  // a check's own per-node figure wins
  for (const auto& [key, fig] : all) {
    const int at_least = fig.how.empty() ? cfg.min_entities : cfg.min_link_nodes;
    if (static_cast<int>(fig.by_entity.size()) < at_least) continue;
    std::vector<double> means;
    for (const auto& [id, a] : fig.by_entity) means.push_back(a.sum / a.n);
    const double m = stats::median(means);
    if (!(m > 0)) continue;
    const double mad = stats::mad(means);
    for (const auto& [id, a] : fig.by_entity) {
      if (!fig.how.empty() && explained.count(id)) continue;  // its links' median is the uplink's
      const double v = a.sum / a.n;
      const double worse = fig.higher_is_better ? m - v : v - m;  // > 0: worse than the fleet
      const double deficit = worse / m, z = robust_z(fig, a, m, mad, cfg);
      if (deficit < cfg.rel_cutoff || z < cfg.z_cutoff) continue;
      auto& w = worst[{key.check, id}];
      if (deficit <= w.deficit) continue;
      const std::string at = (key.size >= 0 ? " at " + std::to_string(key.size) + " B" : "") +
                             (fig.how.empty() ? "" : " (" + fig.how + ")");
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

namespace {

// One link class: the figures of the links in it, and their logs.
struct LinkClass {
  std::vector<double> logs;
  std::vector<double> values;
  double log_median() const { return stats::median(logs); }
};

// The links inside leaves, and those between each pair of leaves (ordered names).
struct LeafLinks {
  LinkClass inside;
  std::map<std::pair<std::string, std::string>, LinkClass> between;
};

LeafLinks classify(const std::map<std::string, double>& links, const std::map<std::string, std::string>& leaf_of) {
  LeafLinks out;
  for (const auto& [id, v] : links) {
    const auto sep = id.find("<->");
    const auto a = leaf_of.find(id.substr(0, sep)), b = leaf_of.find(id.substr(sep + 3));
    if (a == leaf_of.end() || b == leaf_of.end()) continue;
    auto& c = a->second == b->second ? out.inside : out.between[std::minmax(a->second, b->second)];
    c.logs.push_back(log_of(v));
    c.values.push_back(v);
  }
  return out;
}

// Three or more leaves: the leaves whose every crossing is slow while some crossing between
// other leaves is not, with their crossing links.
std::vector<std::pair<std::string, LinkClass>> slow_uplinks(
    const std::map<std::string, std::vector<std::string>>& leaves, const LeafLinks& ll,
    const std::map<std::pair<std::string, std::string>, bool>& slow) {
  std::vector<std::pair<std::string, LinkClass>> out;
  for (const auto& [leaf, hosts] : leaves) {
    int with = 0, slow_with = 0, others_fast = 0;
    LinkClass mine;
    for (const auto& [pair, is_slow] : slow) {
      if (pair.first != leaf && pair.second != leaf) {
        others_fast += is_slow ? 0 : 1;
        continue;
      }
      ++with, slow_with += is_slow;
      const auto& c = ll.between.at(pair);
      mine.values.insert(mine.values.end(), c.values.begin(), c.values.end());
    }
    if (with > 0 && slow_with == with && others_fast > 0) out.emplace_back(leaf, std::move(mine));
  }
  return out;
}

}  // namespace

// Each link's worse direction.
std::map<std::string, double> Fleet::worst_directions(const Figure& fig) {
  std::map<std::string, double> worst;
  for (const auto& [id_dir, a] : fig.by_entity) {
    const std::string id = id_dir.substr(0, id_dir.rfind('|'));
    const double v = a.sum / a.n;
    auto [it, fresh] = worst.emplace(id, v);
    if (!fresh) it->second = fig.higher_is_better ? std::min(it->second, v) : std::max(it->second, v);
  }
  return worst;
}

// The links crossing out of each leaf against the links inside leaves (see the header).
std::vector<Finding> Fleet::uplink_findings(const FleetConfig& cfg) const {
  std::vector<Finding> out;
  if (leaves_.size() < 2) return out;
  std::map<std::string, std::string> leaf_of;
  for (const auto& [leaf, hosts] : leaves_)
    for (const auto& h : hosts) leaf_of[h] = leaf;
  for (const auto& [key, fig] : links_) {
    const LeafLinks ll = classify(worst_directions(fig), leaf_of);
    if (ll.inside.logs.size() < 3 || ll.between.empty()) continue;
    const double base = ll.inside.log_median();
    const double sigma = std::max(1.4826 * stats::mad(ll.inside.logs), std::log1p(cfg.min_rel_sigma));
    std::map<std::pair<std::string, std::string>, bool> slow;
    for (const auto& [pair, c] : ll.between) {
      if (c.logs.size() < 2) continue;
      const double worse = fig.higher_is_better ? base - c.log_median() : c.log_median() - base;
      slow[pair] = worse >= std::log(1 / (1 - cfg.rel_cutoff)) && worse >= cfg.z_cutoff * sigma;
    }
    auto finding = [&](const std::string& id, const std::string& what, const LinkClass& c) {
      const double v = stats::median(c.values), m = std::exp(base);
      out.push_back(make_finding(
          Code::SwitchSlow, {"switch", id},
          key.check + " " + key.metric + ": " + what + " run at " + short_number(v) + " " + fig.unit + " (median of " +
              std::to_string(c.values.size()) + " links), " +
              std::to_string(static_cast<int>(std::lround(100 * std::abs(1 - v / m)))) +
              "% worse than links inside a leaf (" + short_number(m) + " " + fig.unit + ")",
          nlohmann::json::array({{{"check", key.check}, {"metric", key.metric}, {"crossing_median", v},
                                  {"crossing_links", c.values.size()}, {"inside_median", m},
                                  {"inside_links", ll.inside.values.size()}}}),
          0.8));
    };
    if (leaves_.size() == 2) {
      for (const auto& [pair, is_slow] : slow)
        if (is_slow)
          finding(pair.first + "<->" + pair.second,
                  "links between " + pair.first + " and " + pair.second + " (through their uplinks and the spine)",
                  ll.between.at(pair));
      continue;
    }
    for (const auto& [leaf, c] : slow_uplinks(leaves_, ll, slow)) finding(leaf, "links leaving leaf " + leaf + " (its uplink)", c);
  }
  return out;
}

}  // namespace kiln::analysis
