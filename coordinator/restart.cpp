#include "coordinator/restart.hpp"

#include <set>

namespace kiln::coord {

RestartDecision decide_restart(std::int64_t round_id, const std::vector<CheckEnd>& ends, const RestartContext& ctx) {
  RestartDecision d;
  std::set<int> ranks;
  for (const auto& e : ends)
    if (e.mpi_untrusted && e.round_id == round_id) ranks.insert(e.rank);
  if (ranks.empty()) return d;
  d.untrusted.assign(ranks.begin(), ranks.end());
  std::string who;
  for (int r : d.untrusted) who += (who.empty() ? "" : ",") + std::to_string(r);
  const std::string head = "round " + std::to_string(round_id) + " left MPI state untrusted on rank" +
                           (ranks.size() > 1 ? "s " : " ") + who + ": ";
  if (!ctx.can_relaunch) {
    if (!ctx.refusal_said)
      d.line = head + "the " + ctx.launcher + " launcher cannot start the workers again; later rounds may hang or crash";
    return d;
  }
  if (ctx.restarts_so_far >= ctx.cap) {
    if (!ctx.refusal_said)
      d.line = head + "not restarting the workers, the cap of " + std::to_string(ctx.cap) +
               " restarts per campaign is reached; later rounds may hang or crash";
    return d;
  }
  d.restart = true;
  d.line = head + "restarting the workers (restart " + std::to_string(ctx.restarts_so_far + 1) + ")";
  return d;
}

}  // namespace kiln::coord
