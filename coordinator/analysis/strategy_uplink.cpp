// Uplink check: congestion comes and goes, so a campaign over a cluster with leaves that found no
// slow switch ends with up to kUplinkChecks all-to-all groups over every good node, each timing its
// edges, planned only when no other strategy wants the round. A congested uplink shows in such a
// group as its leaf's rows, slow across and fast inside (evidence_switch.cpp); the group opens no
// link suspicion, since its heavy-tailed stragglers would open new ones as fast as they settle.
#include "coordinator/analysis/strategies.hpp"

namespace kiln::analysis::strategy {

namespace {
constexpr int kUplinkChecks = 2;
}  // namespace

void uplink_check(Planner::Impl& s, RoundDraft& round) {
  if (!round.empty() || s.topology.size() < 2 || !s.slow_switches.empty() || s.uplink_checks >= kUplinkChecks)
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
