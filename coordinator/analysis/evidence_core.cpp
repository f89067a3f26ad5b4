// The fast core of a group's edges (evidence_core.hpp).
#include "coordinator/analysis/evidence_core.hpp"

#include <algorithm>
#include <cmath>

#include "common/stats.hpp"

namespace kiln::analysis {

namespace {
// A fast core (fast_core) is looked for in groups of up to this many members (8,128 edges): the
// half-slow small clusters it is for, at the cost of a pass over a group's edges per member.
constexpr std::size_t kCoreMembers = 128;
// Each core member is fast with at least this share of the others, and the members outside it with
// at most the rest of the edges among them.
constexpr double kCoreRow = 0.75;
// Fewest edges in each row for a row core (row_core): a median of 7 edges at 20% noise spreads about
// 0.095, short of the relative cutoff's gap between the two clusters of rows by z_cutoff spreads.
// Groups of 8 (rows of 7) count: with 2 of 8 nodes 2x at 10% noise, their 13 edges of 28 widen the
// spread until their rows read fine, and 39 campaigns of 500 left one unreported.
constexpr std::size_t kRowCoreEdges = 7;

// The log of each edge's figure as a cost, in the order of o.edges.
std::vector<double> edge_logs(const GroupOutcome& o, const OutlierConfig& rules) {
  std::vector<double> logs;
  logs.reserve(o.edges.size());
  for (const auto& e : o.edges) logs.push_back(std::log(to_cost(e.value, rules.direction)));
  return logs;
}

// The edges (logs) among the members marked in (by place in g) and those that touch one outside.
struct Split {
  std::vector<double> inside, around;
};
Split split_at(const GroupOutcome& o, const std::vector<double>& logs, const std::vector<char>& in,
               const std::vector<int>& row_of) {
  auto at = [&](int u) { return static_cast<std::size_t>(row_of[static_cast<std::size_t>(u)]); };
  Split s;
  for (std::size_t i = 0; i < logs.size(); ++i)
    (in[at(o.edges[i].a)] && in[at(o.edges[i].b)] ? s.inside : s.around).push_back(logs[i]);
  return s;
}

// The core of the members marked in, sorted.
FastCore core_of(const std::vector<int>& g, const std::vector<char>& in, bool sure, double spread) {
  FastCore core;
  for (std::size_t i = 0; i < g.size(); ++i)
    if (in[i]) core.members.push_back(g[i]);
  std::sort(core.members.begin(), core.members.end());
  core.sure = sure;
  core.spread = spread;
  return core;
}
}  // namespace

std::optional<FastCore> fast_core(const std::vector<int>& g, const GroupOutcome& o, const OutlierConfig& rules,
                              const std::vector<int>& row_of, std::size_t min_members) {
  const std::size_t m = g.size();
  if (m > kCoreMembers || m <= min_members) return std::nullopt;
  const auto logs = edge_logs(o, rules);
  const double rel_limit = relative_limit(rules);
  const double edge = stats::median(logs) - rel_limit;
  const auto fast_count = static_cast<std::size_t>(std::count_if(logs.begin(), logs.end(), [&](double x) { return x <= edge; }));
  if (fast_count < 2 || fast_count * 10 < logs.size() || fast_count * 2 >= logs.size()) return std::nullopt;
  auto at = [&](int u) { return static_cast<std::size_t>(row_of[static_cast<std::size_t>(u)]); };
  std::vector<char> fast(m * m, 0);
  for (std::size_t i = 0; i < logs.size(); ++i)
    if (logs[i] <= edge) fast[at(o.edges[i].a) * m + at(o.edges[i].b)] = fast[at(o.edges[i].b) * m + at(o.edges[i].a)] = 1;
  std::vector<char> in(m, 1);
  auto fast_with = [&](std::size_t i, const std::vector<char>& set) {
    std::size_t c = 0;
    for (std::size_t j = 0; j < m; ++j) c += set[j] && j != i && fast[i * m + j] ? 1 : 0;
    return c;
  };
  for (std::size_t left = m;; --left) {
    if (left < min_members) return std::nullopt;
    std::size_t worst = m, fewest = m;
    for (std::size_t i = 0; i < m; ++i)
      if (in[i]) {
        const auto c = fast_with(i, in);
        if (c < fewest) fewest = c, worst = i;
      }
    if (static_cast<double>(fewest) >= kCoreRow * static_cast<double>(left - 1)) break;
    in[worst] = 0;
  }
  std::vector<char> out(m, 0);
  std::size_t k = 0;
  for (std::size_t i = 0; i < m; ++i) out[i] = !in[i], k += in[i] ? 1 : 0;
  if (k == m) return std::nullopt;
  std::size_t among_out = 0;  // fast edges among the members outside, each counted from both ends
  for (std::size_t i = 0; i < m; ++i)
    if (out[i]) among_out += fast_with(i, out);
  const double out_edges = static_cast<double>(m - k) * static_cast<double>(m - k - 1);
  if (static_cast<double>(among_out) > (1.0 - kCoreRow) * out_edges) return std::nullopt;
  const auto [inside, around] = split_at(o, logs, in, row_of);
  const double apart = stats::median(around) - stats::median(inside);
  const double spread = stats::mad_sigma(around);
  if (apart <= rel_limit || apart < rules.z_cutoff / 2 * spread) return std::nullopt;
  return core_of(g, in, apart >= rules.z_cutoff * spread, spread);
}

std::optional<FastCore> row_core(const std::vector<int>& g, const GroupOutcome& o, const OutlierConfig& rules,
                                 const std::vector<int>& row_of, std::size_t min_members) {
  const std::size_t m = g.size();
  if (m > kCoreMembers || m < kRowCoreEdges + 1) return std::nullopt;
  auto at = [&](int u) { return static_cast<std::size_t>(row_of[static_cast<std::size_t>(u)]); };
  const auto logs = edge_logs(o, rules);
  std::vector<std::vector<double>> rows(m);
  for (auto& r : rows) r.reserve(m - 1);
  for (std::size_t i = 0; i < logs.size(); ++i) {
    rows[at(o.edges[i].a)].push_back(logs[i]);
    rows[at(o.edges[i].b)].push_back(logs[i]);
  }
  std::vector<double> level(m);
  for (std::size_t i = 0; i < m; ++i) {
    if (rows[i].size() < kRowCoreEdges) return std::nullopt;
    level[i] = stats::median_in_place(rows[i]);
  }
  const double rel_limit = relative_limit(rules);
  const auto fast = fast_cluster(level, rules, rel_limit);
  if (fast.size() < min_members) return std::nullopt;
  const double top = *std::max_element(fast.begin(), fast.end());
  std::vector<char> in(m, 0);
  for (std::size_t i = 0; i < m; ++i) in[i] = level[i] <= top;
  const auto [inside, around] = split_at(o, logs, in, row_of);
  // The members outside are slow with each other too, as slow nodes are; a congested leaf's are not.
  const double fast_edge = stats::median(inside) + rel_limit;
  std::size_t among_out = 0, fast_out = 0;
  for (std::size_t i = 0; i < logs.size(); ++i)
    if (!in[at(o.edges[i].a)] && !in[at(o.edges[i].b)]) ++among_out, fast_out += logs[i] <= fast_edge ? 1 : 0;
  if (static_cast<double>(fast_out) > (1.0 - kCoreRow) * static_cast<double>(among_out)) return std::nullopt;
  return core_of(g, in, true, stats::mad_sigma(around));
}

}  // namespace kiln::analysis
