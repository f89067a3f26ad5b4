// Exact (fewer than 8 nodes): every pair by the circle method, swept kRepeats times, then the pairs
// whose figures sit near the cutoff are retested (up to kMaxRepeats). A handful of nodes cannot
// feed the group-testing search (too few known-good partners, too few peers for a baseline), and
// every pair costs at most 7 rounds per sweep, so the planner measures everything and judges it
// once: each pair's median against the fast pairs, in units of a robust spread, then each node by
// its pairs. docs/localization.md, "Small clusters".
#include <algorithm>
#include <cmath>
#include <limits>

#include "common/findings.hpp"
#include "coordinator/analysis/strategies.hpp"

namespace kiln::analysis {

namespace {

using Key = std::pair<int, int>;
constexpr double kInf = std::numeric_limits<double>::infinity();
// A slow pair must be at least this much slower than the baseline (log 1.15, half way to the
// 1.25x of the mildest fault to be found), however tight the spread: with three nodes the spread
// rests on a few dozen figures, and a 10% difference is not a fault even when it looks significant.
constexpr double kMinEffect = 0.1398;
// One reading alone must be this much slower (log 1.5), and twice the least slowdown a pair must
// show, to count against an otherwise fast pair: a healthy pair's readings spread a few percent.
constexpr double kFlakyEffect = 0.4055;

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  if (v.size() % 2 == 1) return v[m];
  if (!std::isfinite(v[m])) return v[m];
  return 0.5 * (v[m - 1] + v[m]);
}

// What the repeats say: the baseline (median log cost of the fast pairs), the spread of one
// figure, and per pair its median, z and verdict.
struct PairStat {
  double med = 0.0;
  double z = 0.0;
  bool slow = false;
  bool near_cutoff = false;  // within 2 spreads of the cutoff: tested again
  bool undecided = false;    // within 1: reported unresolved once the repeats run out
  bool clear_fast = false;   // neither slow nor near the cutoff
  int tests = 0;
  // Readings far past the cutoff on their own (kFlakyEffect and z + 2) in a pair whose median is
  // not slow: a link or node that is slow some of the time. Such a pair is tested again, and is
  // reported (intermittently slow, or unresolved), never dropped.
  int slow_readings = 0;
  bool flaky = false;
};

struct ExactStats {
  double baseline = 0.0;
  double sigma = 0.0;   // spread of one figure (log scale)
  double min_effect = kMinEffect;  // the least slowdown a slow pair shows (log)
  double one = 0.0;                // the spread of a single reading (log)
  std::map<Key, PairStat> pairs;
};

// Spread of one figure from the repeats: differences between repeats of the same pair are noise
// alone, whatever the pair's level (median |x_i - x_j| = 0.954 sigma for normal noise). Floored
// by the configured relative spread and widened when it rests on few differences.
double repeat_sigma(const std::map<Key, std::vector<double>>& logs, double floor) {
  std::vector<double> diffs;
  std::size_t df = 0;  // figures less pairs: the differences are not independent of each other
  for (const auto& [key, v] : logs) {
    df += v.empty() ? 0 : v.size() - 1;
    for (std::size_t i = 0; i < v.size(); ++i)
      for (std::size_t j = i + 1; j < v.size(); ++j)
        if (std::isfinite(v[i]) && std::isfinite(v[j])) diffs.push_back(std::fabs(v[i] - v[j]));
  }
  if (diffs.empty() || df == 0) return floor;
  const double s = median(diffs) / 0.954 * (1.0 + 1.0 / std::sqrt(static_cast<double>(df)));
  return std::max(s, floor);
}

ExactStats exact_stats(const Planner::Impl& s) {
  ExactStats st;
  const double floor = std::log1p(s.cfg.outliers.min_rel_sigma);
  st.sigma = repeat_sigma(s.exact.logs, floor);
  std::vector<double> meds;
  for (const auto& [key, v] : s.exact.logs) {
    if (v.empty() || s.nodes[key.first].lost || s.nodes[key.second].lost) continue;
    st.pairs[key] = {median(v), 0.0, false, false, false, false, static_cast<int>(v.size())};
    meds.push_back(st.pairs[key].med);
  }
  if (meds.empty()) return st;
  // The baseline is the fast cluster: pairs within 3 spreads (of a pair median) of the fastest.
  // With two slow nodes of five, most pairs are slow, so the median of all pairs would be a slow one.
  std::vector<double> tests;
  for (const auto& [key, p] : st.pairs) tests.push_back(p.tests);
  const double med_sigma = 1.25 * st.sigma / std::sqrt(median(tests));
  const double lo = *std::min_element(meds.begin(), meds.end());
  std::vector<double> fast;
  for (double m : meds)
    if (m <= lo + 3.0 * med_sigma) fast.push_back(m);
  st.baseline = median(fast);
  // The baseline is itself a median of few pair medians: its own spread adds to each pair's.
  const double base_var = med_sigma * med_sigma / static_cast<double>(fast.size());
  const double zc = s.cfg.outliers.z_cutoff;
  // An operator's --slow-cutoff looser than the default (0.5 on a testbed whose healthy figures
  // swing 2-3x with the load on its cores) raises the least slowdown a pair must show.
  const double min_effect = s.cfg.outliers.rel_cutoff > 0 && s.cfg.outliers.rel_cutoff < OutlierConfig{}.rel_cutoff
                                ? std::max(kMinEffect, -std::log(s.cfg.outliers.rel_cutoff))
                                : kMinEffect;
  st.min_effect = min_effect;
  const double one = std::max(1.25 * st.sigma, floor);  // the spread of a single reading
  st.one = one;
  for (auto& [key, p] : st.pairs) {
    for (double x : s.exact.logs.at(key)) {
      const double dx = x - st.baseline;
      if (!std::isfinite(dx) || (dx >= std::max(kFlakyEffect, 2.0 * min_effect) && dx / one >= zc + 2.0)) ++p.slow_readings;
    }
    const double pm = 1.25 * st.sigma / std::sqrt(static_cast<double>(p.tests));
    const double sm = std::max(std::sqrt(pm * pm + base_var), floor);
    const double d = p.med - st.baseline;
    p.z = std::isfinite(d) ? d / sm : kInf;
    p.slow = p.z >= zc && d >= min_effect;
    p.near_cutoff = std::isfinite(p.z) && std::fabs(p.z - zc) < 2.0 && d >= 0.5 * min_effect;
    p.undecided = p.near_cutoff && std::fabs(p.z - zc) < 1.0;
    p.flaky = !p.slow && p.slow_readings > 0;
    p.near_cutoff = p.near_cutoff || p.flaky;
    p.clear_fast = !p.slow && !p.near_cutoff;
  }
  return st;
}

// How the pairs across a set of nodes (a leaf, or one node) read against the other pairs. A pair
// with an end in `bad` outside the set says nothing of the set and is left out.
struct Across {
  int cross = 0, cross_slow = 0, cross_up = 0, inside = 0, inside_slow = 0, others = 0;
  int cross_far = 0;  // crossing pairs with a reading far past the baseline (far, in across)
  double d = 0.0;   // mean crossing median less the mean of the others' (log)
  double se = 0.0;  // its standard error, from the repeat spread
  std::vector<double> slowness;  // each crossing pair's median slowness

  // The crossing pairs slow together: their mean past the others' by z_cutoff standard errors and
  // the least slowdown, 3 of 4 slow in a third of their readings, three of them at least besides
  // slow nodes, and either half slow by their medians or 3 of 4 with a far reading. A slow link
  // beside a slow node, at 4-6 nodes and 20% noise, passed without the last two: its end, or the
  // uplink between two leaves, was named in 3-28 campaigns of 200. A node 3x slow in half the
  // rounds has few slow medians at 20% noise, but far readings with most partners.
  bool slower(const ExactStats& st, double zc) const {
    return cross >= 3 && others >= 1 && 4 * cross_up >= 3 * cross &&
           (2 * cross_slow >= cross || 4 * cross_far >= 3 * cross) && d >= st.min_effect && d >= zc * se;
  }
};

Across across(const Planner::Impl& s, const ExactStats& st, const std::vector<char>& member,
              const std::vector<int>& bad) {
  auto is_bad = [&](int u) { return std::find(bad.begin(), bad.end(), u) != bad.end(); };
  // A median past the baseline, a timeout capped at 10x: a pair's place in a mean.
  auto level = [&](const PairStat& p) { return std::clamp(p.med - st.baseline, -1.0, std::log(10.0)); };
  // A third of its readings at least the least slowdown past the baseline: a pair across an uplink
  // slow in 80% of rounds has one such reading of three in all but 1 campaign of 100.
  auto up = [&](const Key& key) {
    const auto& v = s.exact.logs.at(key);
    const auto k = std::count_if(v.begin(), v.end(), [&](double x) { return x - st.baseline >= st.min_effect; });
    return 3 * k >= static_cast<std::ptrdiff_t>(v.size());
  };
  // A reading 1.5x past the baseline (kFlakyEffect) and two spreads of one reading: noise alone
  // puts one there about once in 40 readings at most.
  auto far = [&](const Key& key) {
    const auto& v = s.exact.logs.at(key);
    const double cut = std::max(kFlakyEffect, 2.0 * st.one);
    return std::any_of(v.begin(), v.end(), [&](double x) { return x - st.baseline >= cut; });
  };
  Across a;
  double cross_sum = 0.0, other_sum = 0.0, cross_var = 0.0, other_var = 0.0;
  for (const auto& [key, p] : st.pairs) {
    const bool in_a = member[key.first] != 0, in_b = member[key.second] != 0;
    // The variance of one pair's median: the repeat spread over its tests (exact_stats).
    const double var = 1.5625 * st.sigma * st.sigma / static_cast<double>(std::max(1, p.tests));
    if (in_a && in_b) ++a.inside, a.inside_slow += p.slow ? 1 : 0;
    if (in_a != in_b) {
      if (is_bad(in_a ? key.second : key.first)) continue;
      ++a.cross, a.cross_slow += p.slow ? 1 : 0, a.cross_up += up(key) ? 1 : 0, a.cross_far += far(key) ? 1 : 0;
      cross_sum += level(p), cross_var += var;
      a.slowness.push_back(std::exp(p.med - st.baseline));
      continue;
    }
    if (!(in_a && in_b) && (is_bad(key.first) || is_bad(key.second))) continue;
    ++a.others, other_sum += level(p), other_var += var;
  }
  if (a.cross == 0 || a.others == 0) return a;
  const double nc = a.cross, no = a.others;
  a.d = cross_sum / nc - other_sum / no;
  a.se = std::sqrt(cross_var / (nc * nc) + other_var / (no * no));
  return a;
}

// Nodes slow with most of their partners that are not slow themselves: most first, so a second
// slow node's pair with the first does not count for or against anyone else.
std::vector<int> slow_nodes(const Planner::Impl& s, const ExactStats& st) {
  std::vector<int> slow_with(static_cast<std::size_t>(s.n), 0);
  for (const auto& [key, p] : st.pairs)
    if (p.slow) ++slow_with[key.first], ++slow_with[key.second];
  std::vector<int> order;
  for (int u = 0; u < s.n; ++u)
    if (s.active(u)) order.push_back(u);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return slow_with[a] > slow_with[b]; });
  std::vector<int> bad;
  auto is_bad = [&](int u) { return std::find(bad.begin(), bad.end(), u) != bad.end(); };
  // u's partners not found slow so far, and its slow pairs with them.
  auto slow_with_rest = [&](int u) {
    int partners = 0, slow = 0;
    for (const auto& [key, p] : st.pairs) {
      if (key.first != u && key.second != u) continue;
      if (is_bad(key.first == u ? key.second : key.first)) continue;
      ++partners, slow += p.slow ? 1 : 0;
    }
    return std::pair{partners, slow};
  };
  for (int u : order) {
    const auto [partners, slow] = slow_with_rest(u);
    if (slow >= 2 && 4 * slow >= 3 * partners) bad.push_back(u);
  }
  // Slow in most rounds, not all (a node alone under a congested uplink, 80% of rounds): some of
  // its pair medians read fast, and 2 of 6 fast ones at 7 nodes left 4 slow links with one common
  // end. Its pairs judged together name it.
  std::vector<char> member(static_cast<std::size_t>(s.n), 0);
  for (int u : order) {
    if (is_bad(u)) continue;
    member[u] = 1;
    const auto a = across(s, st, member, bad);
    if (a.slower(st, s.cfg.outliers.z_cutoff)) bad.push_back(u);
    member[u] = 0;
  }
  // Slow with half its partners or more, three at least, and fast with the rest: a node slow in
  // some rounds (3x in half of them), not three slow links at one end. Each slow pair read as a
  // link while the node had two clearly fast pairs (6 nodes, 5% noise: the node went unnamed in 1
  // campaign of 4).
  for (int u : order) {
    if (is_bad(u)) continue;
    const auto [partners, slow] = slow_with_rest(u);
    if (slow >= 3 && 2 * slow >= partners) bad.push_back(u);
  }
  return bad;
}

// When a pair sits near the cutoff, every pair is tested again (the one near the cutoff first,
// then those with the fewest tests) until kMaxRepeats: the baseline and the spread sharpen with the
// pair. Disjoint pairs, so one round.
std::vector<Key> retests(const Planner::Impl& s, const ExactStats& st) {
  std::vector<std::pair<int, Key>> want;
  bool any_near = false;
  for (const auto& [key, p] : st.pairs) {
    if (!s.active(key.first) || !s.active(key.second) || p.tests >= ExactState::kMaxRepeats) continue;
    any_near = any_near || p.near_cutoff;
    want.push_back({(p.near_cutoff ? 0 : 100) + p.tests, key});
  }
  if (!any_near) return {};
  std::sort(want.begin(), want.end());
  std::vector<char> busy(static_cast<std::size_t>(s.n), 0);
  std::vector<Key> out;
  for (const auto& [rank, key] : want) {
    if (busy[key.first] || busy[key.second]) continue;
    busy[key.first] = busy[key.second] = 1;
    out.push_back(key);
  }
  return out;
}

}  // namespace

void Planner::Impl::record_exact(const std::vector<int>& g, const GroupOutcome& o) {
  if (g.size() != 2) return;
  double cost = kInf;
  if (!o.timed_out) {
    if (!o.value) return;  // no figure: says nothing
    cost = std::log(to_cost(*o.value, cfg.outliers.direction));
  }
  exact.logs[std::minmax(g[0], g[1])].push_back(cost);
}

namespace strategy {

void exact(Planner::Impl& s, RoundDraft& round) {
  auto& e = s.exact;
  if (!e.active || e.done) return;
  if (e.order.empty()) {
    for (int u = 0; u < s.n; ++u) e.order.push_back(u);
    if (e.order.size() % 2 == 1) e.order.push_back(-1);
  }
  const int per_sweep = static_cast<int>(e.order.size()) - 1;
  while (round.empty() && e.sweeps < ExactState::kRepeats) {
    for (auto [a, b] : circle_pairs(e.order, e.circle_round))
      if (a >= 0 && b >= 0 && s.active(a) && s.active(b)) round.add({a, b}, Tag{Tag::Exact});
    round.reason = "small cluster: every pair, sweep " + std::to_string(e.sweeps + 1) + " of " +
                   std::to_string(ExactState::kRepeats) + ", circle round " +
                   std::to_string(e.circle_round + 1) + " of " + std::to_string(per_sweep);
    if (++e.circle_round == per_sweep) e.circle_round = 0, ++e.sweeps;
  }
  if (!round.empty()) return;
  for (auto [a, b] : retests(s, exact_stats(s))) round.add({a, b}, Tag{Tag::Exact});
  if (!round.empty()) {
    round.reason = "small cluster: pairs near the cutoff tested again";
    return;
  }
  e.done = true;
  e.done_round = s.book.observed;
}

}  // namespace strategy

namespace {

nlohmann::json pair_json(const Planner::Impl& s, const Key& key, const PairStat& p, double base) {
  const double slowness = std::exp(p.med - base);
  // Each reading's slowness against the baseline, in test order: what the median rests on.
  nlohmann::json readings = nlohmann::json::array();
  for (double x : s.exact.logs.at(key)) {
    const double r = std::exp(x - base);
    readings.push_back(std::isfinite(r) ? nlohmann::json(std::round(r * 1000) / 1000) : nlohmann::json("timeout"));
  }
  return {{"pair", s.link_id(key.first, key.second)},
          {"readings", std::move(readings)},
          {"slowness", std::isfinite(slowness) ? nlohmann::json(slowness) : nlohmann::json("timeout")},
          {"z", std::isfinite(p.z) ? nlohmann::json(p.z) : nlohmann::json("timeout")},
          {"tests", p.tests},
          {"slow_readings", p.slow_readings},
          {"slow", p.slow}};
}

}  // namespace

namespace {

nlohmann::json with_pairs(nlohmann::json ev, nlohmann::json pairs) {
  ev["pairs"] = std::move(pairs);
  return ev;
}

// Two nodes: one pair, no baseline, and a slow pair cannot say which end is slow.
std::vector<kiln::Finding> two_node_findings(const Planner::Impl& s, const ExactStats& st,
                                             const nlohmann::json& basis) {
  std::vector<kiln::Finding> out;
  for (const auto& [key, p] : st.pairs)
    out.push_back(kiln::make_finding(
        kiln::Code::LocalizeUnresolved, {"link", s.link_id(key.first, key.second)},
        "two nodes form one pair: its figure has nothing to be compared with, and a slow pair cannot "
        "say which end is slow; test each node with a third, known-good node",
        with_pairs(basis, {pair_json(s, key, p, st.baseline)}), 0.5));
  return out;
}

// Node u has a pair other than `skip` that is clearly fast: a slow pair of u is not u's fault.
bool fine_elsewhere(const ExactStats& st, int u, const Key& skip) {
  for (const auto& [key, p] : st.pairs)
    if (key != skip && (key.first == u || key.second == u) && p.clear_fast) return true;
  return false;
}

kiln::Finding node_finding(const Planner::Impl& s, const ExactStats& st, const nlohmann::json& basis,
                           int u) {
  nlohmann::json pairs = nlohmann::json::array();
  int slow = 0, partners = 0;
  for (const auto& [key, p] : st.pairs) {
    if (key.first != u && key.second != u) continue;
    ++partners, slow += p.slow ? 1 : 0;
    pairs.push_back(pair_json(s, key, p, st.baseline));
  }
  auto ev = with_pairs(basis, std::move(pairs));
  std::string more;
  // Fast with a quarter of its partners or more: slow some of the time (slow_nodes), with the rate
  // its readings show.
  if (4 * slow < 3 * partners) {
    int readings = 0, past = 0;
    for (const auto& [key, p] : st.pairs) {
      if (key.first != u && key.second != u) continue;
      for (double x : s.exact.logs.at(key)) ++readings, past += x - st.baseline >= st.min_effect ? 1 : 0;
    }
    ev["intermittent"] = true, ev["slow_rate"] = readings > 0 ? static_cast<double>(past) / readings : 0.0;
    more = "; intermittently slow: fast with the other " + std::to_string(partners - slow) + ", " +
           std::to_string(past) + " of " + std::to_string(readings) + " readings slow";
  }
  return kiln::make_finding(kiln::Code::NodeSlow, {"node", s.name(u)},
                            s.name(u) + " is slow with " + std::to_string(slow) + " of " +
                                std::to_string(partners) + " partners (every pair, repeated)" + more,
                            std::move(ev), std::clamp(1.0 - std::pow(0.2, slow), 0.5, 0.999));
}

// Leaves whose crossing pairs are slow together (Across::slower) while no pair inside is: the
// leaf's uplink, not its nodes (with two leaves, the path between them: which uplink it is cannot
// be told). An uplink slow in most rounds, not all, leaves some crossing medians fast, and its
// toggling pairs widen the spread from the repeats; requiring every crossing median slow missed an
// uplink 2x slow in 80% of rounds in about 1 campaign of 2 at 5-7 nodes (leaves of 2), and each
// slow crossing pair then read as a slow link.
// bad: slow_nodes, whose pairs say nothing of an uplink.
std::vector<SwitchVerdict> exact_switches(const Planner::Impl& s, const ExactStats& st, const std::vector<int>& bad) {
  std::vector<SwitchVerdict> out;
  if (s.topology.size() < 2) return out;
  for (int i = 0; i < static_cast<int>(s.topology.size()); ++i) {
    std::vector<char> member(static_cast<std::size_t>(s.n), 0);
    for (int u : s.topology[static_cast<std::size_t>(i)].nodes)
      if (u >= 0 && u < s.n) member[u] = 1;
    const auto a = across(s, st, member, bad);
    if (a.inside == 0 || a.inside_slow > 0 || !a.slower(st, s.cfg.outliers.z_cutoff)) continue;
    auto ev = switch_evidence(a.inside, a.inside_slow, a.cross, a.cross_slow, median(a.slowness));
    ev["crossing"]["mean_past_others"] = std::exp(a.d), ev["crossing"]["z"] = a.se > 0 ? a.d / a.se : 0.0;
    std::vector<int> leaves = {i};
    if (s.topology.size() == 2) leaves.push_back(1 - i);
    out.push_back(uplink_verdict(s.topology, leaves, s.exact.done_round, std::move(ev)));
    if (s.topology.size() == 2) break;
  }
  return out;
}

}  // namespace

// A pair of two nodes not slow themselves is a slow link when its median is slow; a pair still
// near the cutoff after kMaxRepeats tests is reported undecided, never dropped.
std::vector<kiln::Finding> Planner::Impl::exact_findings() const {
  const auto st = exact_stats(*this);
  const nlohmann::json basis = {{"baseline", std::exp(st.baseline)}, {"sigma", st.sigma},
                                {"method", "every pair, repeated"}, {"confirmed_round", exact.done_round}};
  if (st.pairs.size() == 1) return two_node_findings(*this, st, basis);
  std::vector<kiln::Finding> out;
  std::vector<char> under(static_cast<std::size_t>(n), 0);  // under a slow switch: no node or link finding
  auto bad = slow_nodes(*this, st);
  for (const auto& v : exact_switches(*this, st, bad)) {
    out.push_back(switch_finding(v));
    for (int l : v.leaves)
      for (int u : topology[static_cast<std::size_t>(l)].nodes)
        if (u >= 0 && u < n) under[u] = 1;
  }
  std::erase_if(bad, [&](int u) { return under[u] != 0; });
  for (int u : bad) out.push_back(node_finding(*this, st, basis, u));
  auto is_bad = [&](int u) { return std::find(bad.begin(), bad.end(), u) != bad.end(); };
  for (const auto& [key, p] : st.pairs) {
    const auto [a, b] = key;
    // One far reading among a pair's retests is a straggler (the retests say so); two are not.
    const bool flaky = p.flaky && p.slow_readings >= 2;
    if (is_bad(a) || is_bad(b) || under[a] || under[b] || !(p.slow || p.undecided || flaky)) continue;
    auto ev = with_pairs(basis, {pair_json(*this, key, p, st.baseline)});
    const std::string k_of_n = std::to_string(p.slow_readings) + " of " + std::to_string(p.tests) + " tests";
    if (flaky && fine_elsewhere(st, a, key) && fine_elsewhere(st, b, key)) {
      ev["intermittent"] = true;
      ev["slow_rate"] = static_cast<double>(p.slow_readings) / p.tests;
      ev["tests"] = p.tests;
      out.push_back(kiln::make_finding(kiln::Code::LinkSlow, {"link", link_id(a, b)},
                                       "traffic between " + name(a) + " and " + name(b) + " is intermittently slow (" +
                                           k_of_n + ") while both are fine with their other partners",
                                       std::move(ev), 0.9));
    } else if (flaky) {
      out.push_back(kiln::make_finding(
          kiln::Code::LocalizeUnresolved, {"link", link_id(a, b)},
          "pair " + link_id(a, b) + " was far slower than the others in " + k_of_n +
              " and fast in the rest: an intermittently slow node or link, or a burst of noise; test it again with more repeats",
          std::move(ev), 0.5));
    } else if (p.slow && fine_elsewhere(st, a, key) && fine_elsewhere(st, b, key)) {
      out.push_back(kiln::make_finding(kiln::Code::LinkSlow, {"link", link_id(a, b)},
                                       "traffic between " + name(a) + " and " + name(b) +
                                           " is slow while both are fine with their other partners",
                                       std::move(ev), std::clamp(1.0 - std::pow(0.2, p.tests), 0.5, 0.999)));
    } else {
      out.push_back(kiln::make_finding(
          kiln::Code::LocalizeUnresolved, {"link", link_id(a, b)},
          "pair " + link_id(a, b) + (p.slow ? " is slow, but an end is not clearly fine with another partner"
                                            : " stayed near the cutoff") + " after " + std::to_string(p.tests) +
              " tests: a mildly or intermittently slow node or link, or noise; test it again with more repeats",
          std::move(ev), 0.5));
    }
  }
  return out;
}

}  // namespace kiln::analysis
