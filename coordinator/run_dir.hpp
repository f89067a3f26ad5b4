// Reading a run directory back: campaign.json, journal.jsonl, results.jsonl and (when there is
// one) report.json into the typed records the analysis works on. Used to re-judge recorded runs
// (tests/data/runs), to rebuild a report (`kiln report`) and to continue a campaign whose
// coordinator died (`kiln resume`).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "coordinator/analysis/expect.hpp"
#include "coordinator/analysis/judge.hpp"
#include "coordinator/journal.hpp"
#include "coordinator/report.hpp"

namespace kiln::coord {

struct BadLine {
  std::size_t line = 0;  // 1-based line number in results.jsonl
  int rank = -1;         // the rank the line names, when it names one
  std::string why;
};

struct LoadedRun {
  nlohmann::json report;                      // report.json as written (null when there is none)
  nlohmann::json campaign;                    // campaign.json (null when there is none)
  std::optional<JournalContents> journal;     // journal.jsonl (absent in runs before it existed)
  int ranks = 0;                              // ranks the campaign expected
  std::vector<RankSeen> seen;                 // what became of each rank that is known
  std::vector<analysis::RankFate> fates;      // the same, as the judgement takes it
  std::vector<analysis::RoundRecord> rounds;  // in round order, each with its records
  std::vector<Result> unattached;             // results naming no round the campaign ran
  std::size_t bad_lines = 0;                  // lines of results.jsonl that could not be read
  std::vector<BadLine> bad;                   // the first of them, for the finding
  bool torn_tail = false;                     // the last line had no newline (never acknowledged)
  analysis::Fleet fleet;                      // plan rounds' figures and inventories
  analysis::Expectations expect;              // what campaign.json says it was judged against
};

// Throws std::runtime_error naming the directory when it holds neither report.json nor
// journal.jsonl, or a file cannot be read. A torn or malformed line of results.jsonl is counted in
// bad_lines, not fatal.
LoadedRun load_run(const std::filesystem::path& dir);

// The report a loaded run amounts to, as `kiln report` writes it: the plan judged again from the
// records, the localization's findings as the journal (or the old report) holds them, and verdict
// error while the campaign is unfinished (with how far it got and how to resume it).
Report rebuild_report(const std::filesystem::path& dir, const LoadedRun& run);

// What the report input of a loaded run is: ranks, records, localization (used by rebuild_report
// and by a resumed campaign, which goes on from it).
ReportInput report_input(const LoadedRun& run);

}  // namespace kiln::coord
