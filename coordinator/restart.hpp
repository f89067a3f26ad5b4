// Whether to start the workers again after a round: a check that abandoned an MPI operation at
// its deadline leaves its rank's MPI state untrusted (common/types.hpp, CheckEnd::mpi_untrusted),
// and the next collective on it has hung or crashed. Pure: campaign_restart.cpp acts on it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/types.hpp"

namespace kiln::coord {

inline constexpr int kMaxRestarts = 3;  // per campaign (each coordinator session)

struct RestartDecision {
  bool restart = false;
  std::vector<int> untrusted;  // the ranks whose check ends said so, ascending
  std::string line;            // what to tell the operator; empty when there is nothing to say
};

struct RestartContext {
  int restarts_so_far = 0;
  int cap = kMaxRestarts;
  std::string launcher;      // its name, for the line
  bool can_relaunch = true;  // false: the workers were started by hand
  bool refusal_said = false; // the cap or the launcher's refusal was already said once
};

RestartDecision decide_restart(std::int64_t round_id, const std::vector<CheckEnd>& ends, const RestartContext& ctx);

}  // namespace kiln::coord
