// The exports beside report.json: JUnit XML, Prometheus textfile, Influx line protocol. Host names
// come from the workers, so each writer is fed hostile ones (spaces, commas, quotes, newlines, <, &).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/findings.hpp"
#include "coordinator/report_exports.hpp"

using namespace kiln;
using namespace kiln::coord;

namespace {

const std::string kHostile = "n 1,\"x\"=<&\n2";

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

CheckEnd end_of(const std::string& test, int rank, Status s, const std::string& reason = "") {
  return CheckEnd{.test = test, .host = kHostile, .rank = rank, .status = s, .reason = reason, .seconds = 1.5};
}

Result result_of(int rank, const std::string& unit, double v, std::optional<std::int64_t> size = std::nullopt) {
  return Result{.test = "mpi.all_reduce", .host = kHostile, .rank = rank, .metric = "busbw", .value = v, .unit = unit,
                .size_bytes = size, .ts = 1700000000.25};
}

Report hostile_report() {
  Report r;
  r.run_id = "run 1";
  r.verdict = "fail";
  r.started = 1700000000;
  r.duration_s = 12.5;
  r.nodes = {{kHostile, {0, 1}, {}}, {"good1", {2}, {}}};
  // Proved by mpi.all_reduce on rank 1: a failure of that testcase, not a suite of its own.
  r.findings.push_back(make_finding(Code::NodeSlow, {"node", kHostile}, "slow \"node\" <here> & there",
                                    nlohmann::json::array({{{"test", "mpi.all_reduce"}, {"rank", 1}}})));
  r.findings.push_back(make_finding(Code::LinkSlow, {"link", kHostile + "<->good1"}, "slow, link", {{"round", 3}}));
  r.checks_by_test = {{"mpi.all_reduce", {{"pass", 1}, {"fail", 1}}}, {"gpu.burn", {{"skip", 1}, {"error", 1}, {"timeout", 1}}}};
  return r;
}

}  // namespace

TEST_CASE("exports: XML escaping covers markup, quotes and line breaks", "[exports]") {
  CHECK(xml_escape("a<b>&\"c'\n") == "a&lt;b&gt;&amp;&quot;c&apos;&#10;");
  CHECK(xml_escape(std::string("bell\x07")) == "bell?");  // not representable in XML 1.0
}

TEST_CASE("exports: JUnit has one testcase per check and rank, counts that add up", "[exports]") {
  const Report r = hostile_report();
  const std::vector<CheckEnd> ends = {end_of("mpi.all_reduce", 0, Status::Pass), end_of("mpi.all_reduce", 1, Status::Fail, "below"),
                                      end_of("gpu.burn", 0, Status::Skip, "no GPU"), end_of("gpu.burn", 1, Status::Error, "cuda"),
                                      end_of("gpu.burn", 2, Status::Timeout, "deadline")};
  const std::string x = junit_xml(r, ends);
  // 5 ends + the link finding no check proves; the node finding rides on rank 1's failure.
  CHECK(count_of(x, "<testcase ") == 6);
  CHECK(count_of(x, "<testsuite ") == 3);
  CHECK(x.find("<testsuites name=\"kiln run 1\" tests=\"6\" failures=\"2\" errors=\"2\" skipped=\"1\"") != std::string::npos);
  CHECK(x.find("<testsuite name=\"gpu.burn\" tests=\"3\" failures=\"0\" errors=\"2\" skipped=\"1\"") != std::string::npos);
  CHECK(x.find("<testsuite name=\"kiln.localize\" tests=\"1\" failures=\"1\"") != std::string::npos);
  CHECK(x.find("message=\"slow &quot;node&quot; &lt;here&gt; &amp; there\"") != std::string::npos);
  CHECK(x.find("<error type=\"timeout\" message=\"deadline\">") != std::string::npos);
  CHECK(x.find("<skipped message=\"no GPU\"/>") != std::string::npos);
  CHECK(x.find("name=\"n 1,&quot;x&quot;=&lt;&amp;&#10;2 rank 1\"") != std::string::npos);
  CHECK(x.find(kHostile) == std::string::npos);
  CHECK(x.find("<&") == std::string::npos);
}

TEST_CASE("exports: a finding on a passing check makes that testcase a failure", "[exports]") {
  Report r = hostile_report();
  r.findings.resize(1);
  const std::string x = junit_xml(r, {end_of("mpi.all_reduce", 1, Status::Pass)});
  CHECK(count_of(x, "<testcase ") == 1);
  CHECK(count_of(x, "<failure type=\"node.slow\"") == 1);
  CHECK(x.find("kiln.localize") == std::string::npos);
}

TEST_CASE("exports: Prometheus labels escape backslash, quote and newline", "[exports]") {
  CHECK(prom_label_escape("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
  CHECK(prom_label_escape("n 1,=<&") == "n 1,=<&");
}

TEST_CASE("exports: Prometheus textfile, one HELP/TYPE per family, one sample per series", "[exports]") {
  const Report r = hostile_report();
  // Two sizes are two series; the same labels twice are one (the later value).
  const std::string t = prom_textfile(r, {result_of(0, "GB/s", 2, 8), result_of(0, "GB/s", 3, 16), result_of(0, "GB/s", 4, 16),
                                           result_of(1, "widgets", 7)});
  CHECK(count_of(t, "# TYPE kiln_check_bytes_per_second gauge\n") == 1);
  CHECK(count_of(t, "\nkiln_check_bytes_per_second{") == 2);
  CHECK(t.find("size_bytes=\"16\"} 4000000000\n") != std::string::npos);
  CHECK(t.find("node=\"n 1,\\\"x\\\"=<&\\n2\"") != std::string::npos);
  CHECK(t.find("metric=\"busbw\",unit=\"widgets\"} 7\n") != std::string::npos);
  CHECK(count_of(t, "\nkiln_findings{") == 2);
  CHECK(t.find("kiln_run_info{run_id=\"run 1\"} 1\n") != std::string::npos);
  CHECK(t.find("kiln_run_verdict{verdict=\"fail\"} 1\n") != std::string::npos);
  CHECK(t.find("kiln_run_duration_seconds 12.5\n") != std::string::npos);
  CHECK(t.find("kiln_node_ok{node=\"good1\"} 1\n") != std::string::npos);
  // Only kiln_run_info names the run: a new run id starts no new series elsewhere.
  CHECK(t.find("run_id") == t.find("kiln_run_info{run_id") + 14);
  CHECK(t.find("run_id", t.find("run_id") + 1) == std::string::npos);
  // Every line is a comment or a sample: no label value broke a line.
  for (const auto& l : lines_of(t)) CHECK((l.rfind("# ", 0) == 0 || l.rfind("kiln_", 0) == 0));
}

TEST_CASE("exports: Influx escaping of tags and string fields", "[exports]") {
  CHECK(influx_tag_escape("a b,c=d\\e") == "a\\ b\\,c\\=d\\\\e");
  CHECK(influx_tag_escape("a\nb") == "a\\ b");
  CHECK(influx_string_escape("say \"hi\" \\ now\n") == "say \\\"hi\\\" \\\\ now ");
}

TEST_CASE("exports: Influx has one line per result, finding and run", "[exports]") {
  const Report r = hostile_report();
  const std::string t = influx_lines(r, {result_of(0, "GB/s", 2, 8), result_of(1, "", 3)});
  const auto ls = lines_of(t);
  REQUIRE(ls.size() == 2 + 2 + 1);
  CHECK(std::count_if(ls.begin(), ls.end(), [](const std::string& l) { return l.rfind("kiln_result,", 0) == 0; }) == 2);
  CHECK(std::count_if(ls.begin(), ls.end(), [](const std::string& l) { return l.rfind("kiln_finding,", 0) == 0; }) == 2);
  CHECK(ls[0] == "kiln_result,run_id=run\\ 1,node=n\\ 1\\,\"x\"\\=<&\\ 2,rank=0,test=mpi.all_reduce,metric=busbw,"
                 "size_bytes=8,unit=GB/s,status=pass value=2 1700000000250000000");
  CHECK(ls[1].find(",unit=") == std::string::npos);  // an empty tag is left out, never written empty
  CHECK(t.find("summary=\"slow \\\"node\\\" <here> & there\"") != std::string::npos);
  CHECK(ls.back() == "kiln_run,run_id=run\\ 1,verdict=fail duration_s=12.5,findings=2i,results=0i 1700000000000000000");
}

TEST_CASE("exports: telemetry readings are read past, figures kept", "[exports]") {
  const auto dir = std::filesystem::temp_directory_path() / ("kiln-exports-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "results.jsonl");
    Result fig = result_of(0, "GB/s", 12.5, 1 << 20);
    Result reading = result_of(0, "s", 3.0);
    reading.metric = "telemetry";
    reading.extra = {{"node", {{"cpu_pct", 50.0}}}};
    Result summary = reading;
    summary.metric = "telemetry_summary";
    for (const Result* r : {&reading, &fig, &summary}) out << nlohmann::json(Record{*r}).dump() << "\n";
  }
  const auto rec = read_export_records(dir, hostile_report());
  std::filesystem::remove_all(dir);
  REQUIRE(rec.results.size() == 1);
  CHECK(rec.results[0].metric == "busbw");
  CHECK(prom_textfile(hostile_report(), rec.results).find("telemetry") == std::string::npos);
}
