// Evidence: what the rounds have shown about nodes and links, whichever strategy planned them.
// Node verdicts (slow with enough known-good partners) and link votes are settled here, so every
// strategy and the findings read one account.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "coordinator/analysis/noise.hpp"
#include "coordinator/analysis/planner_impl.hpp"

namespace kiln::analysis {

namespace {

bool contains_sorted(const std::vector<int>& v, int x) {
  return std::binary_search(v.begin(), v.end(), x);
}

}  // namespace

// What one judged group adds: fast proves every member fine (and feeds the baseline of later
// rounds); slow is a pair record or a slow group. An unknown verdict adds nothing.
void Planner::Impl::record_group(const std::vector<int>& g, std::int64_t round, double figure,
                                 const Judgement& j) {
  if (g.size() == 2 && j.verdict != Verdict::Unknown)
    pair_tests.push_back({g[0], g[1], round, j.verdict == Verdict::Slow, j.slowness,
                          figure > 0.0 ? std::log(to_cost(figure, cfg.outliers.direction)) : 0.0});
  if (j.verdict == Verdict::Fast) {
    record_fast(g, round, figure);
    history.add(static_cast<int>(g.size()), cfg.size_bytes,
                to_cost(figure, cfg.outliers.direction));
    return;
  }
  if (j.verdict != Verdict::Slow) return;
  if (g.size() == 2) {
    // The cut it was slow from, for votes_for; none for a timeout (no figure noise could make).
    const double cut = std::isfinite(j.slowness) ? std::max(relative_limit(cfg.outliers), cfg.outliers.z_cutoff * j.sigma)
                                                 : std::numeric_limits<double>::infinity();
    record_slow_pair(g[0], g[1], round, j.slowness, figure, cut);
  } else {
    auto m = g;
    std::sort(m.begin(), m.end());
    slow_groups.push_back({round, std::move(m), j.slowness});
  }
  nlohmann::json e = {{"size", g.size()}, {"judgement", j}};
  if (g.size() <= 8) {
    std::vector<std::string> nm;
    for (int u : g) nm.push_back(name(u));
    e["members"] = nm;
  }
  (*story.current)["slow"].push_back(e);
}

void Planner::Impl::record_fast(const std::vector<int>& members, std::int64_t round, double, bool clean) {
  for (int u : members) {
    auto& d = nodes[u];
    if (d.fast++ == 0) {
      d.first_fast_round = round;
      d.first_fast_size = static_cast<int>(members.size());
      if (!d.slow_pairs.empty()) note(name(u) + " is fine with another partner");
    }
  }
  if (members.size() == 2) {
    const auto key = std::minmax(members[0], members[1]);
    if (auto it = links.find({key.first, key.second}); it != links.end()) {
      ++it->second.fast_pair_tests;
    }
  }
  if (clean && members.size() > clean_cover.size()) {
    clean_cover = members;
    std::sort(clean_cover.begin(), clean_cover.end());
  }
}

void Planner::Impl::record_slow_pair(int a, int b, std::int64_t round, double slowness,
                                     double figure, double cut) {
  nodes[a].slow_pairs.push_back({b, round, slowness, figure, cut});
  nodes[b].slow_pairs.push_back({a, round, slowness, figure, cut});
  auto& l = links[{std::min(a, b), std::max(a, b)}];
  if (l.slow_pair_tests.empty() && l.edge_slow == 0 && l.edge_z.empty()) l.opened_by_pair = true;
  l.slow_pair_tests.emplace_back(round, slowness);
}

void Planner::Impl::mark_lost(int u, std::int64_t round) {
  auto& d = nodes[u];
  if (d.lost) return;
  d.lost = true;
  d.lost_round = round;
  note(name(u) + " stopped reporting: lost, excluded from later rounds");
  if (story.current) (*story.current)["lost"].push_back(name(u));
}

// A slow result of the screen raises a suspicion but is no vote: it was judged at the screen's lower
// z cutoff among N/2 pair tests, so heavy-tailed stragglers make a few such results in every healthy
// cluster, and one retest that straggles too (about 1% of pair tests) would confirm one of them. The
// votes are the retests, each with a partner or in a round of its own.
bool Planner::Impl::is_vote(std::int64_t round) const { return cfg.screen_votes || round != screen.round; }

// The distinct known-good partners a node was slow with, in tests that are votes.
std::vector<int> Planner::Impl::voting_partners(int u) const {
  std::vector<int> partners;
  for (const auto& s : nodes[u].slow_pairs)
    if (good(s.partner) && is_vote(s.round)) partners.push_back(s.partner);
  std::sort(partners.begin(), partners.end());
  partners.erase(std::unique(partners.begin(), partners.end()), partners.end());
  return partners;
}

// A pair figure's spread as measured: the pooled edges' (they spread alike in the model cluster),
// capped by the pair repeat spread where there is one (Impl::pair_repeat_sigma: on a live fabric the
// edges spread wider than a pair test repeats); 0 before any all-to-all. Not the repeat spread
// alone: early in a campaign it rests on a few nodes' figures, and an intermittent node's 1x and 3x
// pair tests made it 0.3-1.3 at 5% noise (9 nodes, seeds 4, 15, 17).
double Planner::Impl::pair_noise() const {
  const double edges = edge_sigma();
  if (!(edges > 0.0)) return 0.0;
  const auto rep = pair_repeat_sigma();
  return rep ? std::min(edges, *rep) : edges;
}

// The chance that one of node u's slow pair tests read slow from noise alone: the upper tail of the
// pair spread measured now (pair_spread, set each round) past the cut the test was judged slow at,
// the largest over its slow tests that are votes; 0 while the spread is unknown.
double Planner::Impl::noise_vote_rate(int u) const {
  if (!(pair_spread > 0.0)) return 0.0;
  double p = 0.0;
  for (const auto& s : nodes[u].slow_pairs)
    if (s.cut > 0.0 && good(s.partner) && is_vote(s.round))
      p = std::max(p, 0.5 * std::erfc(s.cut / (pair_spread * std::sqrt(2.0))));
  return p;
}

// The votes that make node u slow: votes, or more where the campaign's measured noise makes its slow
// pair tests likely from noise alone. A small cluster's first pair rounds are judged before any
// all-to-all has measured the noise, on the reference's floor (slow from 1.35x at z_cutoff 4): at 20%
// noise a healthy node slow with two partners at 1.47x and 2.17x was named after three rounds of
// pairs (8 nodes, seed 1319), while the edges read later spread 0.2, at which a healthy pair test reads
// past 1.35x one time in 14. At that rate (noise_vote_rate) the votes are set as the noise rule sets
// them for a measured one (noise::votes_needed), at most cfg.votes + 1. A 2x node's pair tests are
// slow at that cut 39 times in 40, so it gives the third vote in one more pair test.
int Planner::Impl::votes_for(int u, int votes, double suspects) const {
  if (exact.active) return votes;
  const double p = noise_vote_rate(u);
  return p > 0.0 ? std::max(votes, std::min(cfg.votes + 1, noise::votes_needed(p, suspects, cfg.votes))) : votes;
}

int Planner::Impl::link_pair_votes(const LinkData& l) const {
  return static_cast<int>(std::count_if(l.slow_pair_tests.begin(), l.slow_pair_tests.end(),
                                        [&](const auto& t) { return is_vote(t.first); }));
}

// A node is bad when it was slow with enough distinct partners that are fine elsewhere, and with
// more of them than it was ever fast. A slow pair whose two ends are both fine elsewhere says
// nothing against either node: it is a link candidate (below).
void Planner::Impl::reevaluate_nodes(std::int64_t round) {
  pair_spread = pair_noise();
  mark_intermittent(round);
  mark_hot_nodes(round);
  mark_leaning_nodes(round);
  mark_link_hubs(round);
  const int votes = node_votes_needed();
  const auto suspects = static_cast<double>(nodes_with_slow_pairs());
  // Whether a partner counts as known-good depends on the other verdicts, so settle them together;
  // a verdict whose partners later turn out bad is withdrawn.
  for (int pass = 0; pass < 4; ++pass) {
    bool changed = false;
    for (int u = 0; u < n; ++u) {
      auto& d = nodes[u];
      if (d.lost || d.slow_switch >= 0 || d.intermittent || d.hot || d.leaning || !d.hub_partners.empty() ||
          d.slow_pairs.empty())
        continue;
      const int distinct = static_cast<int>(voting_partners(u).size());
      // A node seen fast before needs one vote more: a watched node gets extra pair tests, and two
      // slow ones of them are within what stragglers do. A pair-checked node's fast tests are its
      // fast pair tests: its fine rows did not load its port as a pair test does.
      const int fast = d.pair_checked ? fast_pair_tests_of(u) : d.fast;
      const int seen_fast = d.fast > 0 ? 1 : 0;
      const int needed = votes_for(u, votes, suspects);
      const bool bad = distinct >= needed + seen_fast && distinct > fast;
      if (bad == d.bad) continue;
      changed = true;
      d.bad = bad;
      if (bad) {
        d.bad_round = round;
        note(name(u) + " is slow with " + std::to_string(distinct) +
             " known-good partners: slow node");
      } else if (distinct >= votes + seen_fast && distinct > fast) {
        d.withdrawn = true;  // short only of the votes the measured noise asks
        note(name(u) + " is slow with " + std::to_string(distinct) + " known-good partners, short of the " +
             std::to_string(needed + seen_fast) + " the measured noise asks: tested again");
      } else {
        note(name(u) + " no longer has enough known-good partners against it");
      }
    }
    if (!changed) break;
  }
  pair_spread = pair_noise();  // again: the verdicts above change which partners are known-good
}

// A node at one end of confirmed slow links to more distinct partners than a node needs votes (3 by
// default), each partner fine with others, is the slow one: one slow node explains them, a slow link
// each does not. Its rows were too short to judge (a group of 5, once 3 of 8 nodes were bad, gives
// rows of 4 edges), so its slowness was pinned on its links: 8 nodes, 4 of them 2x, no reference,
// 1,000 campaigns: 8 false links in 2 at 5% noise, 9 in 7 at 10%. The links are explained by it.
void Planner::Impl::mark_link_hubs(std::int64_t round) {
  if (exact.active) return;
  std::map<int, std::vector<std::pair<int, std::int64_t>>> ends;  // node -> (partner, confirmed round)
  for (const auto* e : link_walk.of(links)) {
    const auto& [key, l] = *e;
    if (!l.confirmed || l.cleared || !good(key.first) || !good(key.second)) continue;
    ends[key.first].emplace_back(key.second, l.confirmed_round);
    ends[key.second].emplace_back(key.first, l.confirmed_round);
  }
  const auto needed = static_cast<std::size_t>(node_votes_needed() + 1);
  std::map<int, std::size_t> count;
  for (const auto& [u, partners] : ends) count[u] = partners.size();
  for (auto& [u, partners] : ends) {
    // A partner at the end of as many confirmed links is as likely the slow one: neither is named.
    std::erase_if(partners, [&](const auto& p) { return count.at(p.first) >= needed; });
    if (partners.size() < needed || !good(u)) continue;
    auto& d = nodes[u];
    d.bad = true;
    d.bad_round = round;
    for (const auto& [v, r] : partners) {
      d.hub_partners.push_back(v);
      d.slow_pairs.push_back({v, r, 0.0, 0.0});
      auto& l = links[std::minmax(u, v)];
      l.confirmed = false;
      l.cleared = true;
    }
    const int dropped = explain_links_of(u);
    note(name(u) + " is at one end of " + std::to_string(partners.size()) +
         " links confirmed slow, each with a partner fine with others: slow node; its links are explained by it" +
         (dropped > 0 ? " (and " + std::to_string(dropped) + " undecided link suspicion(s))" : ""));
  }
}

// Never seen fast, or seen fast but slow with a clean partner since (watched): a node seen fast
// once is not known-good for good.
std::vector<int> Planner::Impl::nodes_needing_test() const {
  std::vector<int> out;
  const auto rec = pair_records();
  for (int u = 0; u < n; ++u) {
    const auto& d = nodes[u];
    if (!active(u) || d.item >= 0 || d.unresolved) continue;
    if (d.fast > 0 && !watched(u, rec[u])) continue;
    out.push_back(u);
  }
  return out;
}

std::vector<std::pair<int, int>> Planner::Impl::candidate_links() const {
  std::vector<std::pair<int, int>> out;
  for (const auto* e : link_walk.of(links))
    if (candidate(*e)) out.push_back(e->first);
  return out;
}

std::vector<char> Planner::Impl::candidate_ends() const {
  std::vector<char> ends(static_cast<std::size_t>(n), 0);
  for (const auto* e : link_walk.of(links))
    if (candidate(*e)) ends[e->first.first] = ends[e->first.second] = 1;
  return ends;
}

// Once everything else is certified clean, a slow group holding both ends of exactly one
// candidate, and no bad or lost node, is explained by that link alone: it counts as a vote.
void Planner::Impl::count_link_votes() {
  const auto cands = candidate_links();
  if (cands.empty()) return;
  const auto rec = pair_records();
  for (auto [a, b] : cands) {
    auto& l = links[{a, b}];
    int votes = 0;
    for (const auto& g : slow_groups) {
      if (!contains_sorted(g.members, a) || !contains_sorted(g.members, b)) continue;
      bool other = false;
      for (auto [c, d] : cands)
        if ((c != a || d != b) && contains_sorted(g.members, c) && contains_sorted(g.members, d))
          other = true;
      for (int u : g.members)
        if (!active(u)) other = true;
      if (!other) ++votes;
    }
    l.group_votes = votes;
    update_link(a, b, l, rec);
  }
}

// Before certification a slow group holding a candidate may be slow for another reason, so only
// candidates that pair tests alone speak for are decided; after it, group votes count as well.
void Planner::Impl::update_links() {
  if (cert.certified) {
    count_link_votes();
    return;
  }
  // The candidates (candidate_links()) walked in place: deciding one changes no other, nor any
  // node, so the walk sees the set a list made first would.
  std::optional<std::vector<PairRecord>> rec;
  pair_rate_memo_on = true;
  pair_rate_memo.reset();
  for (auto* e : link_walk.of(links)) {
    if (!candidate(*e)) continue;
    const auto [a, b] = e->first;
    auto& l = e->second;
    // A link measured edge by edge is decided on its edge readings, which no slow group holding
    // both ends speaks against. (At 4,096 nodes the slow search group of every node held every
    // suspicion, so none was decided before certification: thousands of noise suspicions sat as
    // candidates and the certification sweep planned two thousand rounds around them.)
    if (l.edge_slow + l.edge_fast == 0 && has_group_evidence(a, b)) continue;
    if (!rec) rec = pair_records();
    update_link(a, b, l, *rec);
  }
  pair_rate_memo_on = false;
  pair_rate_memo.reset();
}

bool Planner::Impl::has_group_evidence(int a, int b) const {
  for (const auto& g : slow_groups)
    if (contains_sorted(g.members, a) && contains_sorted(g.members, b)) return true;
  return false;
}

// A link's votes: slow pair tests outside the screen, slow groups it alone explains (unless it was
// measured edge by edge: a slow group that holds it says less than its edge in that group did), and
// slow edges but the first, which raised the suspicion as one edge among many.
int Planner::Impl::link_votes(const LinkData& l) const {
  const int group_votes = l.edge_slow + l.edge_fast > 0 ? 0 : l.group_votes;
  return link_pair_votes(l) + group_votes + std::max(0, l.edge_slow - 1);
}

// Confirmed on votes that outnumber the fast results; cleared when the fast results reach every
// slow one, the screen's and the first edge's too (one more for a link first seen as an edge).
// Undecided while an end is watched (slow with other clean partners since it was fast): an
// intermittently slow node makes each of its pair tests slow in turn, and its links would be
// confirmed before the node is judged.
void Planner::Impl::update_link(int a, int b, LinkData& l, const std::vector<PairRecord>& rec) {
  if (l.confirmed || l.cleared) return;
  mark_pair_only(a, b, l);
  if (watched(a, rec[a]) || watched(b, rec[b])) return;
  if (decide_edge_link(a, b, l)) return;
  if (l.pair_only) {
    decide_pair_only_link(a, b);
    return;
  }
  const int votes = link_votes(l);
  const int fast = l.fast_pair_tests + l.edge_fast;
  const int group_votes = l.edge_slow + l.edge_fast > 0 ? 0 : l.group_votes;
  const int seen = static_cast<int>(l.slow_pair_tests.size()) + group_votes + l.edge_slow;
  const int extra = l.edge_slow > 0 ? 1 : 0;
  // A link a slow pair opened, once groups time edges: its ends must be fine in pair tests by the
  // pair-only rule's measure too (their other pair tests, by median, at most half as slow as the
  // link's). Past 256 nodes its pair retests can confirm it before the edge cover reads its edge
  // (which would make it pair-only): a port capped 1.25x, which the all-to-all at 0.4 of a pair
  // test's rate never reaches, read fine once with another partner (z 3) and was named as its link
  // in 5 of 50 campaigns at 1,024 nodes; with this, 1 of 50. Up to 256 nodes nothing changes.
  // The cheap tests first: the ends' check reads every pair test.
  if (votes > fast && votes >= link_votes_needed() &&
      (!l.opened_by_pair || !edges_seen || ends_fine_in_pairs(a, b, l))) {
    l.confirmed = true;
    l.confirmed_round = book.next_id - 1;
    note(link_id(a, b) + " is slow while both ends are fine with other partners: slow link (" +
         std::to_string(votes) + " votes)");
  } else if (fast >= seen + extra || (l.retests >= cfg.max_tests_per_node && fast > votes)) {
    // Out of retests with more fast results than votes: short of what noise cannot give, noise.
    l.cleared = true;
    note(link_id(a, b) + " is fast on retest: the earlier slow result was noise");
  }
}

int Planner::Impl::fast_pair_tests_of(int u) const {
  return static_cast<int>(std::count_if(pair_tests.begin(), pair_tests.end(),
                                        [&](const PairTest& t) { return !t.slow && (t.a == u || t.b == u); }));
}

bool Planner::Impl::fine_in_pairs(int u, int except, double limit) const {
  std::vector<double> v;
  bool fast = false;
  for (const auto& t : pair_tests) {
    if (!((t.a == u && t.b != except) || (t.b == u && t.a != except))) continue;
    if (nodes[t.a == u ? t.b : t.a].bad) continue;  // slow with a slow node says nothing of u
    fast = fast || !t.slow;
    v.push_back(std::isfinite(t.slowness) ? t.slowness : std::numeric_limits<double>::max());
  }
  if (!fast) return false;
  const std::size_t m = (v.size() - 1) / 2;  // the lower median
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m), v.end());
  return v[m] <= limit;
}

// An end is fine elsewhere when it was fast in a pair test with another partner and its pair tests
// with other partners are, by their median, no more than half as slow as the link's slow pair tests
// (the geometric midpoint). A port capped 1.25x reads "fast" against the default cutoff (0.8, which
// is 1.25x) about half the time, and then it and its link read equally slow; one of three checks
// below the midpoint named its link (N=48, 1.25x, demand 0.4).
double Planner::Impl::pair_only_fine_limit(const LinkData& l) const {
  std::vector<double> v;
  for (const auto& [round, slowness] : l.slow_pair_tests)
    if (std::isfinite(slowness) && slowness > 0) v.push_back(slowness);
  if (v.empty()) return std::numeric_limits<double>::infinity();
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return std::sqrt(std::max(1.0, v[v.size() / 2]));
}

// A pair suspect (NodeData::pair_suspect) is fine in pairs once its fast pair tests outnumber its slow
// ones (partners found slow left out). The pair-only rule's measure (the lower median of its pair
// tests at most the geometric midpoint of its slow ones) held a healthy node of 12 at 20% noise, 9
// fast pair tests against 2 slow ones, whose lone retests read 1.3-1.5x its history's median.
bool Planner::Impl::pair_suspect_fine(int u) const {
  int fast = 0, slow = 0;
  for (const auto& t : pair_tests) {
    if (t.a != u && t.b != u) continue;
    if (nodes[t.a == u ? t.b : t.a].bad) continue;
    ++(t.slow ? slow : fast);
  }
  return fast > slow;
}

bool Planner::Impl::ends_fine_in_pairs(int a, int b, const LinkData& l) const {
  const double limit = pair_only_fine_limit(l);
  return fine_in_pairs(a, b, limit) && fine_in_pairs(b, a, limit);
}

// A pair-only link is confirmed on pair retests alone (its slow pair tests after the one that
// opened it), against what its groups said, so it needs a vote more than a link candidate (three at
// least) and no fast retest: at 20% noise a healthy pair
// reads slow in a lone retest about one time in 25, and with two votes a healthy cluster of 12 had a
// false link.slow in 300 campaigns; a node slow in half the rounds (intermittent, 3x) read fast once
// and slow three times with one partner at N=8, and was named as their link. A cap is steady: a 2x
// cap reads slow in every retest.
int Planner::Impl::pair_only_votes() const { return std::max(3, link_votes_needed() + 1); }
int Planner::Impl::pair_only_retests() const { return pair_only_votes() + 1; }

// Slow in every pair retest, with both ends fast in a pair test with another partner: a slow link
// that only a pair test's rate shows. Cleared once its fast pair tests reach its slow ones (the one
// that opened it too), or reach its votes when the retests run out; undecided otherwise, and then
// reported unresolved (report.cpp).
void Planner::Impl::decide_pair_only_link(int a, int b) {
  auto& l = links[{a, b}];
  const int votes = pair_only_votes_of(l);
  const int fast = l.fast_pair_tests;
  // Slow again in a pair retest: from now on its ends are tested in pairs and judged on them.
  if (votes > 0) nodes[a].pair_checked = nodes[b].pair_checked = true;
  if (votes >= pair_only_votes() && fast == 0 && ends_fine_in_pairs(a, b, l)) {
    l.confirmed = true;
    l.confirmed_round = book.next_id - 1;
    note(link_id(a, b) + " is slow in " + std::to_string(votes) + " pair retests while both ends are fine with "
         "other partners, and fine inside all-to-all groups: slow link (a rate cap only a pair test reaches)");
  } else if (fast >= static_cast<int>(l.slow_pair_tests.size()) ||
             (l.pair_retests >= pair_only_retests() && fast >= votes)) {
    l.cleared = true;
    note(link_id(a, b) + " is fast in pair retests: the earlier slow pair was noise");
    release_pair_checked(a);
    release_pair_checked(b);
  }
}

// Votes of a pair-only link: its slow pair tests after the one that opened it, whatever planned that
// one (the screen's is no vote anyway; Full mode's every-pair round or a resolve pair would be).
int Planner::Impl::pair_only_votes_of(const LinkData& l) const {
  return static_cast<int>(std::count_if(l.slow_pair_tests.begin(), l.slow_pair_tests.end(),
                                        [&](const auto& t) { return l.pair_only_retest(t.first); }));
}

// A node stays pair-checked only while it is an end of an undecided or confirmed pair-only link
// read slow again: once its noise pair is cleared, its rows count as tests again.
void Planner::Impl::release_pair_checked(int u) {
  if (!nodes[u].pair_checked || nodes[u].pair_suspect) return;  // nothing to release: spares a walk of every link (8% of a 4,096-node trial)
  for (const auto* e : link_walk.of(links)) {
    const auto& [key, l] = *e;
    if ((key.first == u || key.second == u) && l.pair_only && !l.cleared && pair_only_votes_of(l) > 0) return;
  }
  nodes[u].pair_checked = false;
}

}  // namespace kiln::analysis
