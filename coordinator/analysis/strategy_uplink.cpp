// Uplink check: congestion comes and goes, so a campaign over a cluster with leaves that found no
// slow switch ends with up to kUplinkChecks all-to-all groups over every good node, each timing its
// edges, planned only when no other strategy wants the round and no leaf is all slow nodes. A
// congested uplink shows in such a group as its leaf's edges, slow across and fast inside
// (evidence_switch.cpp); the group opens no link suspicion, since its heavy-tailed stragglers would
// open new ones as fast as they settle.
#include "coordinator/analysis/strategies.hpp"

namespace kiln::analysis::strategy {

namespace {
constexpr int kUplinkChecks = 2;

// A leaf whose every present member is a slow node: the report makes it a switch finding.
bool all_bad_leaf(const Planner::Impl& s) {
  for (const auto& sw : s.topology) {
    int present = 0, bad = 0;
    for (int u : sw.nodes)
      if (u >= 0 && u < s.n && !s.nodes[u].lost) ++present, bad += s.nodes[u].bad ? 1 : 0;
    if (present >= 2 && bad == present) return true;
  }
  return false;
}
}  // namespace

void uplink_check(Planner::Impl& s, RoundDraft& round) {
  if (!round.empty() || s.topology.size() < 2 || !s.slow_switches.empty() || s.uplink_checks >= kUplinkChecks ||
      all_bad_leaf(s))
    return;
  std::vector<int> g;
  for (int u = 0; u < s.n; ++u)
    if (s.good(u)) g.push_back(u);
  if (g.size() < 4) return;
  ++s.uplink_checks;
  round.add(std::move(g), Tag{Tag::UplinkCheck});
  round.explain("uplink check " + std::to_string(s.uplink_checks) + " of " + std::to_string(kUplinkChecks) +
                ": all-to-all over every good node, across the leaves");
}

}  // namespace kiln::analysis::strategy
