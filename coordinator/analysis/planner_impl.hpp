// Internal state of the Planner. Not part of the API.
//
// Structure: Planner::Impl owns all the state; each round type is a strategy unit (strategies.hpp,
// strategy_*.cpp) that reads the state and adds groups to the round being drafted, or nothing.
//   next()      asks the strategies in priority order: all-pairs (Full) or screen (Adaptive) open
//               the campaign, then resolve, split and certify share each later round. planner.cpp
//   observe()   turns a round's outcomes into evidence, then routes each search item's outcome back
//               to the split strategy (which passes slow certification groups on to certify).
//               planner.cpp, evidence.cpp
//   findings()  reads the evidence alone. report.cpp
//
// The state, by what it is about (the per-node, link and pair-test records: planner_records.hpp):
//   Setup        what the planner was given: node count, config, switches, host names
//   Evidence     what the rounds have shown: per-node data, link candidates, slow groups, and the
//                history of fast figures that later rounds are judged against
//   RoundBook    round bookkeeping: ids, counts, the round planned but not observed, the end
//   ScreenState, CircleState, SearchState (search items), CertState (certification sweep):
//                each strategy's own progress
//   Story        the round-by-round story
// Setup and Evidence are bases of Impl, so their fields read as plain names (n, cfg, nodes, links)
// in every unit, report.cpp included.
#pragma once

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <utility>

#include "coordinator/analysis/control_state.hpp"
#include "coordinator/analysis/planner.hpp"
#include "coordinator/analysis/planner_records.hpp"

namespace kiln::analysis {

// What the planner was given. Fixed once the constructor has normalised cfg.
struct Setup {
  int n = 0;
  PlannerConfig cfg;
  std::vector<Switch> topology;
  std::vector<std::string> names;
};

using LinkMap = std::map<std::pair<int, int>, LinkData>;

// The entries of a LinkMap in key order, for walks of every suspicion: at 16,384 nodes there are a
// million, and walking the tree itself (a pointer chase per step) was a quarter of a trial in
// four walks a round, and a tenth again in the walks of const methods and of the resolve
// strategy. Rebuilt on use once the map has grown (nothing erases from it); a copy starts empty,
// since its pointers would be the other map's.
class LinkWalk {
 public:
  using Entry = LinkMap::value_type;
  LinkWalk() = default;
  LinkWalk(const LinkWalk&) {}
  LinkWalk& operator=(const LinkWalk&) {
    entries_.clear();
    return *this;
  }
  std::span<Entry* const> of(LinkMap& links) {
    refresh(links);
    return entries_;
  }
  std::span<const Entry* const> of(const LinkMap& links) const {
    refresh(links);
    return {entries_.data(), entries_.size()};
  }

 private:
  // The map is the Evidence's own, not const: the const overloads hand out only const entries.
  void refresh(const LinkMap& links) const {
    if (entries_.size() == links.size()) return;
    entries_.clear();
    entries_.reserve(links.size());
    for (const auto& e : links) entries_.push_back(const_cast<Entry*>(&e));
  }
  mutable std::vector<Entry*> entries_;
};

// What the rounds have shown, whichever strategy planned them. Findings are made from this alone.
struct Evidence {
  Evidence(int n, bool size_invariant)
      : nodes(static_cast<std::size_t>(n)), history(size_invariant), noise(n) {}
  std::vector<NodeData> nodes;                     // per node, indexed by node
  LinkMap links;                                   // link candidates, keyed (low, high)
  LinkWalk link_walk;                              // links' entries in order: link_walk.of(links)
  std::vector<SlowGroup> slow_groups;              // slow groups of more than two
  std::vector<PairTest> pair_tests;                // every judged pair test, in order
  std::vector<SwitchVerdict> slow_switches;        // switches whose crossing traffic is slow
  std::map<int, std::int64_t> leaf_shaped_round;  // leaf -> the round a group's edges first showed it slow across
  std::vector<int> clean_cover;                    // members of the largest fast group, sorted
  History history;                                 // fast figures, the baseline of later rounds
  bool edges_seen = false;                         // some group came back with per-edge figures
  NoiseCounts noise;                               // base rates, evidence_noise.cpp
  std::map<std::pair<int, int>, int> sightings;    // slow readings of edges no suspicion holds
  std::vector<double> edge_spread;                 // edge deviations of groups read so far, pooled
  int pair_only_links = 0;                         // links marked LinkData::pair_only
  // pair_slow_rate() kept while update_links walks the links, which changes none of what it reads
  // but a link turned pair-only (mark_pair_only drops it): it walks every pair test, and every
  // pair-only link asked it twice per round (a tenth of an 8,192-node trial).
  bool pair_rate_memo_on = false;
  mutable std::optional<double> pair_rate_memo;
  std::uint64_t edge_spread_seen = 0;
  double pair_spread = 0.0;  // pair_noise() as of the last reevaluate_nodes (noise_vote_rate)
  // Fast cores read apart from their surroundings by less than z_cutoff spreads (fast_core,
  // evidence_edges.cpp): a core read so again, the same members, counts.
  std::set<std::vector<int>> weak_cores;
};

// Round bookkeeping: which round comes next, what has been seen, and why the planner stopped.
struct RoundBook {
  std::int64_t next_id = 1;
  std::int64_t observed = 0;
  std::int64_t tests = 0;   // groups observed
  std::int64_t max_rounds = 0;
  std::map<std::int64_t, std::vector<Tag>> pending;  // planned, not yet observed: one tag per group
  bool finished = false;
  bool out_of_rounds = false;  // stopped by max_rounds: what is undecided is reported unresolved
  std::string finish_note;
};

struct ScreenState {
  bool done = false;
  std::int64_t round = -1;  // judged with the screen's lower z cutoff
};

// Full mode's circle method.
struct CircleState {
  std::vector<int> order;  // node indices, padded with -1 (sits out) to an even length
  int round = 0;           // circle rounds planned
  bool done = false;
};

// Small clusters (fewer than PlannerConfig::exact_below nodes) are judged exactly: every pair by the circle
// method, repeated, then each pair against the rest with a robust spread (strategy_exact.cpp).
struct ExactState {
  static constexpr int kRepeats = 3;      // circle sweeps: every pair at least this often
  static constexpr int kMaxRepeats = 9;   // a pair near the cutoff is retested up to this often
  bool active = false;
  int sweeps = 0;                         // circle sweeps completed
  int circle_round = 0;                   // rounds planned in the current sweep
  std::vector<int> order;                 // circle order, padded with -1 to an even length
  std::map<std::pair<int, int>, std::vector<double>> logs;  // log cost per repeat, keyed (low, high)
  bool done = false;
  std::int64_t done_round = -1;
};

// The group-testing search: items of candidate pairs (strategy_split.cpp).
struct SearchState {
  std::map<int, Item> items;
  int next_item_id = 0;
  bool launched = false;        // the all-to-all over known-good nodes has been planned
  std::size_t idle_tested = 0;  // size of the last sweep over nodes idle during a search
  // With per-edge figures and more known-good nodes than one timed group holds: rounds of groups
  // (pairs of blocks) that together time every edge among them (strategy_split.cpp).
  // The second pass reads every edge again, for the suspicions of the first: it opens none (a
  // straggler is 0.5% of edges), and decides most.
  std::vector<std::vector<std::vector<int>>> cover;
  std::size_t cover_next = 0;
  std::size_t cover_rereads_from = 0;  // first round of the second pass
  // Past 1,024 nodes the cover is one pass over an affine plane (no second pass). While it runs,
  // suspects wait for it (their rows are read in it), so every good node is in every round; a good
  // node left out of a round anyway, or a cover group searched on its figure alone, is counted, and
  // certification then runs as usual.
  bool cover_affine = false;
  int cover_dropped = 0;
  // After the affine cover: how many suspicions with one slow reading were due a first retest in the
  // round the budget ran out (strategy_resolve.cpp), noted once; they stay noise singles.
  long unretested = 0;
};

// Clusters of at most this many nodes fit one group timed edge by edge: there the planner looks at
// every node again after certification (strategy_certify.cpp) and retests pair candidates inside
// all-to-all groups (strategy_resolve.cpp). Larger clusters put each node in many tests anyway, and
// there the pair screen's thousands of candidates are cheaper to settle as pairs.
inline constexpr int kSmallEdgeCluster = 256;
// The leaning-node rule (evidence_noise.cpp) runs up to this many nodes; past it rows are not counted
// as leaning at all (read_edges).
inline constexpr int kLeanCluster = kSmallEdgeCluster;

// Certification sweep: rounds of groups that together hold every pair of good nodes except the
// candidate links. rounds is rebuilt whenever the candidates or the good set change.
struct CertState {
  std::vector<std::vector<std::vector<int>>> rounds;
  std::size_t next = 0;
  int attempts = 0;
  // Every pair of good nodes has been tested (or certification gave up): from now on a slow group
  // explained by one candidate alone is a vote for that link.
  bool certified = false;
  std::vector<long> signature;  // good set and candidates the current sweep was built for
  int failures = 0;             // certification groups that came back slow
  int repeats = 0;              // look-again rounds after the sweep (strategy_certify.cpp)
};

struct Story {
  nlohmann::json rounds = nlohmann::json::array();
  nlohmann::json* current = nullptr;    // entry of the round being observed
  std::vector<std::string> early_notes;  // conclusions before any round was observed
};

// evidence_switch.cpp: a switch verdict's evidence and finding, shared with strategy_exact.cpp.
nlohmann::json switch_evidence(int inside, int inside_slow, int cross, int cross_slow, double slowness);
SwitchVerdict uplink_verdict(const std::vector<Switch>& topo, std::vector<int> leaves, std::int64_t round,
                             nlohmann::json ev);
kiln::Finding switch_finding(const SwitchVerdict& v);

struct Planner::Impl : Setup, Evidence {
  // One stream for every shuffle, drawn in the order the strategies run, so a seed replays a
  // campaign exactly.
  std::mt19937_64 rng;
  RoundBook book;
  ScreenState screen;
  CircleState circle;
  ExactState exact;
  SearchState search;
  CertState cert;
  Story story;
  int uplink_checks = 0;  // strategy_uplink.cpp
  ControlState control;   // strategy_control.cpp

  Impl(int n_, PlannerConfig c, std::vector<Switch> topo, std::vector<std::string> nm);

  // planner.cpp
  bool good(int u) const { return active(u) && nodes[u].fast > 0; }
  bool active(int u) const { return !nodes[u].lost && !nodes[u].bad && nodes[u].slow_switch < 0; }
  std::vector<int> short_row_partner(int u, const EdgeReading& r) const;  // evidence_edges.cpp
  std::string name(int u) const;
  std::string link_id(int a, int b) const;
  void note(const std::string& s);
  void open_story_entry(const RoundPlan& plan);
  std::vector<Judgement> judge(const RoundPlan& plan,
                               const std::vector<const GroupOutcome*>& out) const;

  // evidence.cpp
  void record_group(const std::vector<int>& g, std::int64_t round, double figure,
                    const Judgement& j);
  // clean: the group held no slow edge, so it may serve as the clean cover certification starts from.
  void record_fast(const std::vector<int>& members, std::int64_t round, double figure, bool clean = true);
  void record_slow_pair(int a, int b, std::int64_t round, double slowness, double figure, double cut = 0.0);
  void reevaluate_nodes(std::int64_t round);
  void mark_lost(int u, std::int64_t round);
  std::vector<int> nodes_needing_test() const;
  // A link still in play: not cleared, both ends good.
  bool candidate(const LinkMap::value_type& e) const {
    return !e.second.cleared && good(e.first.first) && good(e.first.second);
  }
  std::vector<std::pair<int, int>> candidate_links() const;
  // A mark per node that is an end of a candidate link: one walk of `links`, without the list
  // (at 16,384 nodes a million noise suspicions are candidates).
  std::vector<char> candidate_ends() const;
  bool has_group_evidence(int a, int b) const;
  void update_link(int a, int b, LinkData& l, const std::vector<PairRecord>& rec);  // l: links[{a, b}]
  void count_link_votes();
  bool is_vote(std::int64_t round) const;  // evidence.cpp: a slow test there is a vote
  std::vector<int> voting_partners(int u) const;
  double noise_vote_rate(int u) const;                     // evidence.cpp
  int votes_for(int u, int votes, double suspects) const;  // evidence.cpp
  double pair_noise() const;  // evidence.cpp: a pair figure's spread as measured; 0 while unknown
  int link_pair_votes(const LinkData& l) const;
  int link_votes(const LinkData& l) const;
  void update_links();

  // evidence_edges.cpp
  bool readable_edges(const std::vector<int>& g, const GroupOutcome& o) const;
  EdgeReading read_edges(const std::vector<int>& g, const GroupOutcome& o, bool suspect) const;
  bool core_possible(const GroupOutcome& o) const;  // a fast core may be read in this group
  std::optional<double> over_reference(const GroupOutcome& o) const;  // log(figure / reference), as costs
  // suspect: open link suspicions from slow edges (not in a retest group, whose own stragglers
  // would open new ones as fast as the retests settle the old).
  Verdict record_outcome(const std::vector<int>& g, std::int64_t round, const GroupOutcome& o,
                         const Judgement& j, bool suspect = true);
  void record_edge_evidence(const EdgeReading& r, std::int64_t round, double figure);
  void pool_deviations(const std::vector<double>& devs);
  std::vector<std::pair<int, int>> record_sightings(const EdgeReading& r);
  // A link opened by a slow edge, decided on its later edge readings; false if they cannot yet.
  bool decide_edge_link(int a, int b, LinkData& l);
  static int between_readings(const LinkData& l);  // edge_z between the clearing and the deciding z
  // A reading within the healthy spread (under the clearing z) after this many slow retests does not
  // clear an edge suspicion, where noise asks no more readings for it (forgives_low); a second one
  // does (evidence_edges.cpp).
  static constexpr int kForgivenAfter = 3;
  bool forgiven_low(const LinkData& l) const;  // one such reading was forgiven, none cleared it
  void mark_pair_only(int a, int b, LinkData& l);  // a pair-opened link read fine in a group becomes pair-only
  // A pair-only link (LinkData::pair_only), decided on pair tests alone.
  void decide_pair_only_link(int a, int b);
  int pair_only_votes() const;               // pair retests reading slow that confirm a pair-only link
  int pair_only_retests() const;             // pair retests a pair-only link gets
  int pair_only_votes_of(const LinkData& l) const;  // its slow pair tests after the one that opened it
  void mark_row_cleared(const std::vector<int>& fine);    // evidence_pair_suspects.cpp
  void mark_pair_suspects();                              // evidence_pair_suspects.cpp
  bool pair_tests_against(int u) const;                   // evidence_pair_suspects.cpp
  bool pair_in_between(const std::vector<int>& g, const Judgement& j);  // evidence_pair_suspects.cpp
  std::optional<double> pair_clear_z(const Judgement& j) const;         // evidence_pair_suspects.cpp
  std::optional<nlohmann::json> repeated_slow(int u) const;           // report.cpp
  std::optional<nlohmann::json> repeated_pairs(int u) const;          // report.cpp
  bool pair_suspect_fine(int u) const;                    // evidence.cpp
  void release_pair_checked(int u);          // u is no end of an open pair-only link read slow again
  // A fast pair test of u, at most limit times slower than expected, with a partner but except.
  bool fine_in_pairs(int u, int except, double limit = std::numeric_limits<double>::infinity()) const;
  double pair_only_fine_limit(const LinkData& l) const;
  // Both ends of link a<->b fine in pair tests with other partners, by pair_only_fine_limit(l).
  bool ends_fine_in_pairs(int a, int b, const LinkData& l) const;
  int fast_pair_tests_of(int u) const;

  // strategy_control.cpp: pair tests held against a shallow history, and the control that decides them
  bool holds(const Tag& t, const std::vector<int>& g, const Judgement& j, bool shallow) const;
  void hold(const std::vector<int>& g, std::int64_t round, const GroupOutcome& o, const Judgement& j);
  // A control's figure against the level the held tests were judged against: Vouched (the held
  // tests are recorded), Again (one more control), Refuted (they are dropped, and the controls'
  // figures are the history).
  ControlRead observe_control(const std::vector<int>& g, const GroupOutcome& o);
  void release_held(const std::string& why);
  // A held test's judgement against the level a vouching control read (ControlState::shift).
  Judgement at_control_level(const Judgement& j) const;
  // The level stands: the held tests are recorded, and nothing is held or asked for again.
  void vouch(const std::string& why);
  // The held tests are dropped and the slow controls' figures become the pair history.
  void refute_history(const std::string& why);
  // A retest group judged uniformly slow against a shallow pair history (and dropped): asks for a
  // control of that history's level.
  void ask_control(const Judgement& j);
  // A fast core judged slow rows: without a reference, control pairs of core nodes read the healthy
  // pairs' level (once a campaign).
  void want_level();
  // Those controls' figures against the pair history: a history slower than them by the relative
  // cutoff is forgotten before they are recorded, so they are the history from then on.
  void observe_level(const std::vector<const GroupOutcome*>& controls);

  // evidence_intermittent.cpp
  std::vector<PairRecord> pair_records() const;
  bool watched(int u, const PairRecord& r) const;   // fast once, then slow with clean partners or leaning: test again
  double lean_tail(int u) const;  // evidence_noise.cpp: its leaning rows against the others' rate
  void mark_leaning_nodes(std::int64_t round);
  kiln::Finding leaning_finding(int u) const;
  bool intermittent_unresolved(int u, const PairRecord& r, int tested) const;
  void mark_intermittent(std::int64_t round);

  // evidence_edges.cpp: the pooled spread of the edges read so far; 0 until there are enough of them
  double edge_sigma() const;
  std::optional<double> pair_repeat_sigma() const;  // planner.cpp
  // evidence_noise.cpp: rules that scale with the campaign's measured noise
  void record_noise(const EdgeReading& r);
  double edge_slow_rate() const;           // p_hi: clean edge readings slow
  double edge_fast_rate() const;           // p_lo: clean edge readings fast
  double pair_slow_rate() const;           // p_pair: pair tests between known-good nodes slow; -1 too few
  bool base_rate_pair(const PairTest& t) const;  // a pair test p_pair counts
  double edge_slow_odds() const;           // q = p_hi / (p_hi + p_lo); -1 unknown
  int edge_readings_needed() const;        // slow re-readings that confirm an edge suspicion
  bool forgives_low() const;               // ... the same number with one fast reading forgiven
  int sightings_needed() const;            // slow readings outside opening groups that open one
  int link_votes_needed() const;           // pair-test votes that confirm a link candidate
  int node_votes_needed() const;
  int nodes_with_slow_pairs() const;       // evidence_noise.cpp: the suspects the node rule weighs           // distinct known-good partners that make a node slow
  bool significant_intermittent(int u, const PairRecord& r, int tested) const;
  void count_pair_rates();  // fills noise.pair_rate and the per-node counts
  // A node's slow pair tests beyond what noise does at this level (true while the rate is unknown).
  bool beyond_noise(int u, const PairRecord& r, double level) const;
  void mark_hot_nodes(std::int64_t round);
  void mark_link_hubs(std::int64_t round);  // evidence.cpp
  kiln::Finding hub_finding(int u) const;   // report.cpp
  int explain_links_of(int u);  // clears u's undecided link suspicions; returns how many
  bool noise_single(const LinkData& l) const;  // one slow reading, the one that opened it, and nothing else
  // Its slow pair retests, past the first, among `retested` candidates with pair tests (evidence_noise.cpp).
  bool pair_retests_beyond_noise(int a, int b, const LinkData& l, std::size_t retested) const;
  nlohmann::json noise_story() const;
  long undecided_singles() const;
  // One localize.unresolved for the single-reading suspicions left when rounds ran out, when there
  // are significantly more than noise opens; none otherwise (the story counts them).
  std::optional<kiln::Finding> noise_unresolved() const;
  kiln::Finding hot_finding(int u) const;

  // evidence_switch.cpp
  void evaluate_switches(std::int64_t round);
  std::vector<char> declared_leaves() const;
  void declare_uplink(const std::vector<int>& leaves, std::int64_t round, nlohmann::json ev);
  bool explain_leaf_rows(const GroupOutcome& o, EdgeReading& r, std::int64_t round);
  void drop_searches_after_uplink(std::int64_t round);
  std::vector<kiln::Finding> switch_findings() const;

  // strategy_split.cpp: search items, which the screen and certification open as well
  int add_item(Item it);
  void drop_item(int id);
  void strip_lost_from_items();

  // strategy_exact.cpp
  void record_exact(const std::vector<int>& g, const GroupOutcome& o);
  std::vector<kiln::Finding> exact_findings() const;

  // report.cpp
  std::vector<kiln::Finding> make_findings() const;
  kiln::Finding lost_finding(int u) const;
  kiln::Finding intermittent_finding(int u, kiln::Code code, const PairRecord& r, const std::string& more,
                                     double conf) const;
};

}  // namespace kiln::analysis
