// Reading a run directory back: results.jsonl and report.json into the typed records the analysis
// works on. Used to re-judge recorded runs (tests/data/runs) and to rebuild a report.
#pragma once

#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "coordinator/analysis/judge.hpp"

namespace kiln::coord {

struct LoadedRun {
  nlohmann::json report;                    // report.json as written
  int ranks = 0;                            // ranks the campaign expected
  std::vector<analysis::RankFate> fates;
  std::vector<analysis::RoundRecord> rounds;  // in round order, each with its records
  std::size_t bad_lines = 0;                // lines of results.jsonl that could not be read
};

// Throws std::runtime_error naming the file when report.json or results.jsonl cannot be read.
// A torn or malformed line of results.jsonl is counted in bad_lines, not fatal.
LoadedRun load_run(const std::filesystem::path& dir);

}  // namespace kiln::coord
