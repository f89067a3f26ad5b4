// Group-testing search and certification.
//
// An all-to-all group is slow iff it holds a bad node or both ends of a bad link, so a group test is
// an edge-detecting query. The search keeps items of candidate pairs: a clique (all pairs of a set)
// or a bundle of node-disjoint bicliques p x q whose sides are each known clean. Each round splits
// every positive item at once:
//   clique S  -> test both halves; a slow half is searched on; if neither half is slow the bad pair
//                crosses the cut: biclique (S1, S2);
//   bundle    -> halve both sides of every block and test the two "diagonal" sub-blocks of each
//                (all disjoint); a slow sub-block is searched on; if none is slow the bad pair lies
//                in the "anti-diagonal" sub-blocks, which form the next bundle without a test.
// Either way the side length halves every round, so one bad link is pinned to a pair in about
// log2(N) rounds. The inference "one slow sub-block, so drop the others" assumes one fault per
// item; the certification sweep at the end re-tests every pair except the candidates, and a slow
// certification group starts a new search, so a second fault cannot hide.
#include <algorithm>
#include <numeric>

#include "coordinator/analysis/planner_impl.hpp"

namespace kiln::analysis {

namespace {

std::vector<int> join(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out(a);
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

bool contains_sorted(const std::vector<int>& v, int x) {
  return std::binary_search(v.begin(), v.end(), x);
}

}  // namespace

int Planner::Impl::add_item(Item it) {
  it.id = search.next_item_id++;
  for (const auto& b : it.blocks) {
    for (int u : b.p) nodes[u].item = it.id;
    for (int u : b.q) nodes[u].item = it.id;
  }
  const int id = it.id;
  search.items.emplace(id, std::move(it));
  return id;
}

void Planner::Impl::drop_item(int id) {
  auto it = search.items.find(id);
  if (it == search.items.end()) return;
  for (const auto& b : it->second.blocks) {
    for (int u : b.p)
      if (nodes[u].item == id) nodes[u].item = -1;
    for (int u : b.q)
      if (nodes[u].item == id) nodes[u].item = -1;
  }
  search.items.erase(it);
}

std::vector<std::vector<int>> Planner::Impl::item_groups(const Item& it, std::vector<Tag>& tags) const {
  std::vector<std::vector<int>> out;
  if (!it.positive) {
    const auto& b = it.blocks.front();
    out.push_back(join(b.p, b.q));
    tags.push_back({Tag::ItemTest, it.id, 0, 0});
    return out;
  }
  for (std::size_t bi = 0; bi < it.blocks.size(); ++bi) {
    const auto& b = it.blocks[bi];
    const int block = static_cast<int>(bi);
    if (b.q.empty()) {
      auto [h0, h1] = halves(b.p);
      if (h0.size() >= 2) out.push_back(h0), tags.push_back({Tag::ItemTest, it.id, block, 0});
      if (h1.size() >= 2) out.push_back(h1), tags.push_back({Tag::ItemTest, it.id, block, 1});
      continue;
    }
    auto [p0, p1] = halves(b.p);
    auto [q0, q1] = halves(b.q);
    out.push_back(join(p0, q0));
    tags.push_back({Tag::ItemTest, it.id, block, 0});
    if (!p1.empty() && !q1.empty()) {
      out.push_back(join(p1, q1));
      tags.push_back({Tag::ItemTest, it.id, block, 1});
    }
  }
  return out;
}

void Planner::Impl::observe_item(int id, const std::vector<std::pair<Tag, Verdict>>& results) {
  Item it = search.items.at(id);
  auto verdict_of = [&](int block, int part) -> std::optional<Verdict> {
    for (const auto& [t, v] : results)
      if (t.block == block && t.part == part) return v;
    return std::nullopt;
  };
  // Unknown (no baseline) counts as slow: searching on costs rounds, missing a fault costs more.
  auto slow = [](std::optional<Verdict> v) { return v && *v != Verdict::Fast; };

  if (!it.positive) {
    const auto v = verdict_of(0, 0);
    if (!v) return;  // not run this round
    const auto& b = it.blocks.front();
    const std::size_t size = b.p.size() + b.q.size();
    drop_item(id);
    if (*v == Verdict::Fast || size <= 2) return;  // fast: clean; a slow pair is a pair record
    it.positive = true;
    if (it.origin == "idle-sweep") {
      search.idle_tested = 0;
      note("the idle nodes of a search are slow together: a second fault, searching it in parallel");
    }
    if (it.origin == "cert") {
      ++cert.failures;
      note("certification group of " + std::to_string(size) + " is slow: another fault, searching it");
    }
    add_item(std::move(it));
    return;
  }

  drop_item(id);
  std::vector<Item> next;
  std::vector<Block> anti;
  bool bundle = false, any_slow = false;
  for (std::size_t bi = 0; bi < it.blocks.size(); ++bi) {
    const auto& b = it.blocks[bi];
    const int block = static_cast<int>(bi);
    if (b.q.empty()) {
      auto [h0, h1] = halves(b.p);
      const bool s0 = h0.size() >= 2 && slow(verdict_of(block, 0));
      const bool s1 = h1.size() >= 2 && slow(verdict_of(block, 1));
      if (s0 && h0.size() > 2) next.push_back({0, {Block{h0, {}}}, true, "split"});
      if (s1 && h1.size() > 2) next.push_back({0, {Block{h1, {}}}, true, "split"});
      if (!s0 && !s1 && !h1.empty()) {
        next.push_back({0, {Block{h0, h1}}, true, "split"});
        note("a group of " + std::to_string(b.p.size()) +
             " is slow but both halves are fast: a bad link crosses the cut");
      }
      continue;
    }
    bundle = true;
    auto [p0, p1] = halves(b.p);
    auto [q0, q1] = halves(b.q);
    const bool d0 = slow(verdict_of(block, 0));
    const bool d1 = !p1.empty() && !q1.empty() && slow(verdict_of(block, 1));
    if (d0) {
      any_slow = true;
      if (p0.size() + q0.size() > 2) next.push_back({0, {Block{p0, q0}}, true, "split"});
    }
    if (d1) {
      any_slow = true;
      if (p1.size() + q1.size() > 2) next.push_back({0, {Block{p1, q1}}, true, "split"});
    }
    if (!q1.empty()) anti.push_back({p0, q1});
    if (!p1.empty()) anti.push_back({p1, q0});
  }
  if (bundle && !any_slow) {
    if (!anti.empty()) next.push_back({0, std::move(anti), true, "split"});
    else note("no slow pair where one was expected: the earlier slow result was noise");
  }
  for (auto& x : next) add_item(std::move(x));
}

void Planner::Impl::strip_lost_from_items() {
  std::vector<int> ids;
  for (const auto& [id, it] : search.items) ids.push_back(id);
  for (int id : ids) {
    Item it = search.items.at(id);
    bool changed = false;
    auto keep = [&](std::vector<int>& v) {
      const auto before = v.size();
      v.erase(std::remove_if(v.begin(), v.end(), [&](int u) { return !active(u); }), v.end());
      changed = changed || v.size() != before;
    };
    for (auto& b : it.blocks) keep(b.p), keep(b.q);
    if (!changed) continue;
    drop_item(id);
    std::erase_if(it.blocks, [](const Block& b) {
      return b.q.empty() ? b.p.size() < 2 : (b.p.empty() || b.q.empty());
    });
    if (!it.blocks.empty()) add_item(std::move(it));
  }
}

std::vector<std::pair<int, int>> Planner::Impl::candidate_links() const {
  std::vector<std::pair<int, int>> out;
  for (const auto& [key, l] : links)
    if (!l.cleared && good(key.first) && good(key.second)) out.push_back(key);
  return out;
}

void Planner::Impl::plan_cert() {
  cert.rounds.clear();
  cert.next = 0;
  ++cert.attempts;
  std::vector<int> vgood;
  for (int u = 0; u < n; ++u)
    if (good(u)) vgood.push_back(u);
  const auto cands = candidate_links();
  if (cands.empty()) {
    const bool covered = std::all_of(vgood.begin(), vgood.end(),
                                     [&](int u) { return contains_sorted(clean_cover, u); });
    if (!covered && vgood.size() >= 2) cert.rounds.push_back({vgood});
    return;
  }
  // Endpoints get colours so that no candidate has both ends in one colour; round c holds every
  // other good node together with colour c, and pairs of endpoints left uncovered get pair rounds.
  std::map<int, std::vector<int>> adj;
  for (auto [a, b] : cands) adj[a].push_back(b), adj[b].push_back(a);
  std::vector<int> ends;
  for (const auto& [u, nb] : adj) ends.push_back(u);
  std::stable_sort(ends.begin(), ends.end(),
                   [&](int a, int b) { return adj[a].size() > adj[b].size(); });
  std::map<int, int> colour;
  int colours = 0;
  for (int u : ends) {
    std::set<int> used;
    for (int v : adj[u])
      if (colour.count(v)) used.insert(colour[v]);
    int c = 0;
    while (used.count(c)) ++c;
    colour[u] = c;
    colours = std::max(colours, c + 1);
  }
  std::vector<int> rest;
  for (int u : vgood)
    if (!adj.count(u)) rest.push_back(u);
  std::vector<std::vector<char>> used_in_round(static_cast<std::size_t>(colours));
  for (int c = 0; c < colours; ++c) {
    std::vector<int> big = rest;
    for (int u : ends)
      if (colour[u] == c) big.push_back(u);
    cert.rounds.push_back({});
    if (big.size() >= 2) cert.rounds.back().push_back(big);
  }
  std::set<std::pair<int, int>> bad(cands.begin(), cands.end());
  std::vector<std::pair<int, int>> leftover;
  std::vector<std::set<int>> in_small(static_cast<std::size_t>(colours));
  for (std::size_t i = 0; i < ends.size(); ++i) {
    for (std::size_t j = i + 1; j < ends.size(); ++j) {
      const int a = std::min(ends[i], ends[j]), b = std::max(ends[i], ends[j]);
      if (colour[a] == colour[b] || bad.count({a, b})) continue;
      bool placed = false;
      for (int c = 0; c < colours && !placed; ++c) {
        if (colour[a] == c || colour[b] == c || in_small[c].count(a) || in_small[c].count(b)) continue;
        cert.rounds[c].push_back({a, b});
        in_small[c].insert({a, b});
        placed = true;
      }
      if (!placed) leftover.emplace_back(a, b);
    }
  }
  while (!leftover.empty()) {
    std::set<int> busy;
    std::vector<std::vector<int>> round;
    std::vector<std::pair<int, int>> later;
    for (auto [a, b] : leftover) {
      if (busy.count(a) || busy.count(b)) {
        later.emplace_back(a, b);
        continue;
      }
      busy.insert({a, b});
      round.push_back({a, b});
    }
    cert.rounds.push_back(std::move(round));
    leftover = std::move(later);
  }
  std::erase_if(cert.rounds, [](const auto& r) { return r.empty(); });
}

bool Planner::Impl::build_cert_round(std::vector<std::vector<int>>& groups, std::vector<Tag>& tags,
                                     std::vector<char>& busy) {
  if (cert.certified) return false;
  std::vector<long> sig = {cert.failures};
  long good_count = 0, good_sum = 0;
  for (int u = 0; u < n; ++u)
    if (good(u)) ++good_count, good_sum += u;
  sig.push_back(good_count);
  sig.push_back(good_sum);
  for (auto [a, b] : candidate_links()) sig.push_back(a), sig.push_back(b);
  if (sig != cert.signature) {
    if (cert.attempts >= cfg.max_cert_attempts) {
      book.finish_note = "certification restarted " + std::to_string(cert.attempts) +
                    " times; stopped with what was found";
      cert.certified = true;
      count_link_votes();
      return false;
    }
    cert.signature = sig;
    plan_cert();
  }
  if (cert.next >= cert.rounds.size()) {
    cert.certified = true;
    count_link_votes();
    return false;
  }
  for (auto& g : cert.rounds[cert.next]) {
    if (std::any_of(g.begin(), g.end(), [&](int u) { return busy[u] || !good(u); })) continue;
    const int id = add_item(Item{0, {Block{g, {}}}, false, "cert"});
    groups.push_back(g);
    tags.push_back({Tag::ItemTest, id, 0, 0});
  }
  ++cert.next;
  return !groups.empty();
}

// Once everything else is certified clean, a slow group holding both ends of exactly one
// candidate, and no bad or lost node, is explained by that link alone: it counts as a vote.
void Planner::Impl::count_link_votes() {
  const auto cands = candidate_links();
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
    update_link(a, b);
  }
}

bool Planner::Impl::has_group_evidence(int a, int b) const {
  for (const auto& g : slow_groups)
    if (contains_sorted(g.members, a) && contains_sorted(g.members, b)) return true;
  return false;
}

void Planner::Impl::update_link(int a, int b) {
  {
    auto& l = links[{a, b}];
    if (l.confirmed || l.cleared) return;
    const int votes = l.group_votes;
    const int total = static_cast<int>(l.slow_pair_tests.size()) + votes;
    if (total >= cfg.votes && total > l.fast_pair_tests) {
      l.confirmed = true;
      l.confirmed_round = book.next_id - 1;
      note(link_id(a, b) + " is slow while both ends are fine with other partners: slow link (" +
           std::to_string(total) + " votes)");
    } else if (l.fast_pair_tests >= total) {
      l.cleared = true;
      note(link_id(a, b) + " is fast on retest: the earlier slow result was noise");
    }
  }
}

}  // namespace kiln::analysis
