// Rules that scale with the campaign's own noise. The fixed thresholds of the edge and pair rules
// (three slow re-readings, two votes, four slow pair tests) were set for lognormal noise with 0.5%
// stragglers; a fabric with more stragglers, or a campaign with many more suspicions, needs more
// repetition before chance stops explaining a suspicion. The planner measures the base rates on the
// readings it already has and asks, for each rule, how often noise alone would pass it given how
// many suspicions were put to it:
//   edge suspicions   confirmed by k slow re-readings, k = max(3, ceil(log(alpha/opened)/log q)),
//                     q = p_hi / (p_hi + p_lo) from clean edge readings
//   pair-test votes   as many votes as noise (p_pair, slow pair tests between known-good nodes)
//                     cannot give any of the link candidates, nor any of the suspect nodes
//   intermittent      a node's slow pair tests beyond a binomial tail at p_pair over the nodes tested
//   hot node          far more slow edge readings than the base rate predicts: node evidence (a mildly
//                     slow node whose row median stays below the row cutoff), its suspicions dropped
//   leaning node      up to 256 nodes, far more of its rows leaning (median edge 1 sigma and 1.1x) than
//                     the others' rows: a binomial tail at their rate (1% at least), over n x rounds looks
// docs/localization.md, the planner, item 9.
#include <algorithm>
#include <cmath>
#include <limits>

#include "common/findings.hpp"
#include "common/text.hpp"
#include "coordinator/analysis/noise.hpp"
#include "coordinator/analysis/planner_impl.hpp"

namespace kiln::analysis {

namespace {

// Fewest distinct slow partners for a hot node. Where noise predicts about one, the Poisson rule
// alone fired on 9 or 10, which a healthy node reached in 1 of 1,000 campaigns at N=48 and 100 (its
// slow readings come in clumps of 4-5 within one group, not one by one as the rule assumes); a 1.1x
// node reads 20-30 in the same readings. So the rule cannot name a node of a cluster of 12 or fewer
// (its rows and pair tests do).
constexpr int kMinHotPartners = 12;
// The hot rule's false rate per campaign (hot_looks): the target is no false finding in 1,000.
constexpr double kHotAlpha = 1e-4;
// The leaning-row rule (mark_leaning_nodes; up to kLeanCluster nodes, where a node's rows are too few
// for the hot rule's edge counts): fewest leaning rows; the lowest base rate it assumes; fewest rows of
// the others before their rate is one; its false rate per campaign, over n x rounds looks.
constexpr int kMinLeanRows = 3;
constexpr double kMinLeanRate = 0.01;
constexpr long kMinLeanBase = 20;
constexpr double kLeanAlpha = 1e-4;
// Votes a hot node gets, one per distinct partner of a slow edge: as many as a slow row's.
constexpr std::size_t kMaxHotVotes = 32;
// Pair tests between known-good nodes before their slow fraction is a base rate.
constexpr long kMinPairTests = 50;
// The pair rate where fewer were run and none of them read slow (beyond_noise): between what 5% noise
// gives (0.08% of the pair tests of healthy 8-node campaigns) and none.
constexpr double kPairPrior = 2e-4;
// The least rate at which noise makes a row slow: healthy clusters of 8 and 13 nodes read 3 slow
// rows in 11,970 and 1 in 15,586, at 5% and 20% noise alike (where 2.7-3.1% of their pair tests
// read slow at 20%, 0.08% at 5%). The others' own fraction, where higher, is the rate.
constexpr double kRowPrior = 2.5e-4;
// Clean edge readings before their fractions are base rates.
constexpr long kMinEdgeReadings = 1000;
// The edge confirm rule's false rate per campaign (edge_readings_needed).
constexpr double kEdgeReadingsAlpha = 1e-5;
// The intermittent rule's false rate per campaign, split over the nodes tested
// (significant_intermittent).
constexpr double kIntermittentAlpha = 1e-4;

// The hot rule looks at every node after every round, so its level is split over n x rounds looks,
// at kHotAlpha per campaign. Split over the n nodes alone, at 1% it named a healthy node in 1 of 200
// campaigns at 4,096 nodes (5% noise, seed 151: 15 slow edges of 255 in one row of round 2, where
// noise predicts 2.4; a Poisson tail of 3e-8, among some 120,000 row readings).
double hot_looks(int n, std::int64_t round) {
  return static_cast<double>(n) * static_cast<double>(std::max<std::int64_t>(1, round));
}

std::string percent(double p) {
  const long tenths = std::lround(1000.0 * p);
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + "%";
}

}  // namespace

void Planner::Impl::record_noise(const EdgeReading& r) {
  for (auto [a, b] : r.slow_links)
    if (auto it = links.find({a, b}); it == links.end() || it->second.edge_slow == 0) ++noise.opened;
  for (const auto& e : r.clean) {
    ++noise.readings;
    if (e.level < 0) ++noise.fast;
    if (r.suspect && !e.known) ++noise.open_readings;
    for (auto [u, v] : {std::pair{e.a, e.b}, std::pair{e.b, e.a}}) {
      ++noise.reads[u];
      if (e.level == 2) noise.add_high(u, v);
    }
    if (e.level == 2) ++noise.slow;
  }
}

double Planner::Impl::edge_slow_rate() const {
  return noise.readings >= kMinEdgeReadings ? static_cast<double>(noise.slow) / noise.readings : -1.0;
}

double Planner::Impl::edge_fast_rate() const {
  return noise.readings >= kMinEdgeReadings ? static_cast<double>(noise.fast) / noise.readings : -1.0;
}

namespace {
// The pair base rate from counts: -1 (unknown) below kMinPairTests.
double pair_rate_of(long tests, long slow) {
  return tests >= kMinPairTests ? static_cast<double>(slow) / static_cast<double>(tests) : -1.0;
}

// The rate of the pair tests a suspect was not in (a node's others, a link's neither end): at least
// half a test in their number; below kMinPairTests of them, their slow ones over kMinPairTests, or
// kPairPrior where none read slow.
double others_pair_rate(long tests, long slow) {
  const double rate = pair_rate_of(tests, slow);
  if (rate >= 0.0) return std::max(rate, 0.5 / static_cast<double>(tests));
  return slow > 0 ? static_cast<double>(slow) / static_cast<double>(kMinPairTests) : kPairPrior;
}
}  // namespace

// Pair tests between known-good nodes, but a pair-only link's retests (LinkData::pair_only): they
// are its own record, and a capped link read slow in twenty retests made the base rate 0.5, so it
// asked 64 votes and was retested to round 52 (N=100). The test that opened it counts, as it does
// in its ends' records until the link is confirmed (pair_records): leaving it out made two
// stragglers in 100 pair tests look beyond noise for a node in Full mode.
bool Planner::Impl::base_rate_pair(const PairTest& t) const {
  if (!good(t.a) || !good(t.b)) return false;
  if (pair_only_links == 0) return true;  // no lookup per test where there are none (past 256 nodes)
  const auto it = links.find(std::minmax(t.a, t.b));
  return it == links.end() || !it->second.pair_only_retest(t.round);  // the test that opened it counts
}

double Planner::Impl::pair_slow_rate() const {
  if (pair_rate_memo_on && pair_rate_memo) return *pair_rate_memo;
  long tests = 0, slow = 0;
  for (const auto& t : pair_tests)
    if (base_rate_pair(t)) ++tests, slow += t.slow ? 1 : 0;
  const double rate = pair_rate_of(tests, slow);
  if (pair_rate_memo_on) pair_rate_memo = rate;
  return rate;
}

// The floor (3) is the rule calibrated for 0.5% stragglers; noise.hpp's repeats_needed raises it.
// At kEdgeReadingsAlpha per campaign, not kAlpha: the rule is exact for i.i.d. readings (q^k per
// suspicion), and at 1,024 nodes noise opens about 8,000 suspicions, so kAlpha's 1% was one false
// link.slow per hundred healthy campaigns, as measured (1 in 100 at 5% noise); the target is none
// in 1,000. At 1e-3 it asked 4 readings at 4,096 nodes (80,000 suspicions, 7e-4 per campaign by
// design) and gave 2 false links in about 900 campaigns at 3,000-4,096 nodes (seed 68
// intermittent, seed 150 healthy): 1e-3 per campaign is one in 1,000, not none. At 1e-4 it asked 5
// at 16,384 nodes under 10% noise (1.18 M suspicions, q 0.0087: 5.8e-5 per campaign by design) and
// gave one false link in 1,046 healthy campaigns there (seed 9224: five retests at z 2.57-2.98); at
// 1e-5 it asks 6 (2e-6).
int Planner::Impl::edge_readings_needed() const {
  const double q = edge_slow_odds();
  if (q < 0.0) return 3;
  return noise::repeats_needed(q, static_cast<double>(noise.opened), 3, kEdgeReadingsAlpha);
}

// q = p_hi / (p_hi + p_lo): a noise reading that decides an edge suspicion confirms rather than
// clears it. -1 while the rates are unknown or no reading was slow.
double Planner::Impl::edge_slow_odds() const {
  const double hi = edge_slow_rate(), lo = edge_fast_rate();
  return hi <= 0.0 || lo < 0.0 ? -1.0 : hi / (hi + lo);
}

// Forgiving one fast reading after kForgivenAfter slow ones raises the chance that noise confirms a
// suspicion by 1 + (k - kForgivenAfter)(1 - q): under 5% noise still within kEdgeReadingsAlpha at
// 16,384 nodes (k = 6) and at 1,024 (k = 5, 8,000 suspicions), past it at 4,096 (k = 5, 80,000),
// where forgiving would ask a sixth reading of every link. So it forgives only where it asks no more
// readings than the rule that forgives nothing.
bool Planner::Impl::forgives_low() const {
  const double q = edge_slow_odds();
  if (q < 0.0) return false;
  return noise::repeats_needed_one_miss(q, static_cast<double>(noise.opened), 3, kForgivenAfter,
                                        kEdgeReadingsAlpha) <= edge_readings_needed();
}

// An edge read again in groups that open no suspicion (up to kSightingReads looks) becomes one after
// k slow readings, k the fewest at which noise would open less than one such suspicion among all
// the cluster's edges, at the measured slow rate (1% until it is known).
int Planner::Impl::sightings_needed() const {
  constexpr int kSightingReads = 6;
  const double p = std::max(edge_slow_rate(), 0.01);
  const double edges = 0.5 * n * (n - 1.0);
  int k = 2;
  while (k < kSightingReads && edges * noise::binomial_tail(k, kSightingReads, p) > 1.0) ++k;
  return k;
}

int Planner::Impl::link_votes_needed() const {
  return noise::votes_needed(pair_slow_rate(), static_cast<double>(links.size()), cfg.votes);
}

// Nodes slow in a pair test: the suspects the node rule is put to (node_votes_needed, votes_for).
int Planner::Impl::nodes_with_slow_pairs() const {
  return static_cast<int>(std::count_if(nodes.begin(), nodes.end(), [](const NodeData& d) { return !d.slow_pairs.empty(); }));
}

// Every node slow in a pair test is put to the node rule; at 16,384 nodes the screen makes a hundred
// or more such suspects from stragglers alone, and two slow retests of one of them are then likely.
int Planner::Impl::node_votes_needed() const {
  if (exact.active) return cfg.votes;
  const int suspects = nodes_with_slow_pairs();
  // At most one vote more than configured: under a congested uplink most cross-leaf pair tests are
  // slow, which is no noise rate, and the switch verdicts need the node verdicts it makes.
  return std::min(cfg.votes + 1, noise::votes_needed(pair_slow_rate(), static_cast<double>(suspects), cfg.votes));
}

// The rate is the other nodes' pair tests: an intermittently slow node paired again and again would
// otherwise raise the rate it is judged against until its own slow tests looked like noise.
// Below kMinPairTests of them there is no base rate. Where the others' tests were slow too, their
// slow count over kMinPairTests tests (a rate that errs low) is the rate: with 2 slow tests counted
// the same in 3 tests as in 16 however noisy the campaign, at 20% noise healthy clusters of 8, 12
// and 16 nodes reported a node "intermittently slow (2 of 8 tests)", unresolved, in 22, 26 and 18
// of 1,000. Where they were all fine, the rate is kPairPrior: taken as none, any slow test past the
// screen's was beyond noise, and at 20% noise a healthy node slow in its screen and one straggling
// pair test, then fine 11 times, was "intermittently slow (2 of 13 tests)" in 3 and 4 of 1,000
// healthy campaigns at 9 and 13 nodes. At kPairPrior one slow test past the first is within noise,
// two of about ten are not.
// Rows are weighed at their own rate (the others' slow fraction of rows, at least kRowPrior): a
// 3x node slow in half the rounds at 8 nodes, slow in 3 of 10 rows at 20% noise, was within noise
// when its rows counted at a pair test's rate. The record is beyond noise when its pair tests
// alone, its rows alone, or both together are, each at half the level.
bool Planner::Impl::beyond_noise(int u, const PairRecord& r, double level) const {
  if (exact.active || noise.pair_rate == 0.0) return true;
  // The per-node counts exist once count_pair_rates has run (each round, from mark_intermittent).
  if (noise.node_pair_tests.size() != static_cast<std::size_t>(n)) return true;
  double pair_tail = 1.0, row_tail = 1.0;
  if (const int slow_pairs = r.slow - r.row_slow; slow_pairs > 0) {
    const long tests = noise.pair_tests - noise.node_pair_tests[u];
    const long slow = noise.pair_slow - noise.node_pair_slow[u];
    double rate = others_pair_rate(tests, slow);
    // Nor below what the measured spread gives its slow tests (noise_vote_rate): a healthy node of 9
    // at 20% noise, slow at 1.39x and 1.46x against the reference's floor, was "intermittently slow (3
    // of 13 tests)", unresolved, while the other nodes' few pair tests had all read fine (seed 3381).
    rate = std::max(rate, noise_vote_rate(u));
    pair_tail = noise::binomial_tail(slow_pairs, r.tests - r.row_tests, rate);
  }
  if (r.row_slow > 0) {
    const auto& d = nodes[u];
    const long tests = noise.row_tests - (d.bad ? 0 : d.rows);
    const long slow = noise.row_slow - (d.bad ? 0 : d.slow_rows);
    const double rate = std::max(kRowPrior, tests > 0 ? static_cast<double>(slow) / static_cast<double>(tests) : 0.0);
    row_tail = noise::binomial_tail(r.row_slow, r.row_tests, rate);
  }
  // Either kind alone, or both together (Fisher's combination of two tails, q (1 - ln q) for their
  // product q), at half the level each way.
  const double both = pair_tail * row_tail;
  const double combined = both > 0.0 ? both * (1.0 - std::log(both)) : 0.0;
  return std::min({pair_tail, row_tail, combined}) < level / 2.0;
}

// At kIntermittentAlpha over the nodes tested, and without the slow test that made the node a
// suspect: the screen picks the nodes whose first test was slow, so that test is no evidence
// against noise. At noise::kAlpha, counting it, a healthy node of 1,000 (10% noise, seed 257) was
// "intermittently slow (4 of 10 tests)": a tail of 6.4e-6, within 0.01 over the nodes tested,
// where 3 of 9 (1.9e-4) is not within 1e-4 over any number tested.
bool Planner::Impl::significant_intermittent(int u, const PairRecord& r, int tested) const {
  if (r.slow < 1 || r.tests < 1) return false;
  PairRecord after = r;
  if (r.first_slow_counted) --after.slow, --after.tests;
  return beyond_noise(u, after, kIntermittentAlpha / std::max(1, tested));
}

void Planner::Impl::count_pair_rates() {
  noise.pair_tests = noise.pair_slow = 0;
  noise.node_pair_tests.assign(static_cast<std::size_t>(n), 0);
  noise.node_pair_slow.assign(static_cast<std::size_t>(n), 0);
  for (const auto& t : pair_tests) {
    if (!base_rate_pair(t)) continue;
    ++noise.pair_tests;
    ++noise.node_pair_tests[t.a], ++noise.node_pair_tests[t.b];
    if (!t.slow) continue;
    ++noise.pair_slow;
    ++noise.node_pair_slow[t.a], ++noise.node_pair_slow[t.b];
  }
  noise.pair_rate = pair_rate_of(noise.pair_tests, noise.pair_slow);
  noise.row_tests = noise.row_slow = 0;
  for (const auto& d : nodes)
    if (!d.bad) noise.row_tests += d.rows, noise.row_slow += d.slow_rows;
}

// A node with far more slow edge readings than the others' base rate predicts is slow, even when no
// single row of it is (a 1.1x node reads z ~2 on its edges, below the row cutoff, and opens a
// suspicion on a quarter of them). Its suspicions are its own slowness: dropped.
void Planner::Impl::mark_hot_nodes(std::int64_t round) {
  if (exact.active) return;
  for (int u = 0; u < n; ++u) {
    auto& d = nodes[u];
    if (!active(u) || d.hot) continue;
    const long reads = noise.readings - noise.reads[u], high = noise.slow - noise.high(u);
    // The others' rate per reading: a node's distinct slow partners can only be fewer than its slow
    // readings, so this over-predicts them (the rule errs towards noise).
    if (reads < kMinEdgeReadings) continue;
    const double rate = static_cast<double>(high) / static_cast<double>(reads);
    if (noise.high(u) < kMinHotPartners ||
        !noise::hot(noise.high(u), noise.reads[u], rate, hot_looks(n, round), 30, kHotAlpha))
      continue;
    d.bad = d.hot = true;
    d.bad_round = round;
    d.hot_expected = rate * noise.reads[u];
    std::vector<int> partners;
    for (int v : noise.high_partners[u])
      if (good(v) && std::find(partners.begin(), partners.end(), v) == partners.end() &&
          partners.size() < kMaxHotVotes)
        partners.push_back(v);
    for (int v : partners) d.slow_pairs.push_back({v, round, 0.0, 0.0});
    const int dropped = explain_links_of(u);
    note(name(u) + " reads slow with " + std::to_string(noise.high(u)) + " distinct peers in " +
         std::to_string(noise.reads[u]) + " edge readings where noise explains " +
         std::to_string(static_cast<int>(std::lround(d.hot_expected))) + ": slow node; " + std::to_string(dropped) +
         " link suspicion(s) on its edges are explained by it");
  }
}

// A node found slow by its own readings (hot, leaning): its undecided link suspicions are its slowness.
int Planner::Impl::explain_links_of(int u) {
  int dropped = 0;
  for (auto* e : link_walk.of(links)) {
    auto& [key, l] = *e;
    if ((key.first == u || key.second == u) && !l.confirmed && !l.cleared) l.cleared = true, ++dropped;
  }
  return dropped;
}

// A node's leaning rows against the others' rate of them: the binomial tail, 1 where the rule does
// not apply (too large a cluster, too few rows of its own or of the others).
double Planner::Impl::lean_tail(int u) const {
  const auto& d = nodes[u];
  if (exact.active || n > kLeanCluster || d.lean_rows < 2) return 1.0;
  const long rows = noise.rows - d.rows, lean = noise.lean_rows - d.lean_rows;
  if (rows < kMinLeanBase) return 1.0;
  const double rate = std::max({static_cast<double>(lean) / static_cast<double>(rows),
                                0.5 / static_cast<double>(rows), kMinLeanRate});
  return noise::binomial_tail(d.lean_rows, d.rows, rate);
}

// A node whose all-to-all rows lean slow (median edge z 1 or more, and 1.1x or slower) far more often
// than the others' rows do is slow, though no one row of it reaches the slow-row cutoff: a port
// capped at 2x reads 1.5x in its rows, at 20% noise a level of 1.1-1.7 where the cutoff is 2.
void Planner::Impl::mark_leaning_nodes(std::int64_t round) {
  if (exact.active || n > kLeanCluster) return;
  for (int u = 0; u < n; ++u) {
    auto& d = nodes[u];
    if (!active(u) || d.lean_rows < kMinLeanRows || lean_tail(u) >= kLeanAlpha / hot_looks(n, round)) continue;
    const long rows = noise.rows - d.rows, lean = noise.lean_rows - d.lean_rows;
    d.bad = d.leaning = true;
    d.bad_round = round;
    d.lean_expected = static_cast<double>(lean) / static_cast<double>(rows) * d.rows;
    const int dropped = explain_links_of(u);
    note(name(u) + " leans slow in " + std::to_string(d.lean_rows) + " of " + std::to_string(d.rows) +
         " all-to-all rows where the others' rate explains " + short_number(std::round(d.lean_expected * 100) / 100) +
         ": slow node; " + std::to_string(dropped) + " link suspicion(s) on its edges are explained by it");
  }
}

kiln::Finding Planner::Impl::leaning_finding(int u) const {
  const auto& d = nodes[u];
  return kiln::make_finding(
      kiln::Code::NodeSlow, {"node", name(u)},
      name(u) + " leans slow in " + std::to_string(d.lean_rows) + " of its " + std::to_string(d.rows) +
          " all-to-all rows (median edge 1 sigma and 1.1x or slower), where the others' rate explains " +
          short_number(std::round(d.lean_expected * 100) / 100),
      {{"leaning_rows", d.lean_rows}, {"rows", d.rows}, {"expected_from_noise", d.lean_expected},
       {"fast_tests", d.fast}, {"confirmed_round", d.bad_round}},
      0.9);
}

// A link candidate's slow pair tests past the first (the one that opened it), beyond a binomial tail
// over the candidates with pair tests, and at least as many as its fast ones, at the rate of the
// pair tests that touch neither end (others_pair_rate, as beyond_noise takes a node's; at least
// kPairPrior). Past 256 nodes a pair candidate is retested as a pair only, and one between a node slow in
// half the rounds and its screen partner read slow in 4 retests of 6 while the node was busy with
// them; the retests ran out, the rest certified, and nothing was reported (300 nodes, 5% noise,
// seed 15: 7 campaigns in 100 at 300 nodes, 7-9 at 257-512, silent).
// The rate is that of the pair tests neither end was in: the link's own slow tests made the
// campaign's rate 1.5-1.9% at 512 nodes (4 of some 270 pair tests), where the others read 0.2-0.4%,
// and such a node's link, slow in 3 retests and fast in 3 (as often as not, a node slow in half the
// rounds), was dropped silent (512 nodes, 5% noise, seeds 29, 33, 90: 93 -> 96 of 100 accounted).
bool Planner::Impl::pair_retests_beyond_noise(int a, int b, const LinkData& l, std::size_t retested) const {
  const int slow = static_cast<int>(l.slow_pair_tests.size()) - 1;
  if (slow < 2 || slow < l.fast_pair_tests) return false;
  long tests = 0, slow_others = 0;
  for (const auto& t : pair_tests)
    if (t.a != a && t.a != b && t.b != a && t.b != b && base_rate_pair(t)) ++tests, slow_others += t.slow ? 1 : 0;
  const double rate = std::max(others_pair_rate(tests, slow_others), kPairPrior);
  const double candidates = std::max<double>(1.0, static_cast<double>(retested));
  return noise::binomial_tail(slow, slow + l.fast_pair_tests, rate) < kIntermittentAlpha / candidates;
}

bool Planner::Impl::noise_single(const LinkData& l) const {
  return l.edge_slow == 1 && l.slow_pair_tests.empty() && l.group_votes == 0;
}

nlohmann::json Planner::Impl::noise_story() const {
  nlohmann::json j = {{"edge_readings", noise.readings}, {"suspicions_opened", noise.opened},
                      {"edge_readings_needed", edge_readings_needed()}, {"link_votes_needed", link_votes_needed()},
                      {"node_votes_needed", node_votes_needed()}, {"edge_low_forgiven", forgives_low()}};
  if (const double p = edge_slow_rate(); p >= 0.0)
    j["edge_slow_rate"] = p, j["edge_fast_rate"] = edge_fast_rate(),
    j["summary"] = "edge readings slow by noise: " + percent(p);
  if (const double p = pair_slow_rate(); p >= 0.0) j["pair_slow_rate"] = p;
  if (!book.out_of_rounds) return j;
  const long singles = undecided_singles();
  const double expected = std::max(0.0, edge_slow_rate()) * static_cast<double>(noise.open_readings);
  j["undecided_single_reading_suspicions"] = singles;
  j["undecided_expected_from_noise"] = expected;
  if (!noise_unresolved())
    j["undecided_note"] = std::to_string(singles) + " link suspicion(s) with one slow reading each were left " +
                          "undecided; noise opens about " + std::to_string(std::lround(expected)) +
                          ": not reported as findings";
  return j;
}

long Planner::Impl::undecided_singles() const {
  long singles = 0;
  for (const auto* e : link_walk.of(links)) {
    const auto& [key, l] = *e;
    if (!l.confirmed && !l.cleared && good(key.first) && good(key.second) && noise_single(l)) ++singles;
  }
  return singles;
}

// Noise opens a suspicion on a fraction p_hi of the readings that could open one; more undecided
// single-reading suspicions than that, well past a Poisson tail, are something noise does not do.
std::optional<kiln::Finding> Planner::Impl::noise_unresolved() const {
  const long singles = undecided_singles();
  const double p = edge_slow_rate();
  if (singles == 0 || p < 0.0 || noise.open_readings > std::numeric_limits<int>::max() ||
      !noise::hot(static_cast<int>(singles), static_cast<int>(noise.open_readings), p, 1.0))
    return std::nullopt;
  const double expected = p * static_cast<double>(noise.open_readings);
  const std::string why = "the round budget (max_rounds=" + std::to_string(book.max_rounds) + ") ran out";
  return kiln::make_finding(
      kiln::Code::LocalizeUnresolved, {"links", std::to_string(singles) + " edges"},
      std::to_string(singles) + " link suspicions with one slow edge reading each are undecided, where noise " +
          "opens about " + std::to_string(std::lround(expected)) + "; " + why,
      {{"suspicions", singles}, {"expected_from_noise", expected}, {"edge_slow_rate", p},
       {"stopped", why}, {"rounds", book.observed}},
      0.5);
}

kiln::Finding Planner::Impl::hot_finding(int u) const {
  const auto& d = nodes[u];
  nlohmann::json partners = nlohmann::json::array();
  for (const auto& s : d.slow_pairs)
    if (good(s.partner)) partners.push_back(name(s.partner));
  return kiln::make_finding(
      kiln::Code::NodeSlow, {"node", name(u)},
      name(u) + " reads slow with " + std::to_string(noise.high(u)) + " distinct peers in " +
          std::to_string(noise.reads[u]) + " edge readings, where the campaign's noise explains " +
          std::to_string(std::lround(d.hot_expected)),
      {{"slow_edge_peers", noise.high(u)}, {"edge_readings", noise.reads[u]},
       {"expected_from_noise", d.hot_expected}, {"slow_with_known_good", partners},
       {"fast_tests", d.fast}, {"confirmed_round", d.bad_round}},
      0.9);
}

}  // namespace kiln::analysis
