// Screen (Adaptive mode, first round): a random partition of every node into groups of
// screen_group_size, pairs by default. A fast group proves all its members known-good, which every
// later round needs as partners; each group is a search item, so a slow group larger than a pair is
// bisected by the split strategy.
#include <algorithm>

#include "coordinator/analysis/strategies.hpp"

namespace kiln::analysis::strategy {

void screen(Planner::Impl& s, RoundDraft& round) {
  if (s.cfg.mode != Mode::Adaptive || s.screen.done) return;
  std::vector<int> order;
  for (int u = 0; u < s.n; ++u)
    if (s.active(u)) order.push_back(u);
  std::shuffle(order.begin(), order.end(), s.rng);
  const auto k = static_cast<std::size_t>(s.cfg.screen_group_size);
  for (std::size_t i = 0; i + 1 < order.size(); i += k) {
    std::vector<int> g(order.begin() + static_cast<std::ptrdiff_t>(i),
                       order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), i + k)));
    if (g.size() < 2) break;
    const int id = s.add_item(Item{0, {Block{g, {}}}, false, "screen"});
    round.add(g, Tag{Tag::ItemTest, id, 0, 0});
  }
  s.screen.done = true;
  s.screen.round = s.book.next_id;
  const bool one_left = order.size() % k == 1;
  round.reason = "screen: every node in a group of " + std::to_string(k) +
                 (one_left ? " (one node sits out and is paired with a known-good node next)" : "");
}

}  // namespace kiln::analysis::strategy
