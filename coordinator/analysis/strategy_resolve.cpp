// Resolve: tests for what the evidence cannot decide yet. Every suspect (a node outside any search
// that was never in a fast group: one from a slow pair, or one never tested) is tested again in the
// same round as the others: with per-edge figures as a row among known-good peers (up to 256 nodes,
// and past the edge cover's reach), otherwise, or where no such group can be made, with a
// known-good partner it has not met, so each
// round can add votes per suspect; a suspect that runs out of tests or partners is left unresolved
// rather than guessed at. Link candidates short of votes are retested as pairs.
#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "common/text.hpp"
#include "coordinator/analysis/strategies.hpp"

namespace kiln::analysis::strategy {

namespace {

// Edge retests: groups of at most timed_group_size(n) members (256 up to 5,819 nodes; a test timing
// every peer reports 32,640 edges at 256), padded to at least this many so the retested edges have
// healthy ones to be judged against.
constexpr std::size_t kMinEdgeGroup = 8;
constexpr int kEdgeRetests = 3;

// As many edge retests as a suspicion needs slow readings, when noise asks for more than three; up to
// 256 nodes with per-edge figures, as many as a node gets resolution tests (6): a 1.25x link left
// undecided by three edge retests went on to pair retests, whose figures spread too wide to see it.
int edge_retests(const Planner::Impl& s) {
  const int small = s.edges_seen && s.n <= kSmallEdgeCluster ? s.cfg.max_tests_per_node : 0;
  return std::max({kEdgeRetests, s.edge_readings_needed(), small});
}

// A retest that read between the clearing and the deciding z says nothing either way (the confirm
// rule's false rate counts decisive readings only, evidence_noise.cpp), so up to spare_retests() of
// them buy one more retest each. Without them a 1.25x link that read slow in 3 of 4 retests and in
// between once (z 2.4: it does so about one time in 40) was dropped undecided and unreported when its
// retests ran out: 8 of the 11 links missed in 100 diluted campaigns at 4,096 nodes.
// The spares grow with the slow readings k that confirm (edge_readings_needed): k readings plus s
// spares run out when s + 1 of the first k + s read in between, about C(k + s, s + 1) p^(s + 1),
// which k raises. So s is k / 2, and at least kSpareRetests: 2 up to k = 5 (4,096 nodes), 3 at k = 6
// (16,384), where a 1.25x link read slow in 5 of 8 retests and in between in 3 and was left
// unresolved (diluted seed 97).
constexpr int kSpareRetests = 2;

int spare_retests(const Planner::Impl& s) { return std::max(kSpareRetests, s.edge_readings_needed() / 2); }

// A forgiven reading within the healthy spread (evidence_edges.cpp) buys one more too.
int edge_retests(const Planner::Impl& s, const LinkData& l) {
  return edge_retests(s) + std::min(Planner::Impl::between_readings(l), spare_retests(s)) +
         (s.forgiven_low(l) ? 1 : 0);
}

// A candidate from slow pair tests is retested inside an all-to-all group too, once groups report
// per-edge figures: there its ends are timed with their other peers in the same round, so a node
// slow some of the time shows as a slow row (node evidence) or a fine edge (cleared), and cannot
// pass for a slow link as it does in pair retests that happen to fall in its slow rounds.
bool edge_retestable(const Planner::Impl& s, const LinkData& l) {
  return s.edges_seen && s.n <= kSmallEdgeCluster && l.edge_slow == 0 && !l.slow_pair_tests.empty() && l.retests < edge_retests(s, l);
}

struct PartnerPool {
  std::vector<int> good;     // known-good nodes, shuffled
  std::vector<char> link_ends;  // a mark per end of a link candidate
  std::size_t cursor = 0;    // where the next suspect starts looking
};

// A known-good node u has not met as a partner yet.
bool untried_partner(const NodeData& d, int u, int g) {
  return g != u && std::find(d.tried.begin(), d.tried.end(), g) == d.tried.end();
}

// Ends of link candidates are taken last: the link retests planned after this in the same round
// need both ends free. Failing any known-good node, another suspect will do, since a fast result
// still clears both.
int pick_partner(const Planner::Impl& s, const RoundDraft& round, int u, PartnerPool& pool,
                 const std::vector<int>& needs) {
  auto untried = [&](int g) { return !round.busy[g] && untried_partner(s.nodes[u], u, g); };
  const auto& good = pool.good;
  for (std::size_t k = 0; k < good.size(); ++k) {
    const int g = good[(pool.cursor + k) % good.size()];
    if (untried(g) && !pool.link_ends[g]) {
      pool.cursor = (pool.cursor + k + 1) % good.size();
      return g;
    }
  }
  for (int g : good)
    if (untried(g)) return g;
  for (int g : needs)
    if (untried(g) && s.nodes[g].resolution_tests < s.cfg.max_tests_per_node) return g;
  return -1;
}

// With per-edge figures, suspects are retested as rows: up to kRowSuspects of them in an all-to-all
// group padded with free known-good nodes to kRowGroup members (at least kMinRowGroup, so each row
// has kSureRow peers and, a slow one, counts a vote per slow known-good peer); ends of link
// candidates pad last, since the link retests planned after this need both ends free. A pair test times one edge, and its figure
// spreads like one; a row times 7 or more at once, so a 1.25x node shows in every row while its
// pair tests read as noise one time in three. Edge suspicions whose ends are in the group are read
// again with it. Suspects without room in such a group are paired as before.
constexpr std::size_t kRowSuspects = 2;
constexpr std::size_t kRowGroup = 16;
constexpr std::size_t kMinRowGroup = 8;

int row_suspects(Planner::Impl& s, RoundDraft& round, const std::vector<int>& needs, PartnerPool& pool,
                 std::vector<char>& placed) {
  // Where an edge cover reads every row many times (257 to 5,819 nodes), suspects meet partners in
  // pairs as before: rows there added readings to the hot-node rule, which then named a healthy
  // node (N=1,024, noise 0.10, seed 32). Past the cover's reach (5,820 nodes and up) nothing else
  // reads a suspect's row: a 1.25x node read as noise in its pair tests and ended unresolved.
  if (!s.edges_seen || (s.n > kSmallEdgeCluster && edge_cover_fits(static_cast<std::size_t>(s.n)))) return 0;
  std::vector<int> todo;
  // A pair-checked node (an end of a pair-only link) is tested in pairs: its rows were fine, and
  // what made its pair tests slow may be a port cap that only a pair test's rate reaches. So is a
  // node whose pair test read in between: at 20% noise its rows went to all-to-all groups judged
  // uniformly slow five times, which decide nothing, and a healthy node ended unresolved (16 nodes,
  // seed 101646).
  for (int u : needs)
    if (!round.busy[u] && !s.nodes[u].pair_checked && !s.nodes[u].pair_between() &&
        s.nodes[u].resolution_tests < s.cfg.max_tests_per_node)
      todo.push_back(u);
  int rows = 0;
  std::vector<int> pad;  // taken from the back: link ends first, so they go last
  for (bool ends : {true, false})
    for (int g : pool.good)
      if (!round.busy[g] && (pool.link_ends[g] != 0) == ends &&
          std::find(needs.begin(), needs.end(), g) == needs.end())
        pad.push_back(g);
  for (std::size_t i = 0; i < todo.size(); i += kRowSuspects) {
    const std::vector<int> suspects(todo.begin() + static_cast<std::ptrdiff_t>(i),
                                    todo.begin() + static_cast<std::ptrdiff_t>(std::min(todo.size(), i + kRowSuspects)));
    auto g = suspects;
    // Suspects left for pair tests keep a free known-good partner each.
    const std::size_t left = todo.size() - std::min(todo.size(), i + kRowSuspects);
    while (g.size() < kRowGroup && pad.size() > left) g.push_back(pad.back()), pad.pop_back();
    if (g.size() < kMinRowGroup) break;
    for (int u : suspects) {
      ++s.nodes[u].resolution_tests;
      placed[u] = 1;
      ++rows;
    }
    round.add(std::move(g), Tag{Tag::RowRetest});
  }
  return rows;
}

// Pair tests an end of a pair-only link gets with other partners: enough that, with the link's other
// end, they can give a slow end the distinct partners it needs (node_votes_needed() + 1; 3 by default).
int pair_checks(const Planner::Impl& s) { return std::max(3, s.node_votes_needed() + 1); }

// One pair check of u (an end of a pair-only link, or a pair suspect): a pair test with an untried
// known-good partner other than `except`, counted apart from its resolution tests. False when no
// such partner is free this round.
bool pair_check(Planner::Impl& s, RoundDraft& round, int u, int except, PartnerPool& pool, const std::vector<int>& needs) {
  const int partner = pick_partner(s, round, u, pool, needs);
  if (partner < 0 || partner == except || !s.good(partner)) return false;
  s.nodes[u].tried.push_back(partner);
  ++s.nodes[u].pair_checks;
  round.add({u, partner}, Tag{Tag::Resolve});
  return true;
}

int pair_suspects(Planner::Impl& s, RoundDraft& round) {
  PartnerPool pool;
  for (int u = 0; u < s.n; ++u)
    if (s.good(u)) pool.good.push_back(u);
  std::shuffle(pool.good.begin(), pool.good.end(), s.rng);
  const auto needs = s.nodes_needing_test();
  // The marks steer the partners of suspects and of pair-only links' ends; with neither, a walk of
  // every suspicion (a million at 16,384 nodes) each round for nothing.
  pool.link_ends = needs.empty() && s.pair_only_links == 0 ? std::vector<char>(static_cast<std::size_t>(s.n), 0)
                                                           : s.candidate_ends();
  int paired = 0;
  std::vector<char> placed(static_cast<std::size_t>(s.n), 0);
  if (const int rows = row_suspects(s, round, needs, pool, placed); rows > 0)
    round.explain(std::to_string(rows) + " suspect(s) timed against known-good peers inside all-to-all groups");
  for (int u : needs) {
    if (placed[u]) continue;
    auto& d = s.nodes[u];
    if (round.busy[u]) continue;
    const int partner = d.resolution_tests < s.cfg.max_tests_per_node
                            ? pick_partner(s, round, u, pool, needs) : -1;
    if (partner < 0) {
      // Untried partners that are only busy this round (in row groups, say): wait. Other suspects
      // count, as pick_partner takes them: when a screen of 9 nodes read all 4 of its pairs slow, no
      // node was known-good, the other 8 suspects were paired with each other, and the ninth was
      // marked unresolved at once and never tested again (seed 4436, 20% noise, 4 such campaigns in
      // 5,000).
      auto waits_for = [&](int g) {
        return untried_partner(d, u, g) &&
               (s.good(g) || (!s.nodes[g].unresolved && s.nodes[g].resolution_tests < s.cfg.max_tests_per_node));
      };
      const bool busy_only = d.resolution_tests < s.cfg.max_tests_per_node &&
                             (std::any_of(pool.good.begin(), pool.good.end(), waits_for) ||
                              std::any_of(needs.begin(), needs.end(), waits_for));
      if (!busy_only) d.unresolved = true;
      continue;
    }
    d.tried.push_back(partner);
    ++d.resolution_tests;
    if (!s.good(partner)) {
      s.nodes[partner].tried.push_back(u);
      ++s.nodes[partner].resolution_tests;
    }
    round.add({u, partner}, Tag{Tag::Resolve});
    ++paired;
  }
  // Pair suspects (NodeData::pair_suspect: slow in a pair test, fine in a row since) meet other
  // known-good partners in pair tests, up to pair_checks(), until their fast pair tests outnumber
  // their slow ones; then they are released, and their rows count as tests again. Kept pair-checked,
  // a healthy node of 16 at 20% noise whose one check straggled (2.27x) was "intermittently slow (2
  // of 9 tests)", unresolved, its fine rows left out of its record.
  if (s.n <= kSmallEdgeCluster)
    for (int u = 0; u < s.n; ++u) {
      auto& d = s.nodes[u];
      if (!d.pair_suspect || !s.active(u)) continue;
      if (s.pair_suspect_fine(u)) {
        d.pair_suspect = d.row_cleared = false;
        s.release_pair_checked(u);
        continue;
      }
      if (round.busy[u] || d.pair_checks >= pair_checks(s)) continue;
      if (pair_check(s, round, u, -1, pool, needs)) ++paired;
    }
  // Ends of pair-only links read slow again: each meets another known-good partner in a pair test until it has been
  // fast in one (up to pair_checks()), so a slow end (a port capped above an all-to-all's rate per
  // rank, which its rows do not reach) is told apart from a slow link. Its rows may have used up its
  // resolution tests: these are counted apart.
  if (s.pair_only_links == 0) return paired;  // none: no walk of every suspicion
  for (const auto* e : s.link_walk.of(std::as_const(s.links))) {
    if (!s.candidate(*e)) continue;
    const auto [a, b] = e->first;
    const auto& l = e->second;
    // Only once a pair retest read slow again: most pair-only links are a noise pair, cleared by
    // their first retest, and checking their ends too cost rounds in healthy campaigns.
    if (!l.pair_only || l.confirmed || s.pair_only_votes_of(l) == 0) continue;
    const double limit = s.pair_only_fine_limit(l);
    for (auto [u, v] : {std::pair{a, b}, std::pair{b, a}}) {
      if (round.busy[u] || s.fine_in_pairs(u, v, limit) || s.nodes[u].pair_checks >= pair_checks(s)) continue;
      if (pair_check(s, round, u, v, pool, needs)) ++paired;
    }
  }
  return paired;
}

// A candidate is retested at once when only pair tests speak for it (a slow screening pair whose
// ends are both fine elsewhere). One held by a slow group waits for certification: until every
// other pair is cleared, that group may be slow for another reason, so it is no vote yet.
int retest_links(Planner::Impl& s, RoundDraft& round) {
  int retests = 0;
  for (auto* e : s.link_walk.of(s.links)) {
    const auto& key = e->first;
    auto& l = e->second;
    if (l.confirmed || l.cleared || !s.good(key.first) || !s.good(key.second)) continue;
    if (l.pair_only) {
      // Decided on pair retests alone (LinkData::pair_only); its ends' pair checks go first.
      if (l.pair_retests >= s.pair_only_retests() || !round.free({key.first, key.second})) continue;
      ++l.pair_retests;
      round.add({key.first, key.second}, Tag{Tag::LinkRetest});
      ++retests;
      continue;
    }
    if (!s.cert.certified && s.has_group_evidence(key.first, key.second)) continue;
    if (l.edge_slow > 0 && l.retests < edge_retests(s, l)) continue;  // retest_edge_links has it
    if (edge_retestable(s, l)) continue;                          // so has it
    if (l.retests >= s.cfg.max_tests_per_node) continue;
    if (!round.free({key.first, key.second})) continue;
    ++l.retests;
    round.add({key.first, key.second}, Tag{Tag::LinkRetest});
    ++retests;
  }
  return retests;
}

// After the affine cover, a suspicion whose only slow reading is its first (noise_single: retests
// that read between the clearing and the deciding z add no slow reading) is retested only while the
// rounds one fault may take leave room for the readings a slow link needs after it. Heavy-tailed
// stragglers (5% of edges) open about 330,000 such suspicions at 4,096 nodes, and reading each once
// took 25 rounds past the cover (43 against a bound of 34); at 5% noise the backlog is empty before
// the budget. Once the budget is spent, a suspicion whose retests all read in between stops too: a
// 1.25x link reads in between about one time in 40, a straggler's edge about one time in 20, and
// retesting those kept heavy-tail seed 1 going to round 36 (32 without them).
bool first_retests_over(const Planner::Impl& s) {
  return s.search.cover_affine && s.search.cover_next >= s.search.cover.size() &&
         static_cast<double>(s.book.observed + 1 + s.edge_readings_needed()) > one_fault_round_bound(s.n);
}

// Past the affine cover, first retests outnumber what the retest rounds before first_retests_over()
// can pack (322,000 suspicions at 8,192 nodes, 44,700 retested in the first round; 1.2 million at
// 16,384), and packing that took no account of a suspicion's strength left the rest to chance: at
// 8,192 nodes the 11,000 left unread when the budget ran out held a 2x link in 4 of 64 campaigns.
// Now the greedy growth below weighs each suspicion by a class of the z that opened it, and one of
// a class outweighs any number of those below: read slow again first, then every suspicion opened
// at z 3.5 or more (or by sightings) as one class, then [3, 3.5), and [2.5, 3) last. Most of the
// backlog is lognormal noise just past the opening z of 2.5 ([2.5, 3) holds about half at 5%
// noise); a 1.25x link at 5% noise opens near 4.5 and a 2x link near 14, where a straggler's heavy
// tail puts a fifth of the backlog. The strong classes share one weight: ranked [3.5, 5), [5, 8),
// 8 and over, each was packed along its own sparser graph, and at 16,384 nodes (topology seed 10)
// 14,000 of the 240,000 opened at 8 and over were left at the budget, the 2x link among them;
// packed as one, 190 were left (and 150 of the 200,000 in [3.5, 8), where ranked left none).
constexpr double kRetestClassZ[] = {3.0, 3.5, 5.0, 8.0};

int retest_class(const LinkData& l) {
  int cls = 0;
  for (double z : kRetestClassZ) cls += l.open_z >= z ? 1 : 0;
  return cls;
}

// "under 3: a of A, 3-3.5: b of B, ..., 8 and over: e of E"
template <std::size_t N>
std::string retest_classes_text(const std::array<long, N>& left, const std::array<long, N>& opened) {
  std::string text;
  for (std::size_t c = 0; c < N; ++c) {
    if (c > 0) text += ", ";
    if (c == 0) text += "under " + short_number(kRetestClassZ[0]);
    else if (c + 1 == N) text += short_number(kRetestClassZ[c - 1]) + " and over";
    else text += short_number(kRetestClassZ[c - 1]) + "-" + short_number(kRetestClassZ[c]);
    text += ": " + std::to_string(left[c]) + " of " + std::to_string(opened[c]);
  }
  return text;
}

std::int64_t retest_weight(const Planner::Impl& s, const LinkData& l) {
  // z class -> priority: [2.5, 3) 0, [3, 3.5) 1, 3.5 and over 2; read slow again 3 (1 << 30 at
  // most: a sum over an end's suspicions stays far inside 64 bits).
  constexpr int kPriority[] = {0, 1, 2, 2, 2};
  constexpr int kReadAgain = 3;
  static_assert(std::size(kPriority) == std::size(kRetestClassZ) + 1);
  const int priority = s.noise_single(l) ? kPriority[retest_class(l)] : kReadAgain;
  return std::int64_t{1} << (10 * priority);
}

// Link suspicions from per-edge figures are retested inside all-to-all groups, where their edges
// are measured again next to healthy ones: one group of up to timed_group_size(n) members retests every
// suspicion among its members at once, however many share an end, and its edges are judged as the
// first were. Groups hold the suspicions' ends, packed together and padded with free
// known-good nodes so each has a baseline of healthy edges. After edge_retests() such rounds (3, or
// 6 up to 256 nodes; more when noise asks) what is left is retested as pairs.
// Packing grows each group from the suspect end with the most due suspicions, adding next the end
// with the most suspicions into the group so far (greedy graph growing; past the affine cover,
// suspicions counted by retest_weight()); a part used up, the group goes on from a new seed. A
// suspicion is retested when both its ends share a group. Packing connected parts whole made one
// part of most nodes when noise opened thousands of suspicions, too large a group for its edges to
// be timed; packing edge by edge left a sparse backlog mostly
// untested: at 4,096 nodes the last 4,000 of 80,000 noise suspicions took fifteen rounds.
int retest_edge_links(Planner::Impl& s, RoundDraft& round) {
  std::vector<std::pair<std::pair<int, int>, LinkData*>> due;
  // Per node, indexed by node (maps keyed by node took a tenth of a 16,384-node trial).
  const auto n = static_cast<std::size_t>(s.n);
  std::vector<std::vector<std::pair<int, std::int64_t>>> adj(n);  // end -> (other end, weight)
  const bool late = first_retests_over(s);
  const bool ranked = s.search.cover_affine;
  long skipped = 0;
  std::array<long, std::size(kRetestClassZ) + 1> skipped_by{};  // by retest_class()
  for (auto* e : s.link_walk.of(s.links)) {
    const auto& key = e->first;
    auto& l = e->second;
    if (l.confirmed || l.cleared || l.pair_only || l.retests >= edge_retests(s, l)) continue;
    if (l.edge_slow == 0 && !edge_retestable(s, l)) continue;
    if (late && s.noise_single(l)) {
      ++skipped;
      ++skipped_by[static_cast<std::size_t>(retest_class(l))];
      continue;
    }
    if (!s.good(key.first) || !s.good(key.second) || !round.free({key.first, key.second})) continue;
    due.push_back({key, &l});
    const std::int64_t w = ranked ? retest_weight(s, l) : 1;
    adj[key.first].push_back({key.second, w});
    adj[key.second].push_back({key.first, w});
  }
  if (skipped > 0 && s.search.unretested == 0) {
    s.search.unretested = skipped;
    // Every suspicion a slow edge or sightings opened (open_z set); one a pair test opened has none.
    std::array<long, std::size(kRetestClassZ) + 1> opened{};
    for (const auto* e : s.link_walk.of(std::as_const(s.links)))
      if (const auto& l = e->second; l.open_z > 0.0) ++opened[static_cast<std::size_t>(retest_class(l))];
    s.note("round budget: " + std::to_string(skipped) + " suspicion(s) with one slow reading get no more "
           "retests (left as noise singles; by the z that opened them, left of opened: " +
           retest_classes_text(skipped_by, opened) + "); those read slow again go on being retested");
  }
  if (due.empty()) return 0;
  const std::size_t max_group = timed_group_size(static_cast<std::size_t>(s.n));
  // With timed groups wider than 256 (past 5,819 nodes), suspicions read slow again are packed first,
  // pair by pair, so each is retested every round: a round of 16 groups of 1,024 holds 1/16 of all
  // pairs, and a link read slow again among 140,000 first retests at 16,384 nodes waited for the
  // backlog to clear before its next reading (seed 10: its 6 readings came in rounds 33-39, bound 38).
  std::vector<std::pair<int, int>> again;
  if (max_group > static_cast<std::size_t>(kSmallEdgeCluster))
    for (const auto& [k, l] : due)
      if (!s.noise_single(*l)) again.push_back(k);
  std::size_t again_next = 0;
  std::vector<std::vector<int>> groups;
  std::vector<int> group_of(n, -1);
  // Unplaced ends (unplaced[u]), with the weight of their due suspicions to other unplaced ends.
  std::vector<char> unplaced(n, 0);
  std::vector<std::int64_t> left(n, 0);
  std::size_t unplaced_count = 0;
  for (std::size_t u = 0; u < n; ++u)
    for (const auto& [v, w] : adj[u]) {
      left[u] += w;
      if (!unplaced[u]) unplaced[u] = 1, ++unplaced_count;
    }
  std::vector<std::int64_t> gain(n, 0);  // unplaced end -> weight of its suspicions into the group grown
  std::vector<int> gained;               // ends whose gain is set, reset for the next group
  while (unplaced_count > 0) {
    groups.emplace_back();
    auto& g = groups.back();
    const int id = static_cast<int>(groups.size()) - 1;
    for (int v : gained) gain[static_cast<std::size_t>(v)] = 0;
    gained.clear();
    std::set<std::pair<std::int64_t, int>> frontier;  // (-gain, end)
    auto place = [&](int u) {
      unplaced[u] = 0, --unplaced_count;
      frontier.erase({-gain[u], u});
      group_of[u] = id;
      g.push_back(u);
      for (const auto& [v, w] : adj[u]) {
        if (!unplaced[v]) continue;
        left[v] -= w;
        frontier.erase({-gain[v], v});
        if (gain[v] == 0) gained.push_back(v);
        frontier.insert({-(gain[v] += w), v});
      }
    };
    for (; again_next < again.size() && g.size() + 2 <= max_group; ++again_next) {
      const auto [a, b] = again[again_next];
      auto here_or_free = [&](int u) { return unplaced[u] || group_of[u] == id; };
      if (!here_or_free(a) || !here_or_free(b)) continue;  // an end went to an earlier group
      if (unplaced[a]) place(a);
      if (unplaced[b]) place(b);
    }
    while (g.size() < max_group && unplaced_count > 0) {
      if (frontier.empty()) {  // a new seed: the unplaced end with the most suspicions left (the lowest such)
        int seed = -1;
        for (std::size_t u = 0; u < n; ++u)
          if (unplaced[u] && (seed < 0 || left[u] > left[static_cast<std::size_t>(seed)])) seed = static_cast<int>(u);
        place(seed);
      } else {
        place(frontier.begin()->second);
      }
    }
  }
  // Members in the order their suspicions are listed (ends by first appearance), not the growth order.
  constexpr std::size_t kUnlisted = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> first(n, kUnlisted);
  std::size_t listed = 0;
  for (const auto& [k, l] : due)
    for (int u : {k.first, k.second})
      if (first[static_cast<std::size_t>(u)] == kUnlisted) first[static_cast<std::size_t>(u)] = listed++;
  for (auto& g : groups)
    std::sort(g.begin(), g.end(), [&](int a, int b) { return first[static_cast<std::size_t>(a)] < first[static_cast<std::size_t>(b)]; });
  std::vector<LinkData*> taken;
  std::vector<int> held(groups.size(), 0);
  for (const auto& [k, l] : due) {
    const int g = group_of[static_cast<std::size_t>(k.first)];
    if (g == group_of[static_cast<std::size_t>(k.second)]) taken.push_back(l), ++held[static_cast<std::size_t>(g)];
  }
  std::vector<int> pad;
  for (int u = 0; u < s.n; ++u)
    if (s.good(u) && !round.busy[u] && group_of[static_cast<std::size_t>(u)] < 0) pad.push_back(u);
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (held[i] == 0) continue;  // its ends' suspicions all cross to other groups: they wait
    auto& g = groups[i];
    while (g.size() < kMinEdgeGroup && !pad.empty()) g.push_back(pad.back()), pad.pop_back();
    round.add(g, Tag{Tag::LinkRetest});
  }
  for (auto* l : taken) {
    ++l->retests;
    // A pair candidate becomes an edge suspicion: its slow pair test opened it, as a first slow edge does.
    if (l->edge_slow == 0) l->edge_slow = 1;
  }
  return static_cast<int>(taken.size());
}

}  // namespace

// After the search: a search round splits groups that may hold the suspects anyway, so the retests
// take only the nodes it left free.
void retest_edges(Planner::Impl& s, RoundDraft& round) {
  if (const int retests = retest_edge_links(s, round); retests > 0)
    round.explain("retest " + std::to_string(retests) + " slow edge(s) inside all-to-all groups");
}

void resolve(Planner::Impl& s, RoundDraft& round) {
  // Past 1,024 nodes the edge cover reads every suspect's row and every candidate's edge in each of
  // its rounds; pairing them now would take them out of those rounds, and certification would then
  // have to read their edges again.
  if (affine_cover_ahead(s)) return;
  if (const int paired = pair_suspects(s, round); paired > 0)
    round.explain(std::to_string(paired) + " suspect(s) paired with distinct known-good nodes");
  if (const int retests = retest_links(s, round); retests > 0)
    round.explain("retest " + std::to_string(retests) + " link candidate(s) for votes");
}

}  // namespace kiln::analysis::strategy
