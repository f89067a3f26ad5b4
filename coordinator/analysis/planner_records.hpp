// The records the Planner keeps per node, link, pair test, group and search item (Impl's
// evidence and strategies' state, planner_impl.hpp). Internal, not part of the API.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

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

}  // namespace kiln::analysis
