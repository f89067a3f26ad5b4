// Judgement of what the campaign saw, as pure functions from typed records to decisions: the
// findings of the plan's rounds (failed measurements, checks that ended in error or timeout, ranks
// that never came or were lost), and the figure of each group of a localization round. No I/O:
// tests/unit/test_analysis_judge.cpp runs them on results.jsonl files recorded from real runs.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/checks.hpp"
#include "common/protocol.hpp"
#include "common/types.hpp"
#include "coordinator/analysis/planner.hpp"

namespace kiln::analysis {

// Plan rounds run the test plan and their failures become findings directly; localization rounds
// are evidence for the planner, which judges them (a timeout there is against a group, not a rank).
enum class Phase { Plan, Localize };

// One round as the campaign saw it.
struct RoundRecord {
  proto::Round round;
  std::string reason;
  Phase phase = Phase::Plan;
  double duration_s = 0.0;
  std::set<int> expected;  // ranks asked to take part
  std::set<int> done;
  std::set<int> missing;   // expected but not done by the deadline (or lost)
  // The results judgement reads: in a live campaign, those that did not pass, and in localization
  // rounds every one (the group figures); the rest are on disk and only counted, so memory stays
  // flat however long a burn-in runs. A run read back from disk keeps them all.
  std::vector<Result> results;
  std::vector<CheckEnd> ends;
  std::uint64_t result_count = 0;                              // every result of the round
  std::map<std::string, std::map<std::string, std::uint64_t>> by_test;  // test -> status -> results
  // Each rank's last reported progress in this round (live campaigns only): who a group that
  // overran was waiting for (analysis/behind.hpp).
  std::map<int, proto::RankProgress> progress;
  // False when the round was cut short (the coordinator died, the disk failed, a signal, the job
  // ended): its records stay in results.jsonl but prove nothing, and kiln resume runs it again.
  bool finished = true;
};

// Whether a live campaign keeps `r` in its round record (see RoundRecord::results).
inline bool kept_for_judgement(const RoundRecord& rr, const Result& r) {
  return rr.phase == Phase::Localize || r.status == Status::Fail || r.status == Status::Error ||
         r.status == Status::Timeout;
}

// What became of one rank.
struct RankFate {
  int rank = -1;
  std::string host;
  bool joined = false;
  bool lost = false;  // lost mid-campaign (not after the campaign's own goodbye)
  std::string lost_reason;
};

// Findings from the ranks' fates and the plan's rounds: rank.missing, rank.lost, one finding per
// (code, entity) for results that did not pass (codes from the result's problems, else
// test.<status>), test.error/test.timeout for checks that ended so, test.timeout for a rank that
// did not finish a round. Rounds that did not finish are left out.
std::vector<Finding> judge_plan(int expected_ranks, const std::vector<RankFate>& fates,
                                const std::vector<RoundRecord>& rounds);

// The planner's outcome for each group of `plan` from the round that ran it. unit_rank[u] is the
// rank that ran unit u. The group's figure is its slowest member's declared figure (at
// size_bytes for per-size figures); a group whose check timed out is slow, not a hang.
// When members timed each peer (extra.peers, mpi.alltoall's per_peer), edges holds one figure per
// pair of live members: the worse of the two directions, or the one direction reported.
std::vector<GroupOutcome> group_outcomes(const RoundPlan& plan, const RoundRecord& rec,
                                         const std::vector<int>& unit_rank, const std::set<int>& lost_units,
                                         const FigureSpec& figure, std::int64_t size_bytes);

}  // namespace kiln::analysis
