// Who a group check that overran its deadline was waiting for, from the members' last progress
// (the heartbeats' operations done and the peer each waits on). A pure function of the round.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "coordinator/analysis/judge.hpp"

namespace kiln::analysis {

struct Behind {
  std::string test;
  std::vector<int> members;  // the group's world ranks
  std::vector<int> behind;   // the members the others waited for (never all of them)
  nlohmann::json evidence;   // the check, ops per member, who waited on whom
};

// One verdict per (group, group check) of the round that timed out or that a member did not
// finish, when the members' progress in that check tells who was behind: members with at most
// half the operations of the group's median (and at least two fewer), or members that at least
// half of the others were waiting on. Nothing when progress is missing for a member or cannot tell.
std::vector<Behind> find_behind(const RoundRecord& rr);

}  // namespace kiln::analysis
