// Control: a pair of known-good nodes, timed while pair tests are held against a shallow history.
//
// Without a reference, a small cluster's pair history is its screen's fast cluster: the two or three
// pairs that read fastest. With half the nodes slow that is the healthy level, and every later round
// of suspects with known-good partners is slow against it (history(all-slow)), as it should be. In a
// healthy cluster at 20% noise it can be the fast tail of the noise: two pairs at 0.6x of the rest,
// and every later pair 1.6-2.6x "slow" against them (12 nodes, seed 101828: seven healthy nodes
// named). The figures of those rounds cannot tell the two apart; a new pair of two nodes from that
// history can. It reads the history's level where the history is the healthy pairs', and the rest's
// level where it was a lucky few.
//
// So a pair test judged slow only against a history of fewer than History::kOwnSpread pair figures,
// in a round judged all slow against it, is held (Impl::hold), and the next round times one control
// pair. Read within three quarters of the relative cutoff of the level the held tests were judged
// against, it vouches for that level: the held tests are recorded as they were judged, and nothing
// is held again. Read slower, once by a straggler perhaps, it asks for a second control on two other
// nodes; read slower twice, it refutes it: the held tests are dropped, as unknown verdicts are, and
// the two controls' figures are the pair history from then on. A retest group (a row test) dropped as
// uniformly slow against such a history asks for a control as well (Impl::ask_control). With a
// reference the reference judges such rounds (reference(all-slow)) and nothing is held; past a few
// dozen nodes the screen's pairs make the history deep at once, and nothing is held either.
//
// The opposite case: every screen pair of a small cluster held a slow node, so the pair history is
// the slow level and the slow nodes' pair tests with good partners read fine against it. An
// all-to-all's fast core (fast_core, evidence_core.cpp) shows it; level controls, pairs of core
// nodes timed alone in the next round, measure the healthy level, which replaces the history where
// it is faster by the relative cutoff (Impl::want_level, Impl::observe_level, level_control).
//
// Healthy, 20% noise, 2,000 campaigns per size at 8-48 nodes (seeds 100001 on): 12 nodes 9 false
// findings in 2 campaigns -> 0; 24 nodes 1 -> 0; 8 nodes unresolved 2 -> 0. The cost, 100 seeds at
// 5% noise: k = 8 of 16 nodes 2x recall 0.677 -> 0.675, unresolved 2 -> 4; congestion at 8 nodes
// unresolved 1 -> 3 (the switch still found in all); rounds +0.1 to +0.9.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "common/stats.hpp"
#include "coordinator/analysis/strategies.hpp"

namespace kiln::analysis {

namespace {
// A control vouches within this share of the relative cutoff of the held tests' level (1.18x at the
// default 0.8): a control at 1.14x and 1.15x vouched for a history that was the noise's fast tail
// (healthy 12 nodes seed 101329, 8 nodes seed 1152, 20% noise) with the whole cutoff, and at half
// of it a healthy control read 1.13x under 5% noise and two 2x nodes of 8 went unresolved (seed 14).
constexpr double kVouchShare = 0.75;
}

bool Planner::Impl::holds(const Tag& t, const std::vector<int>& g, const Judgement& j, bool shallow) const {
  return shallow && !control.vouched && t.kind == Tag::Resolve && g.size() == 2 && j.verdict == Verdict::Slow &&
         j.basis == "history(all-slow)";
}

void Planner::Impl::hold(const std::vector<int>& g, std::int64_t round, const GroupOutcome& o, const Judgement& j) {
  control.held.push_back({g, round, o, j});
  std::ostringstream t;
  t << std::fixed << std::setprecision(2) << link_id(g[0], g[1]) << " read " << j.slowness << "x at z "
    << std::setprecision(1) << j.z
    << " against a history of a few pair figures: held until a control pair of known-good nodes shows that level is healthy";
  note(t.str());
}

void Planner::Impl::release_held(const std::string& why) {
  if (control.held.empty()) return;
  note(std::to_string(control.held.size()) + " held pair test(s) count: " + why);
  auto held = std::move(control.held);
  control.held.clear();
  for (const auto& h : held) {
    // A member lost since: the survivor's figure says nothing, as in observe().
    if (std::any_of(h.group.begin(), h.group.end(), [&](int u) { return nodes[u].lost; })) continue;
    const Judgement j = at_control_level(h.judgement);
    if (j.verdict != Verdict::Slow) {
      note(link_id(h.group[0], h.group[1]) + " is not slow against the level the control read: dropped");
      continue;
    }
    record_outcome(h.group, h.round, h.outcome, j, true);
  }
}

// A control that vouched read the level d slower than the history the held tests were judged
// against: that history was a few fast pair figures, and the control a pair timed after the fact. A
// held test is slow against the level raised by d, or says nothing (Verdict::Unknown, dropped): at 8
// healthy nodes and 20% noise (seed 1152) the control read 1.15x, node2 had read 1.64x twice against
// the history (z 4.4), and those two votes named it; against the control's level they read 1.43x
// (z 3.2). A test that read slow fades by at most three quarters of the cutoff (2x to 1.69x).
Judgement Planner::Impl::at_control_level(const Judgement& j) const {
  if (!(control.shift > 0.0) || j.verdict != Verdict::Slow || !on_history(j) ||
      !(j.sigma > 0.0) || !std::isfinite(j.slowness))
    return j;
  Judgement out = j;
  const double d = std::log(j.slowness) - control.shift;
  out.slowness = std::exp(d);
  out.z = d / j.sigma;
  out.expected = cfg.outliers.direction == Direction::LowerIsBetter ? j.expected * std::exp(control.shift)
                                                                   : j.expected / std::exp(control.shift);
  const bool slow = d > relative_limit(cfg.outliers) && out.z >= cfg.outliers.z_cutoff;
  out.verdict = slow ? Verdict::Slow : Verdict::Unknown;
  return out;
}

void Planner::Impl::ask_control(const Judgement& j) {
  if (control.vouched || reference_figure(cfg.outliers, cfg.size_bytes) || !on_history(j) ||
      !(j.expected > 0.0))
    return;
  const auto pairs = history.reference(2, cfg.size_bytes);
  if (!pairs || pairs->count >= History::kOwnSpread) return;
  if (control.asked.empty())
    note("a retest group read uniformly slow against a history of a few pair figures: a control pair of known-good "
         "nodes will show whether that level is healthy");
  control.asked.push_back(std::log(to_cost(j.expected, cfg.outliers.direction)));
}

void Planner::Impl::vouch(const std::string& why) {
  control.vouched = true;
  control.asked.clear();
  release_held(why);
}

ControlRead Planner::Impl::observe_control(const std::vector<int>& g, const GroupOutcome& o) {
  const std::string id = link_id(g[0], g[1]);
  if ((control.held.empty() && control.asked.empty()) || !o.value || !(*o.value > 0.0)) {
    vouch("the control " + id + " has no figure");
    return ControlRead::Vouched;
  }
  // The level the held tests were judged against (the history as it was then: later fast pairs may
  // have deepened it since), their median where rounds judged them against different ones, and the
  // levels of the retest groups that asked for a control.
  std::vector<double> levels = control.asked;
  for (const auto& h : control.held) levels.push_back(std::log(to_cost(h.judgement.expected, cfg.outliers.direction)));
  const double cost = to_cost(*o.value, cfg.outliers.direction);
  const double d = std::log(cost) - stats::median(levels);
  std::ostringstream t;
  t << std::fixed << std::setprecision(2) << " read " << std::exp(d)
    << "x of the level " << (control.held.empty() ? "retest groups were" : "the held pair tests were") << " judged against";
  const std::string buf = t.str();
  if (d <= kVouchShare * relative_limit(cfg.outliers)) {
    control.shift = std::max(d, 0.0);
    if (control.held.empty()) note("control pair " + id + buf + ", the level healthy pairs reach");
    vouch("the control pair " + id + buf + ", the level healthy pairs reach");
    return ControlRead::Vouched;
  }
  control.slow_costs.push_back(cost);
  // One slow control may be a straggler (a healthy pair read 1.29x at 5% noise, and two 2x nodes of 8
  // went unresolved): a second control, on two other nodes, must read slow too.
  if (++control.slow_controls < ControlState::kSlowControls) {
    note("control pair " + id + buf + ": slower than that level allows; another control pair decides");
    return ControlRead::Again;
  }
  refute_history("control pair " + id + buf + ", as the one before it did");
  return ControlRead::Refuted;
}

void Planner::Impl::refute_history(const std::string& why) {
  note(why + ": that history was the fast tail of the noise, not the healthy level; " +
       (control.held.empty() ? std::string() : std::to_string(control.held.size()) + " held pair test(s) dropped, ") +
       "the history is the controls' figures from now on");
  control.held.clear();
  control.asked.clear();
  // The controls are pairs of known-good nodes timed after the fact: the level the history stands for.
  history.forget(2, cfg.size_bytes);
  for (double c : control.slow_costs) history.add(2, cfg.size_bytes, c);
  control.slow_costs.clear();
  control.slow_controls = 0;
}

// At any depth of the pair history: on the 12-node testbed with 6 ports at half rate the screen's
// 6 pairs and two retests made 8 figures, most of them with a slow member, and the slow nodes' pair
// tests with good partners read fine against them: 4 of the 6 came out intermittent, 2 unresolved.
void Planner::Impl::want_level() {
  if (control.level_wanted || control.level_read || reference_figure(cfg.outliers, cfg.size_bytes)) return;
  if (!history.reference(2, cfg.size_bytes)) return;
  control.level_wanted = true;
  note("an all-to-all's edges among a core of its members read fast and the rest slow with all of them: control "
       "pairs of core nodes will show whether the pair history is the slow nodes' level");
}

void Planner::Impl::observe_level(const std::vector<const GroupOutcome*>& controls) {
  control.level_wanted = false;
  control.level_read = true;
  std::vector<double> logs;
  for (const auto* o : controls)
    if (o->value && *o->value > 0.0) logs.push_back(std::log(to_cost(*o->value, cfg.outliers.direction)));
  const auto pairs = history.reference(2, cfg.size_bytes);
  if (logs.empty() || !pairs) return;
  const double d = stats::median(logs) - pairs->log_median;
  std::ostringstream t;
  t << std::fixed << std::setprecision(2) << "control pairs of core nodes read " << std::exp(d) << "x of the pair history";
  // Read at the history's level (as a control vouches) or below it, the controls measured the
  // healthy pairs' level with known-good nodes: no pair test is held against it later. Below it at
  // all (on the testbed with 6 ports at half rate they read 0.81x, and with the history standing 4
  // of the 6 slow nodes came out intermittent), their median is the history, one figure, so the pairs judged against it get the spread of a
  // history too short for one (half the relative cutoff): the MAD of two control figures is one
  // noise draw, and at 0.21 (two controls 0.57x and 0.48x of the old history, 8 nodes with 3 of
  // them 2x, seed 77) a 2.08x suspect read z 3.5, fine, and fed the history, and all three slow
  // nodes ended unresolved.
  if (d < 0.0) {
    note(t.str() + ": that history was slow pairs, the controls' median is the history from now on");
    history.forget(2, cfg.size_bytes);
    history.add(2, cfg.size_bytes, std::exp(stats::median(logs)));
    vouch(t.str() + ", the level healthy pairs reach");
  } else if (d <= kVouchShare * relative_limit(cfg.outliers)) {
    note(t.str() + ": that history is the healthy pairs' level");
    vouch(t.str() + ", the level healthy pairs reach");
  } else {
    note(t.str() + ": slower than that history, which stands");
  }
}

namespace strategy {

namespace {
bool met(const Planner::Impl& s, int a, int b) {
  return std::any_of(s.pair_tests.begin(), s.pair_tests.end(),
                     [&](const auto& t) { return (t.a == a && t.b == b) || (t.a == b && t.b == a); });
}

// Up to kLevelControls disjoint pairs of known-good nodes with no slow row, no slow pair test and
// no pair check, never paired before, and nothing else in the round (Planner::next): the other tests
// of suspects would be judged against the history these decide. With none, the history stands.
// Their nodes are used as a control's are (control()'s later controls leave them out).
constexpr int kLevelControls = 2;
void level_control(Planner::Impl& s, RoundDraft& round) {
  std::vector<int> clean;
  for (int u = 0; u < s.n; ++u) {
    const auto& d = s.nodes[u];
    if (s.good(u) && d.slow_rows == 0 && d.slow_pairs.empty() && !d.pair_checked && !d.pair_suspect) clean.push_back(u);
  }
  std::vector<char> taken(static_cast<std::size_t>(s.n), 0);
  int planned = 0;
  for (std::size_t i = 0; i < clean.size() && planned < kLevelControls; ++i)
    for (std::size_t j = i + 1; j < clean.size() && !taken[static_cast<std::size_t>(clean[i])]; ++j) {
      const int a = clean[i], b = clean[j];
      if (taken[static_cast<std::size_t>(b)] || met(s, a, b)) continue;
      taken[static_cast<std::size_t>(a)] = taken[static_cast<std::size_t>(b)] = 1;
      s.control.used.insert(a);
      s.control.used.insert(b);
      round.add({a, b}, Tag{Tag::Control});
      round.explain("control pair " + s.link_id(a, b) + ": is the pair history the slow nodes' level?");
      ++planned;
    }
  if (planned == 0) {
    s.control.level_wanted = false;
    s.control.level_read = true;
  }
}
}  // namespace

// Two free known-good nodes never paired before and in no earlier control, clean (no slow pair test
// recorded, no pair check): the first such pair in node order. A node of an earlier control is left
// out (two controls sharing a node are not two readings); the known-good partner of a held test may
// be one: leaving those out left no control in small clusters (8 and 12 nodes at 20% noise: 1 and 7
// false findings in 1,000 and 2,000 healthy campaigns, against 0 and 1). With none, the held tests
// count as judged (a control cannot come), unless a control read slow already: then that one
// refutes the history.
void control(Planner::Impl& s, RoundDraft& round) {
  if (s.control.level_wanted) {
    level_control(s, round);
    return;
  }
  if (s.control.held.empty() && s.control.asked.empty()) return;
  std::vector<int> clean;
  for (int u = 0; u < s.n; ++u) {
    const auto& d = s.nodes[u];
    if (s.good(u) && !round.busy[u] && !s.control.used.count(u) && d.item < 0 && d.slow_pairs.empty() &&
        !d.pair_checked && !d.pair_suspect)
      clean.push_back(u);
  }
  for (std::size_t i = 0; i < clean.size(); ++i)
    for (std::size_t j = i + 1; j < clean.size(); ++j) {
      const int a = clean[i], b = clean[j];
      if (met(s, a, b)) continue;
      s.control.used.insert(a);
      s.control.used.insert(b);
      round.add({a, b}, Tag{Tag::Control});
      round.explain("control pair " + s.link_id(a, b) + ": is the history the pairs were judged against healthy?");
      return;
    }
  // Recorded now, into the last round's story, and settled before the other strategies plan on them.
  // A control that read slow already stands alone: the held tests are not counted against it.
  s.story.current = &s.story.rounds.back();
  if (s.control.slow_controls > 0) {
    s.refute_history("no second control pair free, and the one before read slow");
  } else {
    s.vouch("no two known-good nodes free for a control pair");
  }
  const std::int64_t last = s.book.next_id - 1;
  s.reevaluate_nodes(last);
  s.mark_pair_suspects();
  s.update_links();
  s.story.current = nullptr;
}

}  // namespace strategy
}  // namespace kiln::analysis
