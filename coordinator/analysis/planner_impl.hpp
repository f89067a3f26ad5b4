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
// The state, by what it is about:
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

namespace kiln::analysis {

// A slow pair test seen from one of its members.
struct SlowPair {
  int partner;
  std::int64_t round;
  double slowness;
  double figure;
  double cut = 0.0;  // the log slowness the pair test was slow from (0: no pair test's; votes_for)
};

struct NodeData {
  int fast = 0;                     // fast tests of any size this node was in
  std::int64_t first_fast_round = -1;
  int first_fast_size = 0;
  std::vector<SlowPair> slow_pairs;  // slow pair tests
  // Slow in a pair test of its own (a slow row's votes carry no slowness).
  bool slow_in_pair_test() const {
    return std::any_of(slow_pairs.begin(), slow_pairs.end(), [](const SlowPair& p) { return p.slowness > 0.0; });
  }
  std::vector<int> tried;            // partners of resolution pair tests
  int resolution_tests = 0;
  bool bad = false;
  std::int64_t bad_round = -1;
  bool lost = false;
  std::int64_t lost_round = -1;
  bool unresolved = false;           // ran out of resolution tests
  bool withdrawn = false;            // named slow, then short of the votes the measured noise asks (repeated_pairs)
  int item = -1;                     // search item holding this node, -1 none
  int slow_switch = -1;              // index of the slow switch (topology) it sits under, -1 none
  bool intermittent = false;         // bad because slow in some tests with clean partners, fast in others
  bool hot = false;                  // bad because far more of its edges read slow than noise explains
  double hot_expected = 0.0;         // the slow edge readings noise explains, when it was marked hot
  // Rows of groups timed edge by edge (evidence_edges.cpp): every one counts in the node's record
  // (evidence_intermittent.cpp) as a test, a slow row as a slow one whose partners are the row's
  // slow peers, so a node slow in a later all-to-all after a fast one is watched, not forgotten.
  int rows = 0;
  int slow_rows = 0;
  int core_rows = 0;  // slow rows judged against an all-to-all's fast core (evidence_core.cpp)
  int lean_rows = 0;                 // rows leaning slow or slow (EdgeReading::leaning_rows)
  bool leaning = false;              // bad because far more of its rows lean than the others' do
  std::vector<int> hub_partners;     // bad because links to these distinct partners were confirmed slow (mark_link_hubs)
  double lean_expected = 0.0;        // the leaning rows the others' rate explains, when it was marked
  std::set<int> row_partners;        // peers of its slow rows' slow edges
  // An end of a pair-only link (LinkData::pair_only): from then on it is tested in pairs and judged
  // on its pair tests, since its fine rows say nothing about a cap that only a pair test's rate
  // reaches. pair_checks: pair tests it was given for that, until one is fast.
  bool pair_checked = false;
  int pair_checks = 0;
  // row_cleared: a suspect from a slow pair test whose first fine test was a row of an all-to-all,
  // which did not load its port as the pair test did. pair_suspect: such a node whose slow pair tests
  // speak against it (evidence_edges.cpp): pair-checked, whatever becomes of its links, until it is
  // fine in pair tests (strategy_resolve.cpp), when both are cleared.
  bool row_cleared = false;
  bool pair_suspect = false;
  // Its pair tests read in between (pair_in_between), as (partner, z against the faster of the baseline
  // and the reference), for the repetition rule (report.cpp, repeated_slow).
  std::vector<std::pair<int, double>> between_z;
  // A pair test of it read in between: it meets partners in pair tests, not rows (an all-to-all group
  // judged uniformly slow decides nothing about its members).
  bool pair_between() const { return !between_z.empty(); }
};

// A node's pair tests (evidence_intermittent.cpp): tests that say something about it, the slow
// ones among them (partner clean: slow with nobody else) and their distinct partners.
struct PairRecord {
  int tests = 0;
  int slow = 0;
  int distinct = 0;
  // Of tests and slow, the all-to-all rows: noise makes a row slow far less often than a pair test
  // (evidence_noise.cpp, beyond_noise), so the two are weighed at their own rates.
  int row_tests = 0;
  int row_slow = 0;
  // The node's first slow pair test is among them: the one that made it a suspect (the screen's),
  // no evidence against noise (significant_intermittent).
  bool first_slow_counted = false;
};

// Nodes with at least one test in their record: the count the intermittent rules split alpha over.
int nodes_tested(const std::vector<PairRecord>& rec);

// Candidate slow link between two nodes that are each fine with other partners.
struct LinkData {
  std::vector<std::pair<std::int64_t, double>> slow_pair_tests;  // (round, slowness)
  int fast_pair_tests = 0;
  int group_votes = 0;  // slow groups explained only by this link (set once certified)
  // Per-edge figures (evidence_edges.cpp): times this link's edge stood out among its group's edges,
  // and times it did not once it was a candidate. The first slow edge of a link raised the
  // suspicion and is no vote, since a heavy-tailed straggler makes one edge of many slow.
  int edge_slow = 0;
  int edge_fast = 0;
  std::vector<double> edge_z;  // robust z of its edge in each group after the one that opened it
  // The robust z of the slow edge that opened it (infinity when repeated sightings opened it): past
  // the affine cover, the first retests take the strongest first (strategy_resolve.cpp).
  double open_z = 0.0;
  bool confirmed = false;
  bool cleared = false;
  std::int64_t confirmed_round = -1;
  int retests = 0;
  // Opened by a slow pair test and fine inside an all-to-all group since. A rate cap (a port or path
  // shaped below what a pair test pushes, but above an edge's share of an all-to-all) slows pair
  // tests only, so a fine group edge clears nothing here: the link is decided on pair retests, and
  // its ends are paired with other known-good partners to tell a slow end from a slow link.
  bool pair_only = false;
  int pair_retests = 0;
  bool opened_by_pair = false;  // its first evidence was a slow pair test, not a slow edge
  // A pair test of a pair-only link in this round is one of its retests: after the one that opened it.
  bool pair_only_retest(std::int64_t round) const {
    return pair_only && !slow_pair_tests.empty() && round > slow_pair_tests.front().first;
  }
};

// A group's per-edge figures judged against each other (evidence_edges.cpp).
struct EdgeReading {
  std::vector<int> slow_rows;                  // members slow with most of their peers
  std::vector<int> leaning_rows;               // members leaning (kLeanZ; slow rows too), median edge 1.1x or more
  std::vector<std::pair<int, int>> slow_links; // slow edges whose ends are otherwise fine, (low, high)
  std::map<std::pair<int, int>, double> slow_link_z;  // their robust z
  std::map<int, std::vector<int>> row_partners;  // slow row -> peers of its slow edges
  std::map<int, std::vector<std::pair<double, int>>> row_peers;  // slow row -> (z, peer) of its edges to fine rows
  std::vector<std::pair<std::pair<int, int>, double>> readings;  // candidates' edges again: (link, z)
  // Slow edges in a group that opens no suspicion (a retest, certification, a look again): counted
  // per edge, and a suspicion once an edge has read slow more often than noise explains.
  std::vector<std::pair<int, int>> sightings;
  bool far_sighting = false;  // one of them at z_cutoff or beyond
  std::vector<double> deviations;  // |log edge - median| of the edges the spread was taken from
  std::vector<int> core;  // the fast core the slow rows were judged against (fast_core), if any
  std::vector<int> weak_core;  // a core read apart by half the z cutoff only (fast_core): remembered
  // Every edge with neither end in a slow row, for the base rates (evidence_noise.cpp): (a, b, level),
  // level 2 slow (z >= kDecideZ), -1 fast (z < kClearZ), 0 between; known: a link suspicion holds it.
  struct Clean {
    int a, b;
    int level;
    bool known;
  };
  std::vector<Clean> clean;
  bool suspect = false;  // the group could open suspicions
};

// The campaign's own noise (evidence_noise.cpp): per-edge readings of edges between nodes that are
// not slow rows, and how many of them read slow or fast, overall and per node.
struct NoiseCounts {
  explicit NoiseCounts(int n)
      : reads(static_cast<std::size_t>(n)), high_partners(static_cast<std::size_t>(n)) {}
  long readings = 0, slow = 0, fast = 0;
  long open_readings = 0;  // readings that could have opened a suspicion (new edges, suspect groups)
  long opened = 0;         // link suspicions opened
  long rows = 0, lean_rows = 0;  // rows judged (NodeData::rows) and those leaning, over all nodes
  double pair_rate = -1.0; // pair_slow_rate() as of the last evaluation, -1 unknown
  // The same evaluation's pair tests between known-good nodes, in all and by node, so a node is
  // judged against the others' rate: its own slow tests are what is being judged, not noise.
  long pair_tests = 0, pair_slow = 0;
  std::vector<int> node_pair_tests, node_pair_slow;
  // The same evaluation's all-to-all rows of nodes not marked bad, and those slow.
  long row_tests = 0, row_slow = 0;
  std::vector<int> reads;  // a node's readings
  // Distinct partners of a node's slow readings, sorted: a slow link read again and again is one.
  // A sorted vector, not a std::set: an insert per slow edge reading was 4% of a 16,384-node trial.
  std::vector<std::vector<int>> high_partners;
  int high(int u) const { return static_cast<int>(high_partners[static_cast<std::size_t>(u)].size()); }
  void add_high(int u, int v) {
    auto& s = high_partners[static_cast<std::size_t>(u)];
    if (const auto it = std::lower_bound(s.begin(), s.end(), v); it == s.end() || *it != v) s.insert(it, v);
  }
};

// One pair test, fast or slow, as the switch verdicts read them (evidence_switch.cpp).
struct PairTest {
  int a, b;
  std::int64_t round;
  bool slow;
  double slowness;
  double log_cost = 0.0;  // log of the figure as a cost (for the repeat spread, pair_repeat_sigma)
  double sigma = 0.0;     // the spread it was judged with (Judgement::sigma; repeated_pairs)
};

// A switch (or the path between two) whose crossing traffic is slow while traffic inside is not.
struct SwitchVerdict {
  std::string id;           // leaf name, or "leafA<->leafB" for the path between two leaves
  std::vector<int> leaves;  // indices into topology
  std::int64_t round = -1;
  nlohmann::json evidence;
};

struct SlowGroup {
  std::int64_t round;
  std::vector<int> members;  // sorted
  double slowness;
};

// Candidate pairs still in play: all pairs inside p (q empty), or all pairs p x q where p and q
// are each known to be free of bad pairs.
struct Block {
  std::vector<int> p, q;
};

// A set of node-disjoint blocks. positive: known to hold at least one bad pair somewhere in the
// blocks. Not positive: untested; its single clique block is tested as one group.
struct Item {
  int id = 0;
  std::vector<Block> blocks;
  bool positive = false;
  std::string origin;  // screen | link-search | idle-sweep | cert | split
};

// What a planned group is for, so its outcome reaches the right bookkeeping.
struct Tag {
  enum Kind { ItemTest, Resolve, RowRetest, LinkRetest, Circle, Exact, UplinkCheck, Control } kind = ItemTest;
  int item = -1;
  int block = -1;
  int part = 0;  // clique: half 0/1; biclique: diagonal 0/1; pair block: 0
};

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
  int node_votes_needed() const;           // distinct known-good partners that make a node slow
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
  bool pair_retests_beyond_noise(const LinkData& l, std::size_t retested) const;
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
