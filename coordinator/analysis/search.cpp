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

#include "coordinator/analysis/strategies.hpp"

namespace kiln::analysis {

namespace {

std::vector<int> join(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out(a);
  out.insert(out.end(), b.begin(), b.end());
  return out;
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
    if (it.origin == "cert") strategy::certification_group_slow(*this, size);
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

}  // namespace kiln::analysis
