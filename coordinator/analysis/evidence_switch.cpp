// Switch verdicts: slowness shared by a leaf is its switch's (or uplink's), not its nodes'. A leaf
// whose members are slow with partners across its uplink, each repeatedly, while
// the pairs inside the leaf are fast, is one switch.slow finding; its nodes leave the search and get
// no node or link finding. With two leaves the evidence cannot say whose uplink it is, so the finding
// names the path, "leafA<->leafB". docs/localization.md, the planner, item 5.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "common/findings.hpp"
#include "coordinator/analysis/planner_impl.hpp"

namespace kiln::analysis {

namespace {

struct LeafStats {
  int present = 0;       // members not lost and not known bad
  int qualifying = 0;    // members with >= votes slow pair tests across the uplink
  int cross = 0, cross_slow = 0;
  int inside = 0, inside_slow = 0;
  std::set<int> slow_into;   // other leaves that slow crossing pairs lead into
  std::vector<double> cross_slowness;
  double rate() const { return cross > 0 ? static_cast<double>(cross_slow) / cross : 0.0; }
};

// Leaf index of every node (-1: under no listed switch).
std::vector<int> leaf_index(const Planner::Impl& s) {
  std::vector<int> leaf(static_cast<std::size_t>(s.n), -1);
  for (std::size_t i = 0; i < s.topology.size(); ++i)
    for (int u : s.topology[i].nodes)
      if (u >= 0 && u < s.n && leaf[u] < 0) leaf[u] = static_cast<int>(i);
  return leaf;
}

// A member counts however it was judged so far (a congested leaf's nodes look slow); a partner
// across the uplink only when it is not itself a slow node.
bool usable(const Planner::Impl& s, int u) { return !s.nodes[u].lost && s.nodes[u].slow_switch < 0; }

// Pair tests touching leaf i, leaving out pairs with an end under a leaf already found slow.
LeafStats leaf_stats(const Planner::Impl& s, const std::vector<int>& leaf, int i,
                     const std::vector<char>& declared) {
  LeafStats st;
  std::map<int, int> slow_across;  // member -> slow pair tests across the uplink
  for (const auto& t : s.pair_tests) {
    if (!usable(s, t.a) || !usable(s, t.b)) continue;
    const int la = leaf[t.a], lb = leaf[t.b];
    if (la < 0 || lb < 0 || (la != i && lb != i)) continue;
    if (declared[la] || declared[lb]) continue;
    if (la == lb) {
      ++st.inside, st.inside_slow += t.slow ? 1 : 0;
      continue;
    }
    ++st.cross;
    if (!t.slow) continue;
    ++st.cross_slow;
    st.cross_slowness.push_back(t.slowness);
    const int in = la == i ? t.a : t.b, out = la == i ? t.b : t.a;
    if (!s.nodes[out].bad) ++slow_across[in], st.slow_into.insert(leaf[out]);
  }
  for (int u : s.topology[static_cast<std::size_t>(i)].nodes)
    if (u >= 0 && u < s.n && usable(s, u)) ++st.present;
  for (const auto& [u, k] : slow_across)
    if (k >= s.cfg.votes) ++st.qualifying;
  return st;
}

// Slow across the uplink: at least two members (and half of those present) slow repeatedly with
// partners across it (a retested link candidate counts: a congested uplink makes links look slow),
// crossing pairs slow often and into more than one other leaf (slow pairs that all lead into one
// leaf are that leaf's; with two leaves there is no telling), and pairs inside mostly fast.
bool uplink_slow(const LeafStats& st, std::size_t leaves) {
  return st.present >= 2 && st.qualifying >= std::max(2, (st.present + 1) / 2) && st.rate() >= 0.3 &&
         st.inside_slow * 4 <= st.inside && (leaves == 2 || st.slow_into.size() >= 2);
}

// A leaf a group's edges showed slow across once (leaf_shaped_round): its pair tests are the second,
// independent look, and two members slow repeatedly across it with most crossing pairs slow do. A
// congested leaf of 16 at 64 nodes was seen in round 2; the pair retests of its 4 members that
// followed stayed slow for 18 rounds, short of half the leaf, until an all-to-all showed it again.
// The edges already showed it slow into two leaves or more and fast inside, so the pair tests need
// not: the pair retests of a congested leaf of 25 at 100 nodes all led into one other leaf, for 20
// rounds, and of its 2 pair tests inside, one had read a straggler (one slow is allowed up to 4).
bool uplink_slow_again(const LeafStats& st) {
  return st.present >= 2 && st.qualifying >= 2 && st.rate() >= 0.5 && st.inside_slow * 4 <= std::max(st.inside, 4);
}

// The upper median (the larger middle value of an even count; 0 for none). The switch rules were
// tuned with it; stats::median averages the two middle values.
double upper_median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

nlohmann::json switch_evidence(int inside, int inside_slow, int cross, int cross_slow, double slowness) {
  return {{"inside", {{"pair_tests", inside}, {"slow", inside_slow}}},
          {"crossing", {{"pair_tests", cross}, {"slow", cross_slow},
                        {"median_slowness", std::isfinite(slowness) ? nlohmann::json(slowness) : "timeout"}}}};
}

SwitchVerdict uplink_verdict(const std::vector<Switch>& topo, std::vector<int> leaves, std::int64_t round,
                             nlohmann::json ev) {
  SwitchVerdict v;
  std::sort(leaves.begin(), leaves.end());
  for (int l : leaves) v.id += (v.id.empty() ? "" : "<->") + topo[static_cast<std::size_t>(l)].name;
  v.leaves = std::move(leaves);
  v.round = round;
  v.evidence = std::move(ev);
  return v;
}

std::vector<char> Planner::Impl::declared_leaves() const {
  std::vector<char> declared(topology.size(), 0);
  for (const auto& v : slow_switches)
    for (int l : v.leaves) declared[static_cast<std::size_t>(l)] = 1;
  return declared;
}

// After each round: declare the leaves whose crossing traffic is slow, worst first; a leaf whose
// slow crossings all lead into a declared leaf is explained by it.
void Planner::Impl::evaluate_switches(std::int64_t round) {
  if (topology.size() < 2) return;
  const auto leaf = leaf_index(*this);
  auto declared = declared_leaves();
  for (;;) {
    int best = -1;
    LeafStats best_st;
    for (int i = 0; i < static_cast<int>(topology.size()); ++i) {
      if (declared[i]) continue;
      auto st = leaf_stats(*this, leaf, i, declared);
      const bool seen = leaf_shaped_round.count(i) > 0;
      if ((uplink_slow(st, topology.size()) || (seen && uplink_slow_again(st))) &&
          (best < 0 || st.rate() > best_st.rate()))
        best = i, best_st = std::move(st);
    }
    if (best < 0) return;
    std::vector<int> leaves = {best};
    if (topology.size() == 2) leaves.push_back(1 - best);  // two leaves: whose uplink is unknowable
    declare_uplink(leaves, round, switch_evidence(best_st.inside, best_st.inside_slow, best_st.cross,
                                                  best_st.cross_slow, upper_median(best_st.cross_slowness)));
    for (int l : leaves) declared[l] = 1;
  }
}

// The leaves' nodes leave the search: no node, link or unresolved finding is made for them.
void Planner::Impl::declare_uplink(const std::vector<int>& leaves, std::int64_t round, nlohmann::json ev) {
  slow_switches.push_back(uplink_verdict(topology, leaves, round, std::move(ev)));
  const int idx = static_cast<int>(slow_switches.size()) - 1;
  std::vector<std::string> members;
  for (int l : leaves)
    for (int u : topology[static_cast<std::size_t>(l)].nodes)
      if (u >= 0 && u < n && !nodes[u].lost) {
        nodes[u].slow_switch = idx, nodes[u].bad = false;
        members.push_back(name(u));
      }
  slow_switches.back().evidence["nodes"] = members;
  note(slow_switches.back().id + ": slow across the uplink, fast inside: slow switch, its nodes leave the search");
}

namespace {

// A group's edges seen from each leaf: inside it and across its uplink, judged against the median
// edge inside any leaf (an uplink, congested or not, carries none of those).
struct LeafEdges {
  std::vector<double> crossing;
  std::set<int> slow_into;  // leaves that slow crossing edges lead into
  int inside = 0, inside_slow = 0, crossing_slow = 0;
  std::map<int, std::pair<int, int>> member_crossing;  // member -> slow, all crossing edges

  // Members slow with at least half of their peers across the uplink, and members with any such peer.
  std::pair<int, int> members_slow() const {
    int slow = 0;
    for (const auto& [u, c] : member_crossing) slow += 2 * c.first >= c.second ? 1 : 0;
    return {slow, static_cast<int>(member_crossing.size())};
  }
};

// An edge this much slower than the median edge inside the leaves is slow.
constexpr double kLeafEdgeSlow = 1.25;
// ... and this many spreads of an edge (inside the leaves, leaf_edges), where that is wider: at
// 20% noise one edge in 8 reads 1.25x, and half a small leaf's crossing edges in one group read so
// often enough that 2-3 healthy leaves were declared in 1 campaign of 3 at 9-11 nodes.
constexpr double kLeafEdgeZ = 1.5;
// Edges inside the leaves that a group must hold for its leaves to be judged from its edges.
constexpr std::size_t kLeafBaseEdges = 3;
// ... and for their spread to be taken from them (below it, kLeafEdgeSlow alone).
constexpr std::size_t kLeafSpreadEdges = 8;
// Groups of at most this many edges take a spread per leaf when too few edges are inside leaves.
constexpr std::size_t kLeafSpreadMaxEdges = 2048;

// The level (upper median) of log figures and their spread (1.4826 x the upper median of the
// deviations from it), in upper medians as the switch rules were tuned (stats::mad_sigma averages
// the two middle values).
std::pair<double, double> log_level_spread(std::vector<double> logs) {
  const double mid = upper_median(logs);
  for (double& x : logs) x = std::fabs(x - mid);
  return {mid, 1.4826 * upper_median(std::move(logs))};
}

// skip: leaves whose uplink is already known slow; a crossing edge into one of them is explained
// by it and says nothing about the other end's leaf.
std::vector<LeafEdges> leaf_edges(const GroupOutcome& o, const std::vector<int>& leaf, std::size_t leaves,
                                  Direction dir, const std::vector<char>& skip, double& base) {
  std::vector<double> inside;
  for (const auto& f : o.edges)
    if (leaf[f.a] >= 0 && leaf[f.a] == leaf[f.b]) inside.push_back(to_cost(f.value, dir));
  std::vector<LeafEdges> out(leaves);
  base = upper_median(inside);
  // The level a healthy edge reads rests on the edges inside the leaves: one or two of them are
  // no level (a retest group of 8 with two members of each of a few leaves of 4, 20% noise: the one
  // fast inside edge made 8 of 12 crossing edges of healthy nodes read slow, 3 campaigns of 100).
  if (inside.size() < kLeafBaseEdges) return out;
  // The spread of an edge, from the edges inside the leaves alone: no uplink, congested or not,
  // carries them. The pooled edge spread (edge_sigma) holds crossing edges, and at 8 nodes in
  // leaves of 2 a congested uplink's 12 of 28 widened it until its 2x edges read within it.
  double sigma = 0.0;
  if (inside.size() >= kLeafSpreadEdges) {
    std::vector<double> logs;
    for (double c : inside) logs.push_back(std::log(c));
    sigma = log_level_spread(std::move(logs)).second;
  }
  std::vector<double> cut(leaves, base * std::max(kLeafEdgeSlow, std::exp(kLeafEdgeZ * sigma)));
  // Too few inside edges for a spread (small leaves): each leaf's level and spread from the edges
  // that do not touch it, which its own uplink, congested or not, does not carry. Healthy 8, 9 and
  // 11 nodes in leaves of 2 at 20% noise, 1,000 campaigns each: 15, 6 and 20 false switch findings
  // at 1.25x the inside edges' level (4 or 5 edges).
  if (inside.size() < kLeafSpreadEdges && o.edges.size() <= kLeafSpreadMaxEdges) {
    std::set<int> present;
    for (const auto& f : o.edges)
      for (int u : {f.a, f.b})
        if (leaf[u] >= 0) present.insert(leaf[u]);
    for (int l : present) {
      std::vector<double> logs;
      for (const auto& f : o.edges)
        if (leaf[f.a] != l && leaf[f.b] != l) logs.push_back(std::log(to_cost(f.value, dir)));
      if (logs.size() < kLeafSpreadEdges) continue;
      const auto [mid, sl] = log_level_spread(std::move(logs));
      cut[static_cast<std::size_t>(l)] = std::exp(mid) * std::max(kLeafEdgeSlow, std::exp(kLeafEdgeZ * sl));
    }
  }
  for (const auto& f : o.edges) {
    const double c = to_cost(f.value, dir);
    const int la = leaf[f.a], lb = leaf[f.b];
    if (la >= 0 && la == lb) {
      ++out[la].inside, out[la].inside_slow += c >= cut[static_cast<std::size_t>(la)] ? 1 : 0;
      continue;
    }
    for (auto [l, other, member] : {std::tuple{la, lb, f.a}, std::tuple{lb, la, f.b}}) {
      if (l < 0 || (other >= 0 && skip[static_cast<std::size_t>(other)])) continue;
      const bool slow = c >= cut[static_cast<std::size_t>(l)];
      auto& e = out[static_cast<std::size_t>(l)];
      e.crossing.push_back(c);
      auto& m = e.member_crossing[member];
      ++m.second;
      if (slow) ++e.crossing_slow, ++m.first, e.slow_into.insert(other);
    }
  }
  return out;
}

// Slow across the uplink in this group: crossing edges mostly slow, into more than one other leaf
// (with two leaves there is no telling), edges inside mostly fast, and every member in the group
// slow with at least half of its peers across. Without the last, healthy clusters in leaves of 4 at 20%
// noise declared a leaf in 4-6 campaigns of 100 at 24-100 nodes, with it in 2-3 (before a leaf
// needed a second sighting and three inside edges). Mostly slow across is more than half of the
// crossing edges (a member's share may be half): a healthy leaf of 2
// at 8 nodes, 20% noise, read exactly 6 of its 12 crossing edges slow (3 of 6 for each member) in
// two all-to-alls, with its one inside edge fast, and was declared (seed 592, 1 campaign of 1,000).
bool leaf_shaped(const LeafEdges& e, std::size_t leaves) {
  const auto [slow_members, members] = e.members_slow();
  return e.inside > 0 && e.crossing_slow * 2 > static_cast<int>(e.crossing.size()) &&
         e.inside_slow * 4 <= e.inside && (leaves == 2 || e.slow_into.size() >= 2) && slow_members >= 2 &&
         slow_members == members;
}

}  // namespace

// A group whose edges were timed: a leaf whose members are slow with their peers across the uplink
// and fast with each other is the leaf's switch, not its nodes. The leaf is declared at once and
// its members' rows and slow edges are taken out of the reading, so they get no node or link
// suspicion. Returns whether a leaf explained anything.
bool Planner::Impl::explain_leaf_rows(const GroupOutcome& o, EdgeReading& r, std::int64_t round) {
  if (topology.size() < 2) return false;
  const auto leaf = leaf_index(*this);
  auto skip = declared_leaves();
  std::vector<int> found;
  // One leaf at a time, the most slow across first: with three or more leaves in the group, the
  // leaves beside a congested one read slow into it, and a straggler into a third would make them
  // look congested too. Once a leaf is declared, edges into it no longer count for the others.
  for (;;) {
    double base = 0.0;
    const auto edges = leaf_edges(o, leaf, topology.size(), cfg.outliers.direction, skip, base);
    int l = -1;
    double worst = -1.0;
    for (int k = 0; k < static_cast<int>(topology.size()); ++k) {
      const auto& e = edges[static_cast<std::size_t>(k)];
      if (skip[k] || !leaf_shaped(e, topology.size())) continue;
      const double frac = static_cast<double>(e.crossing_slow) / static_cast<double>(e.crossing.size());
      if (frac > worst) worst = frac, l = k;
    }
    if (l < 0) break;
    // Seen once: noted, and declared when a group of a later round shows it again; at once when
    // three members or more are in the group and 3 of 4 of their crossing edges are slow.
    const auto& seen = edges[static_cast<std::size_t>(l)];
    const bool decisive = seen.inside >= 3 && 4 * seen.crossing_slow >= 3 * static_cast<int>(seen.crossing.size());
    if (const auto first = leaf_shaped_round.find(l);
        !decisive && (first == leaf_shaped_round.end() || first->second == round)) {
      leaf_shaped_round.emplace(l, round);
      skip[static_cast<std::size_t>(l)] = 1;
      continue;
    }
    const auto& e = edges[static_cast<std::size_t>(l)];
    std::vector<int> leaves = {l};
    if (topology.size() == 2) leaves.push_back(1 - l);
    auto ev = switch_evidence(e.inside, e.inside_slow, static_cast<int>(e.crossing.size()), e.crossing_slow,
                              upper_median(e.crossing) / base);
    ev["basis"] = "per-edge figures of one group";
    declare_uplink(leaves, round, std::move(ev));
    found.insert(found.end(), leaves.begin(), leaves.end());
    for (int k : leaves) skip[static_cast<std::size_t>(k)] = 1;
    if (topology.size() == 2) break;
  }
  if (found.empty()) return false;
  auto explained = [&](int u) { return leaf[u] >= 0 && std::count(found.begin(), found.end(), leaf[u]) > 0; };
  r.slow_rows.erase(std::remove_if(r.slow_rows.begin(), r.slow_rows.end(), explained), r.slow_rows.end());
  for (auto it = r.row_partners.begin(); it != r.row_partners.end();)
    it = explained(it->first) ? r.row_partners.erase(it) : std::next(it);
  auto either = [&](const auto& ab) { return explained(ab.first) || explained(ab.second); };
  r.slow_links.erase(std::remove_if(r.slow_links.begin(), r.slow_links.end(), either), r.slow_links.end());
  // Its crossing edges are no sightings, nor readings of known links: the uplink explains them.
  r.sightings.erase(std::remove_if(r.sightings.begin(), r.sightings.end(), either), r.sightings.end());
  r.readings.erase(std::remove_if(r.readings.begin(), r.readings.end(), [&](const auto& x) { return either(x.first); }),
                   r.readings.end());
  return true;
}

// A switch declared this round explains the slow groups that held its leaf's members: the searches
// they opened (for a node or link that the uplink was) are dropped. Certification still tests every
// pair of the good nodes that are left, so a real bad link among them is not missed.
void Planner::Impl::drop_searches_after_uplink(std::int64_t round) {
  if (slow_switches.empty() || slow_switches.back().round != round) return;
  std::vector<int> positive;
  for (const auto& [id, it] : search.items)
    if (it.positive) positive.push_back(id);
  for (int id : positive) drop_item(id);
  if (!positive.empty())
    note("the slow uplink explains " + std::to_string(positive.size()) + " slow group(s): their searches are dropped");
}

kiln::Finding switch_finding(const SwitchVerdict& v) {
  auto ev = v.evidence;
  ev["confirmed_round"] = v.round;
  const auto& c = ev["crossing"];
  const auto& in = ev["inside"];
  return kiln::make_finding(
      kiln::Code::SwitchSlow, {"switch", v.id},
      "traffic across the uplink of " + v.id + " is slow (" + c["slow"].dump() + " of " + c["pair_tests"].dump() +
          " crossing pair tests) while pairs inside are fast (" + in["slow"].dump() + " of " +
          in["pair_tests"].dump() + " slow)",
      std::move(ev), 0.9);
}

std::vector<kiln::Finding> Planner::Impl::switch_findings() const {
  std::vector<kiln::Finding> out;
  for (const auto& v : slow_switches) out.push_back(switch_finding(v));
  return out;
}

}  // namespace kiln::analysis
