// Reading the records the exports need and writing the export files (see report_exports.hpp).
#include "coordinator/report_exports.hpp"

#include <sys/stat.h>

#include <fstream>
#include <set>

#include <spdlog/spdlog.h>

#include "common/telemetry_metrics.hpp"
#include "coordinator/store.hpp"

namespace kiln::coord {

namespace fs = std::filesystem;

ExportRecords read_export_records(const fs::path& dir, const Report& r) {
  std::set<std::int64_t> rounds;
  for (const auto& rr : r.rounds) rounds.insert(rr.id);
  ExportRecords out;
  std::ifstream in(dir / "results.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    Record rec;
    try {
      from_json(nlohmann::json::parse(line), rec);
    } catch (const std::exception&) {
      continue;
    }
    if (auto* e = std::get_if<CheckEnd>(&rec)) {
      if (rounds.count(e->round_id)) out.ends.push_back(std::move(*e));
    } else if (auto& res = std::get<Result>(rec); !is_telemetry_metric(res.metric)) {
      // Telemetry readings are no figures, and at 1 Hz per node would hold a long campaign's
      // whole file in memory here: report.html plots them.
      out.results.push_back(std::move(res));
    }
  }
  return out;
}

namespace {

// A textfile collector runs as another user: the file must be readable by it, and is replaced
// whole (the collector ignores kiln.prom.tmp, which does not end in .prom).
void write_readable(const fs::path& path, const std::string& content) {
  write_file_atomic(path, content);
  ::chmod(path.c_str(), 0644);
}

void try_write(const fs::path& path, const std::string& content, std::vector<std::string>& warnings) {
  try {
    write_readable(path, content);
  } catch (const std::exception& e) {
    warnings.push_back("could not write " + path.string() + ": " + e.what());
    spdlog::warn("{}", warnings.back());
  }
}

}  // namespace

std::vector<std::string> write_exports(const fs::path& dir, const Report& r, const ExportTargets& to) {
  std::vector<std::string> warnings;
  ExportRecords rec;
  try {
    rec = read_export_records(dir, r);
  } catch (const std::exception& e) {  // the report itself is written: exports only warn
    warnings.push_back(std::string("could not read the results for the exports: ") + e.what());
    spdlog::warn("{}", warnings.back());
  }
  try_write(dir / "report.junit.xml", junit_xml(r, rec.ends), warnings);
  const std::string prom = prom_textfile(r, rec.results);
  try_write(dir / "kiln.prom", prom, warnings);
  if (!to.prom_textfile.empty()) try_write(to.prom_textfile, prom, warnings);
  const std::string influx = influx_lines(r, rec.results);
  try_write(dir / "report.influx", influx, warnings);
  if (!to.influx.empty()) try_write(to.influx, influx, warnings);
  return warnings;
}

}  // namespace kiln::coord
