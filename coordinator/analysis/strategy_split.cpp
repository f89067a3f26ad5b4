// Split: the group-testing search for bad links (and for slow nodes inside screening groups larger
// than a pair).
//
// An all-to-all group is slow iff it holds a bad node or both ends of a bad link, so a group test
// is an edge-detecting query. The search keeps items of candidate pairs: a clique (all pairs of a
// set) or a bundle of node-disjoint bicliques p x q whose sides are each known clean. Each round splits
// every positive item at once:
//   clique S  -> test both halves; a slow half is searched on; if neither half is slow the bad pair
//                crosses the cut: biclique (S1, S2);
//   bundle    -> halve both sides of every block and test the two "diagonal" sub-blocks of each
//                (all disjoint); a slow sub-block is searched on; if none is slow the bad pair lies
//                in the "anti-diagonal" sub-blocks, which form the next bundle without a test.
// Either way the side length halves every round, so one bad link is pinned to a pair in about
// log2(N) rounds. The inference "one slow sub-block, so drop the others" assumes one fault per
// item; certification (strategy_certify.cpp) re-tests what was dropped.
//
// Each round this strategy continues every search in progress, launches the link search once (one
// all-to-all group over the known-good nodes), and sweeps the nodes the searches left idle.
#include <algorithm>
#include <bit>
#include <optional>
#include <set>

#include "coordinator/analysis/strategies.hpp"

namespace kiln::analysis {

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

// A lost or slow node leaves every item it was in; the rest of the item is searched on.
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

namespace strategy {

namespace {

using Results = std::vector<std::pair<Tag, Verdict>>;

std::vector<int> join(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out(a);
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// The first half gets the extra element.
std::pair<std::vector<int>, std::vector<int>> halves(const std::vector<int>& v) {
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() + 1) / 2);
  return {std::vector<int>(v.begin(), mid), std::vector<int>(mid, v.end())};
}

// The groups that test an item this round, each tagged with the block and part it tests.
std::vector<std::vector<int>> item_groups(const Item& it, std::vector<Tag>& tags) {
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

void continue_searches(Planner::Impl& s, RoundDraft& round) {
  int splits = 0, untested = 0;
  for (const auto& [id, it] : s.search.items) {
    std::vector<Tag> t;
    auto gs = item_groups(it, t);
    // All of an item's groups or none: the outcome is read from the whole split, and a part
    // missing from it would count as fast.
    bool ok = !gs.empty();
    for (const auto& g : gs) ok = ok && round.free(g);
    if (!ok) continue;
    for (std::size_t i = 0; i < gs.size(); ++i) round.add(std::move(gs[i]), t[i]);
    (it.positive ? splits : untested) += 1;
  }
  if (splits > 0) round.explain("bisect " + std::to_string(splits) + " slow group(s) in parallel");
  if (untested > 0 && round.reason.empty()) round.reason = "test groups";
}

// Groups of at most this many members have every edge timed up to 5,819 nodes (larger ones past
// that, timed_group_size; the planner reads a group's edges only up to it, and the simulator gives
// them only up to it), and blocks of half that are paired up by the circle method so that
// every edge among the known-good nodes is timed in blocks-1 rounds; past kMaxCoverBlocks blocks
// the affine cover below takes fewer rounds, in groups of up to timed_group_size(n), and past its
// reach the single all-to-all (group figure only) is the search.
constexpr std::size_t kEdgeGroup = 256;
constexpr std::size_t kMaxCoverBlocks = 8;
// The larger timed groups of the affine cover past 256's reach, least first.
constexpr std::size_t kWideEdgeGroups[] = {512, 1024};

// Blocks of at most half a timed group.
std::size_t cover_blocks(std::size_t n) { return (n + kEdgeGroup / 2 - 1) / (kEdgeGroup / 2); }

std::vector<std::vector<std::vector<int>>> edge_cover(const std::vector<int>& v) {
  const std::size_t blocks = cover_blocks(v.size());
  std::vector<std::vector<int>> block(blocks);
  for (std::size_t i = 0; i < v.size(); ++i) block[i % blocks].push_back(v[i]);
  std::vector<int> order;
  for (std::size_t b = 0; b < blocks; ++b) order.push_back(static_cast<int>(b));
  if (order.size() % 2) order.push_back(-1);
  std::vector<std::vector<std::vector<int>>> rounds;
  for (int r = 0; r + 1 < static_cast<int>(order.size()); ++r) {
    rounds.emplace_back();
    for (auto [x, y] : circle_pairs(order, r)) {
      std::vector<int> g = x >= 0 ? block[x] : std::vector<int>{};
      if (y >= 0) g.insert(g.end(), block[y].begin(), block[y].end());
      if (g.size() >= 2) rounds.back().push_back(std::move(g));
    }
  }
  return rounds;
}

// Past kMaxCoverBlocks blocks, an affine plane over the field of q elements (q prime, or a power of
// two) covers every edge in q + 1 rounds instead of the circle method's blocks - 1: the nodes are
// dealt into q^2 blocks (points (x, y)), each round is one parallel class of lines (y = m x + b for
// a slope m, or x = c), and a group is the union of one line's q blocks. Two points share exactly
// one line, so every pair of blocks meets once, and every block meets itself every round. q is the
// least order whose groups (q blocks of ceil(n / q^2) nodes) fit the timed group size g: at 4,096
// nodes (g = 256) q = 16, 17 rounds of 16 groups of 256 (the circle method over blocks of 128 takes
// 31). No cover can take fewer than (n - 1) / (g - 1) rounds (17 at 4,096), since a node meets at
// most g - 1 peers in one; at 16,384 that is 65 rounds for g = 256, 17 (q = 16) for g = 1,024.
struct Field {
  int q = 2;
  int poly = 0;  // for q = 2^k: the reduction polynomial (x^k + ...); 0 for a prime q
  int add(int a, int b) const { return poly ? a ^ b : (a + b) % q; }
  int mul(int a, int b) const {
    if (!poly) return a * b % q;
    int r = 0;
    for (; b; b >>= 1) {
      if (b & 1) r ^= a;
      a <<= 1;
      if (a & q) a ^= poly;
    }
    return r;
  }
};

// Irreducible polynomials for GF(2^k), k = 1..8 (bit i: the coefficient of x^i).
constexpr int kGf2Poly[] = {0, 0b11, 0b111, 0b1011, 0b10011, 0b100101, 0b1000011, 0b10000011, 0b100011011};

// q = 0 when none fits: a group holds q blocks of at least one node, so q <= g, and past g^2 nodes
// no plane does.
Field affine_field(std::size_t n, std::size_t g) {
  auto prime = [](int q) {
    for (int d = 2; d * d <= q; ++d)
      if (q % d == 0) return false;
    return q >= 2;
  };
  for (int q = 2; q <= static_cast<int>(g); ++q) {
    const bool pow2 = (q & (q - 1)) == 0;
    if (!prime(q) && !pow2) continue;
    if (pow2 && std::countr_zero(static_cast<unsigned>(q)) >= static_cast<int>(std::size(kGf2Poly))) continue;
    const std::size_t qq = static_cast<std::size_t>(q) * static_cast<std::size_t>(q);
    if (static_cast<std::size_t>(q) * ((n + qq - 1) / qq) > g) continue;
    Field f{q, 0};
    if (pow2 && q > 2) f.poly = kGf2Poly[std::countr_zero(static_cast<unsigned>(q))];
    return f;
  }
  return Field{0, 0};
}

}  // namespace

std::vector<std::vector<std::vector<int>>> affine_cover(const std::vector<int>& v) {
  const Field f = affine_field(v.size(), timed_group_size(v.size()));
  const int q = f.q;
  if (q == 0) return {};
  std::vector<std::vector<int>> block(static_cast<std::size_t>(q * q));
  for (std::size_t i = 0; i < v.size(); ++i) block[i % block.size()].push_back(v[i]);
  auto point = [&](int x, int y) -> const std::vector<int>& { return block[static_cast<std::size_t>(x * q + y)]; };
  std::vector<std::vector<std::vector<int>>> rounds;
  for (int m = 0; m <= q; ++m) {  // m == q: the vertical lines
    rounds.emplace_back();
    for (int b = 0; b < q; ++b) {
      std::vector<int> g;
      for (int t = 0; t < q; ++t) {
        const auto& pts = m == q ? point(b, t) : point(t, f.add(f.mul(m, t), b));
        g.insert(g.end(), pts.begin(), pts.end());
      }
      if (g.size() >= 2) rounds.back().push_back(std::move(g));
    }
  }
  return rounds;
}

namespace {

// Whether the affine cover in groups of up to g, with a few rounds around it (screen, retests), fits
// the rounds one fault may take. With g = 256: up to 5,819 nodes (q = 23 at 5,819; q = 29 from 5,820
// takes 30 + 10 rounds against 35); at 8,192 it would take 33 rounds against a bound of 36, and at
// 16,384 65 against 38. There the groups grow (timed_group_size): 512 at 8,192 (q = 16, 17 rounds),
// 1,024 at 16,384 (q = 16). Where no size fits, the larger clusters keep the group search (whose
// all-to-alls dilute a link that only an edge figure shows).
constexpr double kCoverSlack = 10.0;
bool affine_cover_fits(std::size_t n, std::size_t g) {
  const int q = affine_field(n, g).q;
  return q > 0 && static_cast<double>(q + 1) + kCoverSlack <= one_fault_round_bound(static_cast<int>(n));
}

// Which edge cover n active nodes get: none up to one timed group, the circle method (run twice)
// up to kMaxCoverBlocks blocks, then the affine plane while it fits the rounds one fault may take.
enum class Cover { None, Circle, Affine };
Cover cover_for(std::size_t n) {
  if (n <= kEdgeGroup) return Cover::None;
  if (cover_blocks(n) <= kMaxCoverBlocks) return Cover::Circle;
  return affine_cover_fits(n, timed_group_size(n)) ? Cover::Affine : Cover::None;
}

// The next round of the edge cover, on the members still known-good and free.
void continue_cover(Planner::Impl& s, RoundDraft& round) {
  if (s.search.cover_next >= s.search.cover.size()) return;
  int groups = 0;
  for (auto g : s.search.cover[s.search.cover_next]) {
    for (int u : g)
      if (s.good(u) && (round.busy[u] || s.nodes[u].item >= 0)) ++s.search.cover_dropped;
    std::erase_if(g, [&](int u) { return !s.active(u) || round.busy[u] || s.nodes[u].item >= 0; });
    if (g.size() < 2) continue;
    if (s.search.cover_next >= s.search.cover_rereads_from) {
      round.add(std::move(g), Tag{Tag::LinkRetest});
    } else {
      const int id = s.add_item(Item{0, {Block{g, {}}}, false, "link-search"});
      round.add(std::move(g), Tag{Tag::ItemTest, id, 0, 0});
    }
    ++groups;
  }
  ++s.search.cover_next;
  round.explain("edge cover " + std::to_string(s.search.cover_next) + "/" + std::to_string(s.search.cover.size()) +
                ": " + std::to_string(groups) + " all-to-all groups timing every edge among the known-good nodes" +
                (s.search.cover_next > s.search.cover_rereads_from ? " again, for the suspicions" : ""));
}

// Once: one all-to-all group over every free known-good node, so that every link among them carries
// traffic at once. One end of every link candidate sits out, or a known candidate would make the
// group slow by itself. With per-edge figures and more nodes than one timed group holds, the edge
// cover instead.
void launch_link_search(Planner::Impl& s, RoundDraft& round) {
  if (s.cfg.mode != Mode::Adaptive || s.search.launched) return;
  std::vector<int> v;
  std::set<int> cover;
  for (auto [a, b] : s.candidate_links())
    if (!cover.count(a) && !cover.count(b)) cover.insert(a);
  for (int u = 0; u < s.n; ++u)
    if (s.good(u) && !round.busy[u] && s.nodes[u].item < 0 && !cover.count(u)) v.push_back(u);
  // The cover times edges, so a candidate's end need not sit out, nor a node busy this round.
  std::vector<int> all;
  for (int u = 0; u < s.n; ++u)
    if (s.active(u)) all.push_back(u);
  const Cover kind = s.edges_seen ? cover_for(all.size()) : Cover::None;
  if (kind == Cover::Circle) {
    v = std::move(all);
    std::shuffle(v.begin(), v.end(), s.rng);
    s.search.cover = edge_cover(v);
    s.search.cover_rereads_from = s.search.cover.size();
    std::shuffle(v.begin(), v.end(), s.rng);
    for (auto& r : edge_cover(v)) s.search.cover.push_back(std::move(r));
    continue_cover(s, round);
  } else if (kind == Cover::Affine) {
    // One pass: its suspicions are retested as edges (retest_edges), packed into few groups, which
    // takes fewer rounds than reading all the edges again.
    std::shuffle(all.begin(), all.end(), s.rng);
    s.search.cover = affine_cover(all);
    s.search.cover_rereads_from = s.search.cover.size();
    s.search.cover_affine = true;
    continue_cover(s, round);
  } else if (v.size() >= 3) {
    std::shuffle(v.begin(), v.end(), s.rng);
    const int id = s.add_item(Item{0, {Block{v, {}}}, false, "link-search"});
    round.add(v, Tag{Tag::ItemTest, id, 0, 0});
    round.explain("all-to-all over " + std::to_string(v.size()) +
                  " known-good nodes: any bad link among them shows");
  }
  s.search.launched = true;
}

// While searches run, the nodes they discarded sit idle. One group over all of them finds a second
// bad link among them now, in parallel, instead of after the first search and its certification.
// It rides along in a round that runs anyway, and is repeated only when more nodes are idle than
// the last sweep held.
void sweep_idle(Planner::Impl& s, RoundDraft& round) {
  if (s.cfg.mode != Mode::Adaptive || !s.search.launched || s.search.items.empty() || round.empty())
    return;
  const auto ends = s.candidate_ends();
  std::vector<int> idle;
  for (int u = 0; u < s.n; ++u)
    if (s.good(u) && !round.busy[u] && s.nodes[u].item < 0 && !ends[u]) idle.push_back(u);
  if (idle.size() < 3 || idle.size() <= s.search.idle_tested) return;
  s.search.idle_tested = idle.size();
  const int id = s.add_item(Item{0, {Block{idle, {}}}, false, "idle-sweep"});
  round.add(idle, Tag{Tag::ItemTest, id, 0, 0});
  round.explain("sweep the " + std::to_string(idle.size()) + " idle known-good nodes");
}

std::optional<Verdict> verdict_of(const Results& results, int block, int part) {
  for (const auto& [t, v] : results)
    if (t.block == block && t.part == part) return v;
  return std::nullopt;
}

// Unknown (no baseline) counts as slow: searching on costs rounds, missing a fault costs more.
bool slow(std::optional<Verdict> v) { return v && *v != Verdict::Fast; }

// An untested item ran as one group: fast clears it, slow makes it a search.
void observe_untested(Planner::Impl& s, Item it, std::optional<Verdict> v) {
  if (!v) return;  // not run this round
  const auto& b = it.blocks.front();
  const std::size_t size = b.p.size() + b.q.size();
  s.drop_item(it.id);
  if (*v == Verdict::Fast || size <= 2) return;  // fast: clean; a slow pair is a pair record
  it.positive = true;
  if (it.origin == "idle-sweep") {
    s.search.idle_tested = 0;
    s.note("the idle nodes of a search are slow together: a second fault, searching it in "
           "parallel");
  }
  if (it.origin == "cert") certification_group_slow(s, size);
  // A cover group read on its figure alone (no edge explained its slowness) is searched on the
  // one-fault inference, which certification must then check.
  if (it.origin == "link-search" && s.search.cover_affine) ++s.search.cover_dropped;
  s.add_item(std::move(it));
}

// A pair is not split further: a slow pair is already recorded as a pair.
void split_clique(Planner::Impl& s, const Block& b, int block, const Results& r,
                  std::vector<Item>& next) {
  auto [h0, h1] = halves(b.p);
  const bool s0 = h0.size() >= 2 && slow(verdict_of(r, block, 0));
  const bool s1 = h1.size() >= 2 && slow(verdict_of(r, block, 1));
  if (s0 && h0.size() > 2) next.push_back({0, {Block{h0, {}}}, true, "split"});
  if (s1 && h1.size() > 2) next.push_back({0, {Block{h1, {}}}, true, "split"});
  if (!s0 && !s1 && !h1.empty()) {
    next.push_back({0, {Block{h0, h1}}, true, "split"});
    s.note("a group of " + std::to_string(b.p.size()) +
           " is slow but both halves are fast: a bad link crosses the cut");
  }
}

// Whether either diagonal sub-block was slow. The anti-diagonal sub-blocks go to `anti`, where the
// bad pair must be if no diagonal of the whole bundle was slow.
bool split_biclique(const Block& b, int block, const Results& r, std::vector<Item>& next,
                    std::vector<Block>& anti) {
  auto [p0, p1] = halves(b.p);
  auto [q0, q1] = halves(b.q);
  const bool d0 = slow(verdict_of(r, block, 0));
  const bool d1 = !p1.empty() && !q1.empty() && slow(verdict_of(r, block, 1));
  if (d0 && p0.size() + q0.size() > 2) next.push_back({0, {Block{p0, q0}}, true, "split"});
  if (d1 && p1.size() + q1.size() > 2) next.push_back({0, {Block{p1, q1}}, true, "split"});
  if (!q1.empty()) anti.push_back({p0, q1});
  if (!p1.empty()) anti.push_back({p1, q0});
  return d0 || d1;
}

void split_positive(Planner::Impl& s, const Item& it, const Results& r) {
  std::vector<Item> next;
  std::vector<Block> anti;
  bool bundle = false, any_slow = false;
  for (std::size_t bi = 0; bi < it.blocks.size(); ++bi) {
    const auto& b = it.blocks[bi];
    const int block = static_cast<int>(bi);
    if (b.q.empty()) {
      split_clique(s, b, block, r, next);
      continue;
    }
    bundle = true;
    if (split_biclique(b, block, r, next, anti)) any_slow = true;
  }
  if (bundle && !any_slow) {
    if (!anti.empty()) next.push_back({0, std::move(anti), true, "split"});
    else s.note("no slow pair where one was expected: the earlier slow result was noise");
  }
  for (auto& x : next) s.add_item(std::move(x));
}

}  // namespace

bool edge_cover_fits(std::size_t n) { return cover_for(n) != Cover::None; }

}  // namespace strategy

std::size_t timed_group_size(std::size_t n) {
  using namespace strategy;
  if (n <= kEdgeGroup || cover_blocks(n) <= kMaxCoverBlocks || affine_cover_fits(n, kEdgeGroup)) return kEdgeGroup;
  for (const std::size_t g : kWideEdgeGroups)
    if (affine_cover_fits(n, g)) return g;
  return kEdgeGroup;
}

namespace strategy {

bool affine_cover_ahead(const Planner::Impl& s) {
  if (s.cfg.mode != Mode::Adaptive || !s.edges_seen) return false;
  if (s.search.launched) return s.search.cover_affine && s.search.cover_next < s.search.cover.size();
  std::size_t active = 0;
  for (int u = 0; u < s.n; ++u) active += s.active(u) ? 1 : 0;
  return cover_for(active) == Cover::Affine;
}

void split(Planner::Impl& s, RoundDraft& round) {
  continue_searches(s, round);
  continue_cover(s, round);
  launch_link_search(s, round);
  sweep_idle(s, round);
}

void observe_split(Planner::Impl& s, int item,
                   const std::vector<std::pair<Tag, Verdict>>& results) {
  Item it = s.search.items.at(item);
  if (!it.positive) {
    observe_untested(s, std::move(it), verdict_of(results, 0, 0));
    return;
  }
  s.drop_item(item);
  split_positive(s, it, results);
}

}  // namespace strategy
}  // namespace kiln::analysis
