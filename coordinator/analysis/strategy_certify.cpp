// Certify: once no search or suspect is left, test groups that together hold every pair of good
// nodes except the link candidates. The search's inference "one slow sub-block, so drop the
// others" assumes one fault per item; certification re-tests everything it dropped, and a slow
// certification group starts a new search, so a second fault cannot hide. When the sweep is
// through, every pair has been tested: slow groups explained by one candidate alone become votes.
//
// Endpoints of the candidates are coloured so that no candidate has both ends in one colour.
// Round c holds every other good node together with the endpoints of colour c; pairs of endpoints
// of two different colours (other than the candidates) ride along as pair groups in a third
// colour's round, or get pair rounds of their own. One candidate: 2 rounds; two: 3.
#include <algorithm>
#include <map>
#include <set>

#include "coordinator/analysis/strategies.hpp"

namespace kiln::analysis::strategy {

namespace {

using Pairs = std::vector<std::pair<int, int>>;
using CertRound = std::vector<std::vector<int>>;

struct Colouring {
  std::map<int, std::vector<int>> adj;  // candidate links by endpoint
  std::vector<int> ends;                // endpoints, most candidates first
  std::map<int, int> colour;
  int colours = 0;
};

// Greedy, most connected endpoint first, so that a hub does not force extra colours (each colour
// costs a round).
Colouring colour_endpoints(const Pairs& cands) {
  Colouring c;
  for (auto [a, b] : cands) c.adj[a].push_back(b), c.adj[b].push_back(a);
  for (const auto& [u, nb] : c.adj) c.ends.push_back(u);
  std::stable_sort(c.ends.begin(), c.ends.end(),
                   [&](int a, int b) { return c.adj[a].size() > c.adj[b].size(); });
  for (int u : c.ends) {
    std::set<int> used;
    for (int v : c.adj[u])
      if (c.colour.count(v)) used.insert(c.colour[v]);
    int k = 0;
    while (used.count(k)) ++k;
    c.colour[u] = k;
    c.colours = std::max(c.colours, k + 1);
  }
  return c;
}

// Rounds of node-disjoint pairs, first come first placed.
std::vector<CertRound> pair_rounds(Pairs pairs) {
  std::vector<CertRound> out;
  while (!pairs.empty()) {
    std::set<int> busy;
    CertRound round;
    Pairs later;
    for (auto [a, b] : pairs) {
      if (busy.count(a) || busy.count(b)) {
        later.emplace_back(a, b);
        continue;
      }
      busy.insert({a, b});
      round.push_back({a, b});
    }
    out.push_back(std::move(round));
    pairs = std::move(later);
  }
  return out;
}

// Pairs of endpoints in different colours, each placed in the round of a third colour where both
// ends are free; returns those that fit nowhere.
Pairs place_endpoint_pairs(std::vector<CertRound>& rounds, Colouring& col, const Pairs& cands) {
  const std::set<std::pair<int, int>> bad(cands.begin(), cands.end());
  Pairs leftover;
  std::vector<std::set<int>> in_small(static_cast<std::size_t>(col.colours));
  const auto& ends = col.ends;
  for (std::size_t i = 0; i < ends.size(); ++i) {
    for (std::size_t j = i + 1; j < ends.size(); ++j) {
      const int a = std::min(ends[i], ends[j]), b = std::max(ends[i], ends[j]);
      if (col.colour[a] == col.colour[b] || bad.count({a, b})) continue;
      bool placed = false;
      for (int c = 0; c < col.colours && !placed; ++c) {
        if (col.colour[a] == c || col.colour[b] == c) continue;
        if (in_small[c].count(a) || in_small[c].count(b)) continue;
        rounds[c].push_back({a, b});
        in_small[c].insert({a, b});
        placed = true;
      }
      if (!placed) leftover.emplace_back(a, b);
    }
  }
  return leftover;
}

// A new sweep for the current good set and candidates.
void plan_sweep(Planner::Impl& s) {
  auto& cert = s.cert;
  cert.rounds.clear();
  cert.next = 0;
  ++cert.attempts;
  std::vector<int> vgood;
  for (int u = 0; u < s.n; ++u)
    if (s.good(u)) vgood.push_back(u);
  const auto cands = s.candidate_links();
  if (cands.empty()) {
    // No candidate: one group of every good node, unless a fast group already held them all.
    const bool covered = std::all_of(vgood.begin(), vgood.end(), [&](int u) {
      return std::binary_search(s.clean_cover.begin(), s.clean_cover.end(), u);
    });
    if (!covered && vgood.size() >= 2) cert.rounds.push_back({vgood});
    return;
  }
  auto col = colour_endpoints(cands);
  std::vector<int> rest;
  for (int u : vgood)
    if (!col.adj.count(u)) rest.push_back(u);
  for (int c = 0; c < col.colours; ++c) {
    std::vector<int> big = rest;
    for (int u : col.ends)
      if (col.colour[u] == c) big.push_back(u);
    cert.rounds.push_back({});
    if (big.size() >= 2) cert.rounds.back().push_back(big);
  }
  for (auto& r : pair_rounds(place_endpoint_pairs(cert.rounds, col, cands)))
    cert.rounds.push_back(std::move(r));
  std::erase_if(cert.rounds, [](const auto& r) { return r.empty(); });
}

// Certification is over: every pair has been tested, or it was restarted too often to go on.
void finish(Planner::Impl& s) {
  s.cert.certified = true;
  s.count_link_votes();
}

// The next round of the sweep, rebuilt first when the good set, the candidates or the number of
// slow certification groups changed since it was planned. False when certification is over.
bool next_sweep_round(Planner::Impl& s, std::vector<std::vector<int>>& groups,
                      std::vector<Tag>& tags, const std::vector<char>& busy) {
  auto& cert = s.cert;
  if (cert.certified) return false;
  // The affine edge cover read every edge among the good nodes, each in a group timed edge by
  // edge, and no search inferred anything from a group's figure: there is nothing to certify.
  const auto& cover = s.search;
  if (cover.cover_affine && cover.cover_next >= cover.cover.size() && cover.cover_dropped == 0) {
    s.book.finish_note = "every edge was read in the edge cover: no certification sweep needed";
    finish(s);
    return false;
  }
  std::vector<long> sig = {cert.failures};
  long good_count = 0, good_sum = 0;
  for (int u = 0; u < s.n; ++u)
    if (s.good(u)) ++good_count, good_sum += u;
  sig.push_back(good_count);
  sig.push_back(good_sum);
  for (auto [a, b] : s.candidate_links()) sig.push_back(a), sig.push_back(b);
  if (sig != cert.signature) {
    if (cert.attempts >= s.cfg.max_cert_attempts) {
      s.book.finish_note = "certification restarted " + std::to_string(cert.attempts) +
                           " times; stopped with what was found";
      finish(s);
      return false;
    }
    cert.signature = sig;
    plan_sweep(s);
  }
  if (cert.next >= cert.rounds.size()) {
    finish(s);
    return false;
  }
  for (auto& g : cert.rounds[cert.next]) {
    if (std::any_of(g.begin(), g.end(), [&](int u) { return busy[u] || !s.good(u); })) continue;
    const int id = s.add_item(Item{0, {Block{g, {}}}, false, "cert"});
    groups.push_back(g);
    tags.push_back({Tag::ItemTest, id, 0, 0});
  }
  ++cert.next;
  return !groups.empty();
}

// Look again: with per-edge figures, one all-to-all over every good node reads every node's row.
// A node slow in half the rounds is fast in the two or three rounds a healthy campaign ends in one
// time in four or eight, so the campaign goes on until every good node has been in kLooks tests
// (a node slow in half of them escapes all six one time in 64). While one timed group holds them
// all, and past the edge cover's reach (5,820 nodes and up, where a healthy campaign ends in four
// rounds and a node slow half the time went unseen in 4 of 10 trials at 16,384); between the two,
// the cover puts each node in q + 1 tests.
constexpr int kLooks = 6;
constexpr std::size_t kMinLookGroup = 4;

bool next_look_round(Planner::Impl& s, std::vector<std::vector<int>>& groups, std::vector<Tag>& tags,
                     const std::vector<char>& busy) {
  // Within the rounds one fault may take, less one for what a look may turn up.
  if (!s.edges_seen || s.cert.repeats >= kLooks ||
      static_cast<double>(s.book.observed) + 1.0 > one_fault_round_bound(s.n) - 1.0)
    return false;
  std::vector<int> vgood;
  for (int u = 0; u < s.n; ++u) {
    if (!s.good(u)) continue;
    if (busy[u]) return false;
    vgood.push_back(u);
  }
  // Up to 256 nodes the group is timed edge by edge; past the edge cover's reach (5,820 and up) its
  // figure alone shows a node slow in this round, and a slow look is searched like any slow group.
  // Between the two the cover puts every node in q + 1 groups already.
  if (vgood.size() < kMinLookGroup) return false;
  if (vgood.size() > static_cast<std::size_t>(kSmallEdgeCluster) && edge_cover_fits(vgood.size())) return false;
  const auto rec = s.pair_records();
  if (std::all_of(vgood.begin(), vgood.end(), [&](int u) { return rec[u].tests >= kLooks; })) return false;
  ++s.cert.repeats;
  const int id = s.add_item(Item{0, {Block{vgood, {}}}, false, "cert"});
  groups.push_back(std::move(vgood));
  tags.push_back({Tag::ItemTest, id, 0, 0});
  return true;
}

}  // namespace

void certify(Planner::Impl& s, RoundDraft& round) {
  // Only once nothing else is in flight: searches and suspects still change the good set and the
  // candidates, and every change restarts the sweep (at most max_cert_attempts times).
  if (!round.empty() || s.cfg.mode != Mode::Adaptive || !s.search.items.empty() ||
      !s.nodes_needing_test().empty())
    return;
  std::vector<std::vector<int>> gs;
  std::vector<Tag> t;
  if (next_sweep_round(s, gs, t, round.busy)) {
    round.reason = "certify: groups that together hold every pair of good nodes except the " +
                   std::to_string(s.candidate_links().size()) + " link candidate(s)";
  } else if (next_look_round(s, gs, t, round.busy)) {
    round.reason = "look again: every good node in one all-to-all, until each has been in " +
                   std::to_string(kLooks) + " tests (a node slow some of the time shows)";
  } else {
    return;
  }
  for (std::size_t i = 0; i < gs.size(); ++i) round.add(std::move(gs[i]), t[i]);
}

void certification_group_slow(Planner::Impl& s, std::size_t size) {
  ++s.cert.failures;
  s.note("certification group of " + std::to_string(size) +
         " is slow: another fault, searching it");
}

}  // namespace kiln::analysis::strategy
