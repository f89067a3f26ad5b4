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
// half the operations of the group's median (and at least two fewer), members that at least half
// of the others were waiting on, or a member whose process stalled (did not run at all) for a
// second or more and four times longer than any other: in a collective every member completes
// the same operations, so a member that is stopped or starved of CPU shows only there. Nothing
// when progress is missing for a member or cannot tell.
std::vector<Behind> find_behind(const RoundRecord& rr);

}  // namespace kiln::analysis
