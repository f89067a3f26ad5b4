// Planner: rounds in, rounds out. next() asks the round strategies (strategies.hpp) in priority
// order; observe() turns a round's outcomes into evidence (evidence.cpp) and routes search outcomes
// back to the split strategy. Findings are in report.cpp.
#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "common/stats.hpp"
#include "coordinator/analysis/strategies.hpp"

namespace kiln::analysis {

Planner::Impl::Impl(int n_, PlannerConfig c, std::vector<Switch> topo, std::vector<std::string> nm)
    : Setup{n_, std::move(c), std::move(topo), std::move(nm)},
      Evidence(n_, cfg.outliers.size_invariant),
      rng(cfg.seed) {
  if (n < 0) throw std::invalid_argument("planner: negative node count");
  if (!names.empty() && static_cast<int>(names.size()) != n)
    throw std::invalid_argument("planner: names must have one entry per node");
  cfg.votes = std::max(1, cfg.votes);
  cfg.screen_group_size = std::max(2, cfg.screen_group_size);
  const int log2n = n > 1 ? static_cast<int>(std::ceil(std::log2(static_cast<double>(n)))) : 1;
  book.max_rounds = cfg.max_rounds > 0 ? cfg.max_rounds : 4 * log2n + 24;
  exact.active = n >= 2 && n < cfg.exact_below;
  if (exact.active) {
    book.max_rounds = std::max<std::int64_t>(book.max_rounds, ExactState::kMaxRepeats * n + 8);
  }
  if (cfg.mode == Mode::Full) {
    // The circle method needs N N-1 rounds, not O(log N): allow them plus retests.
    book.max_rounds = std::max<std::int64_t>(book.max_rounds, n + 4 * cfg.votes + 8);
  }
}

std::string Planner::Impl::name(int u) const {
  return names.empty() ? "node" + std::to_string(u) : names[static_cast<std::size_t>(u)];
}

std::string Planner::Impl::link_id(int a, int b) const {
  if (a > b) std::swap(a, b);
  return name(a) + "<->" + name(b);
}

// Conclusions reached while planning (after round r was observed) belong to round r's entry.
void Planner::Impl::note(const std::string& s) {
  if (story.current) (*story.current)["concluded"].push_back(s);
  else if (!story.rounds.empty()) story.rounds.back()["concluded"].push_back(s);
  else story.early_notes.push_back(s);
}

Planner::Planner(int n, PlannerConfig cfg, std::vector<Switch> topology,
                 std::vector<std::string> names)
    : impl_(std::make_unique<Impl>(n, std::move(cfg), std::move(topology), std::move(names))) {}
Planner::~Planner() = default;
Planner::Planner(Planner&&) noexcept = default;
Planner& Planner::operator=(Planner&&) noexcept = default;

std::int64_t Planner::rounds() const { return impl_->book.observed; }
std::int64_t Planner::tests() const { return impl_->book.tests; }
bool Planner::done() const { return impl_->book.finished; }
double one_fault_round_bound(int nodes) { return 2.0 * std::log2(static_cast<double>(std::max(1, nodes))) + 10.0; }

std::string Planner::node_name(int u) const { return impl_->name(u); }
std::vector<kiln::Finding> Planner::findings() const { return impl_->make_findings(); }

nlohmann::json Planner::story() const {
  nlohmann::json j = {{"rounds", impl_->story.rounds}, {"finished", impl_->book.finished}};
  if (!impl_->book.finish_note.empty()) j["note"] = impl_->book.finish_note;
  if (impl_->edges_seen) j["noise"] = impl_->noise_story();
  return j;
}

std::optional<RoundPlan> Planner::next() {
  auto& s = *impl_;
  if (s.book.finished) return std::nullopt;
  if (!s.book.pending.empty()) throw std::logic_error("planner: observe() the previous round first");
  if (s.book.observed >= s.book.max_rounds) {
    s.book.finished = true;
    s.book.out_of_rounds = true;
    s.book.finish_note = "stopped after max_rounds=" + std::to_string(s.book.max_rounds) +
                         "; undecided suspects are reported as localize.unresolved findings";
    return std::nullopt;
  }

  RoundDraft round(s.n);
  // The opening round types own their rounds: all-pairs in Full mode until every pair is tested,
  // the screen once in Adaptive mode.
  // A small cluster is measured pair by pair, every pair repeated, and judged once (exact).
  strategy::exact(s, round);
  if (!s.exact.active) {
    strategy::all_pairs(s, round);
    strategy::screen(s, round);
  }
  // The follow-ups share a round in priority order, each taking the nodes the earlier ones left
  // free. A pass that plans nothing can still move state on (certification ends, which makes link
  // retests due; a certification round whose every group holds a node no longer good is skipped),
  // so a second pass is asked before the planner stops.
  for (int pass = 0; pass < 2 && round.empty() && !s.exact.active; ++pass) {
    strategy::control(s, round);
    if (s.control.level_wanted && !round.empty()) break;  // level controls alone (strategy_control.cpp)
    strategy::resolve(s, round);
    strategy::split(s, round);
    strategy::retest_edges(s, round);
    strategy::certify(s, round);
    strategy::uplink_check(s, round);
  }

  if (round.empty()) {
    s.book.finished = true;
    return std::nullopt;
  }
  RoundPlan plan;
  plan.id = s.book.next_id++;
  const bool all_pairs = std::all_of(round.groups.begin(), round.groups.end(),
                                     [](const auto& g) { return g.size() == 2; });
  plan.kind = all_pairs ? "pairs" : "all_to_all";
  plan.groups = std::move(round.groups);
  plan.reason = std::move(round.reason);
  s.book.pending[plan.id] = std::move(round.tags);
  return plan;
}

namespace {

// The share of the pooled edge spread that floors a pair figure's (Impl::judge): half once the pair
// spread rests on enough figures, all of it before.
constexpr double kPairFloorOfEdges = 0.5;
constexpr double kShallowPairFloorOfEdges = 1.0;

// The repeat spread caps that floor at this multiple of itself, once it rests on kMinRepeatDiffs
// differences (Impl::pair_repeat_sigma); up to kSmallEdgeCluster nodes.
constexpr double kRepeatFloorMargin = 1.5;
constexpr std::size_t kMinRepeatDiffs = 8;

}  // namespace

// The spread of a pair figure from its repeats: a node's pair tests with known-good partners differ
// by noise only, whatever the node's level (a healthy node's read 1.0x, a slow one's 1.5x, each
// every time), so sigma = median |x_i - x_j| over every two of one node's figures / 0.954 (the
// small-cluster path's rule, strategy_exact.cpp), widened for the differences it rests on. Partners
// must be known-good and not pair suspects (a capped port reads fine in rows and slow in pairs).
// Nothing below kMinRepeatDiffs differences or past kSmallEdgeCluster nodes.
std::optional<double> Planner::Impl::pair_repeat_sigma() const {
  if (n > kSmallEdgeCluster) return std::nullopt;
  std::vector<std::vector<double>> by_node(static_cast<std::size_t>(n));
  auto clean_partner = [&](int v) { return good(v) && !nodes[v].pair_suspect; };
  for (const auto& t : pair_tests) {
    if (!std::isfinite(t.log_cost) || t.log_cost == 0.0) continue;
    if (clean_partner(t.b)) by_node[static_cast<std::size_t>(t.a)].push_back(t.log_cost);
    if (clean_partner(t.a)) by_node[static_cast<std::size_t>(t.b)].push_back(t.log_cost);
  }
  std::vector<double> diffs;
  for (const auto& v : by_node)
    for (std::size_t i = 0; i < v.size(); ++i)
      for (std::size_t j = i + 1; j < v.size(); ++j) diffs.push_back(std::abs(v[i] - v[j]));
  if (diffs.size() < kMinRepeatDiffs) return std::nullopt;
  const double sigma = stats::median(diffs) / 0.954;
  return sigma * (1.0 + 1.0 / std::sqrt(static_cast<double>(diffs.size())));
}

namespace {

// Outcomes in plan order, matched by members since the caller may return them in any order.
// Throws before the planner's state changes, so the round can be observed again.
std::vector<const GroupOutcome*> match_outcomes(const RoundPlan& plan,
                                                const std::vector<GroupOutcome>& outcomes) {
  std::map<std::vector<int>, std::size_t> by_members;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    auto m = outcomes[i].members;
    std::sort(m.begin(), m.end());
    by_members[m] = i;
  }
  std::vector<const GroupOutcome*> out(plan.groups.size(), nullptr);
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    if (i < outcomes.size() && outcomes[i].members == plan.groups[i]) {
      out[i] = &outcomes[i];
      continue;
    }
    auto m = plan.groups[i];
    std::sort(m.begin(), m.end());
    auto it = by_members.find(m);
    if (it == by_members.end())
      throw std::invalid_argument("planner: no outcome for group " + std::to_string(i) + " of round " +
                                  std::to_string(plan.id));
    out[i] = &outcomes[it->second];
  }
  return out;
}

// Slow edges open link suspicions, except in groups that time edges timed before: a retest's or a
// certification's own stragglers would open new suspicions as fast as the old are settled.
bool opens_suspicions(const Planner::Impl& s, const Tag& t) {
  if (t.kind == Tag::LinkRetest || t.kind == Tag::RowRetest || t.kind == Tag::UplinkCheck) return false;
  if (t.kind != Tag::ItemTest) return true;
  const auto it = s.search.items.find(t.item);
  return it == s.search.items.end() || it->second.origin != "cert";
}

}  // namespace

void Planner::Impl::open_story_entry(const RoundPlan& plan) {
  story.rounds.push_back({{"round", plan.id}, {"kind", plan.kind}, {"reason", plan.reason},
                          {"groups", plan.groups.size()}, {"slow", nlohmann::json::array()},
                          {"lost", nlohmann::json::array()}, {"concluded", nlohmann::json::array()}});
  story.current = &story.rounds.back();
  std::map<std::string, int> sizes;
  for (const auto& g : plan.groups) ++sizes[std::to_string(g.size())];
  (*story.current)["group_sizes"] = sizes;
}

std::vector<Judgement> Planner::Impl::judge(const RoundPlan& plan,
                                            const std::vector<const GroupOutcome*>& out) const {
  std::vector<GroupSample> samples(plan.groups.size());
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    samples[i] = {static_cast<int>(plan.groups[i].size()), cfg.size_bytes, out[i]->value,
                  out[i]->timed_out};
  }
  OutlierConfig rules = cfg.outliers;
  if (plan.id == screen.round) rules.z_cutoff = std::min(rules.z_cutoff, cfg.screen_z_cutoff);
  // A pair figure is one edge timed alone, so its spread is at least the edges' (twice it on a live
  // fabric). A small cluster's pair spread rests on a few figures and may come out at a quarter of
  // that: at 20% noise, 16-node seed 495 judged pair tests 1.28-1.35x slow at z 4.4-5.4 on a
  // history of 8 pair figures spread 0.056, with 178 edges read at 0.2, and named a false node.slow.
  // Half the edges' spread is the floor, so a pair spread measured right is never raised by it.
  // While the pair spread rests on fewer than 28 figures (clusters under 56 nodes, whose pair rounds
  // have fewer), the floor is the edges' whole spread: at 20% noise, 24-node seed 54 judged pair
  // tests 1.55x and 1.46x slow on a spread of 12 pair figures floored at 0.09, with the edges read at
  // 0.18, and reported a healthy node unresolved.
  rules.pair_sigma_floor = kPairFloorOfEdges * edge_sigma();
  rules.shallow_pair_sigma_floor = kShallowPairFloorOfEdges * edge_sigma();
  // Under 16 nodes a round of pairs leaves the pair history shallow (reference_sigma, outliers.cpp).
  rules.shallow_pair_rounds = static_cast<std::size_t>(n / 2) < History::kOwnSpread;
  // With a reference, a pair figure's spread is at least the reference's (a third of the relative
  // cutoff: slow from 1.35x at z_cutoff 4), as a pair judged against the reference itself is. The 12
  // pairs of a round's peers gave a spread of 0.058 at 20% noise, and a healthy node read 1.26x and
  // 1.34x at z 4.0 and 5.4 and was named (24 nodes, seed 101463). A pair repeat spread clearly
  // tighter (below) still caps it.
  if (reference_figure(cfg.outliers, cfg.size_bytes)) {
    const double ref_floor = reference_spread(cfg.outliers);
    rules.pair_sigma_floor = std::max(rules.pair_sigma_floor, ref_floor);
    rules.shallow_pair_sigma_floor = std::max(rules.shallow_pair_sigma_floor, ref_floor);
  }
  // The edges' spread stands for a pair figure's where the two spread alike (the model cluster). On
  // the 12-node testbed they do not: an all-to-all's edges spread 0.34-0.56 (log MAD) with the order
  // peers are served in, while a pair test of the same two nodes repeats within 3%; after the first
  // all-to-all the floor made a 1.95x pair read fine. The repeat spread measures a pair figure's
  // spread directly, and caps the floor where it is clearly tighter.
  if (const auto rep = pair_repeat_sigma()) {
    const double cap = kRepeatFloorMargin * *rep;
    rules.pair_sigma_floor = std::min(rules.pair_sigma_floor, cap);
    rules.shallow_pair_sigma_floor = std::min(rules.shallow_pair_sigma_floor, cap);
  }
  return classify_round(samples, rules, &history);
}

void Planner::observe(const RoundPlan& plan, std::vector<GroupOutcome> outcomes) {
  auto& s = *impl_;
  auto pit = s.book.pending.find(plan.id);
  if (pit == s.book.pending.end()) throw std::invalid_argument("planner: round was not planned or already observed");
  if (pit->second.size() != plan.groups.size()) throw std::invalid_argument("planner: plan does not match the planned round");
  const auto out = match_outcomes(plan, outcomes);
  const std::vector<Tag> tags = std::move(pit->second);
  s.book.pending.erase(pit);

  s.open_story_entry(plan);
  for (const auto* o : out)
    for (int u : o->missing)
      if (u >= 0 && u < s.n) s.mark_lost(u, plan.id);
  auto judged = s.judge(plan, out);

  // A control pair first (strategy_control.cpp): it decides the tests held against the pair history,
  // and whether this round's are held or dropped too.
  const auto pair_history = s.history.reference(2, s.cfg.size_bytes);
  bool refuted = false;
  std::vector<char> vouched(plan.groups.size(), 0);
  // Level controls (a fast core's) are read together, and are no pair tests of their own.
  const bool level_round = s.control.level_wanted;
  if (level_round) {
    std::vector<const GroupOutcome*> level;
    for (std::size_t i = 0; i < plan.groups.size(); ++i)
      if (tags[i].kind == Tag::Control && out[i]->missing.empty()) level.push_back(out[i]);
    s.observe_level(level);
  }
  for (std::size_t i = 0; i < plan.groups.size(); ++i)
    if (!level_round && tags[i].kind == Tag::Control && out[i]->missing.empty()) {
      const auto read = s.observe_control(plan.groups[i], *out[i]);
      refuted = refuted || read == ControlRead::Refuted;
      vouched[i] = read == ControlRead::Vouched;
    }
  const bool shallow = pair_history && pair_history->count < History::kOwnSpread;
  // A control that vouched in this round read the level its round's pair tests were judged against
  // too (strategy_control.cpp, Impl::at_control_level).
  if (std::any_of(vouched.begin(), vouched.end(), [](char v) { return v != 0; }))
    for (std::size_t i = 0; i < plan.groups.size(); ++i)
      if (tags[i].kind == Tag::Resolve) judged[i] = s.at_control_level(judged[i]);

  std::map<int, std::vector<std::pair<Tag, Verdict>>> item_results;
  std::set<int> items_with_lost;
  int dropped = 0;
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    // The survivors' figure of a group with a lost member says nothing: they are tested again.
    const bool has_missing = !out[i]->missing.empty();
    Verdict v = judged[i].verdict;
    // A control read slow says nothing of its members; one that vouched is a pair test as any other.
    if (tags[i].kind == Tag::Control && !vouched[i]) continue;
    if (!has_missing && s.holds(tags[i], plan.groups[i], judged[i], shallow)) {
      if (refuted) ++dropped;
      else s.hold(plan.groups[i], plan.id, *out[i], judged[i]);
      continue;
    }
    if (!has_missing && (tags[i].kind == Tag::Resolve || tags[i].kind == Tag::LinkRetest) &&
        s.pair_in_between(plan.groups[i], judged[i]))
      continue;
    if (!has_missing && tags[i].kind == Tag::Exact) s.record_exact(plan.groups[i], *out[i]);
    else if (!has_missing) v = s.record_outcome(plan.groups[i], plan.id, *out[i], judged[i], opens_suspicions(s, tags[i]));
    if (tags[i].kind != Tag::ItemTest) continue;
    if (has_missing) items_with_lost.insert(tags[i].item);
    else item_results[tags[i].item].emplace_back(tags[i], v);
  }

  if (dropped > 0)
    s.note(std::to_string(dropped) + " pair test(s) of this round read slow against the same history: dropped too");

  s.evaluate_switches(plan.id);
  s.reevaluate_nodes(plan.id);
  s.mark_pair_suspects();
  for (auto& [id, res] : item_results)
    if (!items_with_lost.count(id) && s.search.items.count(id)) strategy::observe_split(s, id, res);
  s.drop_searches_after_uplink(plan.id);
  s.strip_lost_from_items();
  s.update_links();

  s.book.tests += static_cast<std::int64_t>(plan.groups.size());
  ++s.book.observed;
  s.story.current = nullptr;
}

}  // namespace kiln::analysis
