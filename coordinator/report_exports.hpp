// The report in the formats other tools read, written beside report.json each time it is written:
// report.junit.xml (a CI's test view: one testcase per check and rank), kiln.prom (a Prometheus
// textfile for node_exporter's textfile collector) and report.influx (Influx line protocol).
// The writers are pure functions of the report and the run's records; write_exports does the I/O
// and only warns when a file cannot be written (an export never changes a campaign's exit code).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/types.hpp"
#include "coordinator/report.hpp"

namespace kiln::coord {

// What the exports read from results.jsonl besides the report: per-rank check ends and figures.
struct ExportRecords {
  std::vector<CheckEnd> ends;   // only those of the report's rounds (as checks_by_test counts them)
  std::vector<Result> results;  // every readable result
};

// Extra copies, outside the run directory (empty: none).
struct ExportTargets {
  std::filesystem::path prom_textfile;  // e.g. /var/lib/prometheus/node-exporter/kiln.prom
  std::filesystem::path influx;
};

// Reads DIR/results.jsonl; unreadable lines are skipped (the report counts them already).
ExportRecords read_export_records(const std::filesystem::path& dir, const Report& r);

std::string junit_xml(const Report& r, const std::vector<CheckEnd>& ends);
std::string prom_textfile(const Report& r, const std::vector<Result>& results);
std::string influx_lines(const Report& r, const std::vector<Result>& results);

// Escaping per each format, exposed for the unit tests.
std::string xml_escape(const std::string& s);        // text and attribute values
std::string prom_label_escape(const std::string& s);  // backslash, quote, newline
std::string influx_tag_escape(const std::string& s);  // comma, space, equals (keys and values)
std::string influx_string_escape(const std::string& s);  // a string field's quotes and backslashes

// Writes report.junit.xml, kiln.prom and report.influx into DIR, and the copies in `to`. Returns
// the warnings (one per file that could not be written), which it has also logged; never throws.
std::vector<std::string> write_exports(const std::filesystem::path& dir, const Report& r,
                                       const ExportTargets& to = {});

}  // namespace kiln::coord
