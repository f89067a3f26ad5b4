// A user's own job (jobs/kiln-user-job.sh runs it under srun) read into kiln results: the task
// log it writes, one line per line any task printed, prefixed by the task's rank and host
//
//   RANK<TAB>HOST<TAB>TEXT            what the task printed (stdout and stderr)
//   RANK<TAB>HOST<TAB>KILN_EXIT CODE  the task's exit status, written by the wrapper
//
// and, in TEXT, the contract the user's script follows (docs/user-job.md):
//
//   KILN_METRIC {"name":"tokens_per_s","value":12345.6,"unit":"tok/s"}
//
// or, for a script that cannot be changed, a --match rule NAME:UNIT:REGEX whose first group is
// the number. Everything here is pure (text in, records out) so that the unit tests can feed it
// hostile logs; `kiln ingest` (cli_ingest.cpp) does the I/O.
#pragma once

#include <cstddef>
#include <istream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "common/types.hpp"

namespace kiln::coord {

inline constexpr std::size_t kUserJobMaxLine = 16 * 1024;  // longer lines are cut (and a metric there is an error)
inline constexpr std::size_t kUserJobMaxMatchLine = 4096;  // --match rules search no further (std::regex recurses)
inline constexpr int kUserJobMaxRanks = 65536;
inline constexpr std::size_t kUserJobMaxMetrics = 32;      // distinct metric names per rank
inline constexpr std::size_t kUserJobMaxSamples = 100000;  // samples per rank and metric

// --match NAME:UNIT:REGEX.
struct MatchRule {
  std::string name, unit;
  std::regex re;
  std::string text;  // as given, for messages
};
// Throws std::invalid_argument saying what is wrong with the rule.
MatchRule parse_match_rule(const std::string& rule);

// One task of the job as its log lines tell it.
struct UserTask {
  std::string host;
  bool exited = false;  // a KILN_EXIT line was seen
  int exit_code = 0;
  std::size_t lines = 0;
  std::map<std::string, std::pair<std::string, std::vector<double>>> metrics;  // name -> unit, samples
  std::string error;  // the first broken KILN_METRIC line (with its log line number), "" when none
};

struct UserJobLog {
  std::map<int, UserTask> tasks;
  std::size_t lines = 0;
  std::size_t foreign_lines = 0;  // lines without the RANK<TAB>HOST<TAB> prefix (srun's own, say)
  std::size_t cut_lines = 0;      // lines longer than kUserJobMaxLine
};

// Reads a task log; never throws on what the log holds (a bad line is counted or becomes the
// task's error), only on a stream that fails.
UserJobLog parse_user_job_log(std::istream& in, const std::vector<MatchRule>& rules);

// The result records of the job: per task and metric, the median of its samples (extra: samples,
// min, max) and the task's end, pass only when it exited 0 with at least one metric and no broken
// metric line, else error with the reason. Tasks 0..ranks-1 that wrote nothing end in error too.
// round_id is the one round of the run; ts stamps every record.
std::vector<Record> user_job_records(const UserJobLog& log, const std::string& test, int ranks, double seconds,
                                     std::int64_t round_id, double ts);

}  // namespace kiln::coord
