// report.junit.xml: the report as a CI reads test results (the JUnit XML format as Jenkins and Ant
// document it; tests/data/junit.xsd is our schema of it). One testsuite per check, one testcase per
// rank that ended it; findings that no check's result proves (the localization's) form the suite
// kiln.localize, one testcase each, so that nothing the report found is left out of the CI view.
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "common/findings.hpp"
#include "coordinator/report_exports.hpp"

namespace kiln::coord {

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += "&#10;"; break;
      case '\t': out += "&#9;"; break;
      case '\r': out += "&#13;"; break;
      default:
        // XML 1.0 has no other control characters, escaped or not: show them, never emit them.
        if (c < 0x20) out += "?"; else out += static_cast<char>(c);
    }
  }
  return out;
}

namespace {

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s < 0 ? 0.0 : s);
  return buf;
}

// Whether f is proved by check `test` on `rank`: its evidence holds one of that rank's results.
bool proves(const Finding& f, const std::string& test, int rank) {
  if (!f.evidence.is_array()) return false;
  for (const auto& e : f.evidence)
    if (e.is_object() && e.value("test", std::string()) == test && e.contains("rank") && e["rank"].is_number_integer() &&
        e["rank"].get<int>() == rank)
      return true;
  return false;
}

std::string finding_text(const Finding& f) {
  return f.summary + "\nnext step: " + f.next_step + "\nevidence: " +
         f.evidence.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

struct Case {
  std::string classname, name, time, body;  // body: the failure/error/skipped element, or ""
  char kind = 'p';                          // p pass, f failure, e error, s skipped
};

Case check_case(const CheckEnd& e, const std::vector<const Finding*>& found) {
  Case c{e.test, e.host + " rank " + std::to_string(e.rank), seconds(e.seconds), "", 'p'};
  std::string text;
  for (const auto* f : found) text += finding_text(*f);
  const std::string status = to_string(e.status);
  if (e.status == Status::Error || e.status == Status::Timeout) {
    c.kind = 'e';
    c.body = "<error type=\"" + status + "\" message=\"" + xml_escape(e.reason) + "\">" + xml_escape(text) + "</error>";
  } else if (e.status == Status::Fail || !found.empty()) {
    c.kind = 'f';
    const std::string msg = found.empty() ? e.reason : found.front()->summary;
    c.body = "<failure type=\"" + (found.empty() ? status : to_string(found.front()->code)) + "\" message=\"" +
             xml_escape(msg) + "\">" + xml_escape(text.empty() ? e.reason : text) + "</failure>";
  } else if (e.status == Status::Skip) {
    c.kind = 's';
    c.body = "<skipped message=\"" + xml_escape(e.reason) + "\"/>";
  }
  return c;
}

Case finding_case(const Finding& f) {
  const std::string sev = to_string(f.severity);
  Case c{"kiln.localize", to_string(f.code) + " " + f.entity.kind + " " + f.entity.id, seconds(0), "", 'f'};
  if (f.severity == Severity::Info) {
    c.kind = 's';
    c.body = "<skipped message=\"" + xml_escape("info: " + f.summary) + "\"/>";
    return c;
  }
  c.body = "<failure type=\"" + xml_escape(to_string(f.code)) + "\" message=\"" + xml_escape(sev + ": " + f.summary) +
           "\">" + xml_escape(finding_text(f)) + "</failure>";
  return c;
}

struct Totals {
  std::size_t tests = 0, failures = 0, errors = 0, skipped = 0;
  double time = 0;
  void add(const Case& c, double t) {
    ++tests;
    failures += c.kind == 'f';
    errors += c.kind == 'e';
    skipped += c.kind == 's';
    time += t;
  }
  std::string attrs() const {
    return "tests=\"" + std::to_string(tests) + "\" failures=\"" + std::to_string(failures) + "\" errors=\"" +
           std::to_string(errors) + "\" skipped=\"" + std::to_string(skipped) + "\" time=\"" + seconds(time) + "\"";
  }
};

void put_suite(std::ostringstream& o, const std::string& name, const std::vector<std::pair<Case, double>>& cases,
               Totals& all, const std::string& stamp) {
  Totals t;
  for (const auto& [c, s] : cases) t.add(c, s);
  o << "  <testsuite name=\"" << xml_escape(name) << "\" " << t.attrs() << " timestamp=\"" << stamp << "\">\n";
  for (const auto& [c, s] : cases) {
    o << "    <testcase classname=\"" << xml_escape(c.classname) << "\" name=\"" << xml_escape(c.name) << "\" time=\""
      << c.time << "\"" << (c.body.empty() ? "/>\n" : ">" + c.body + "</testcase>\n");
  }
  o << "  </testsuite>\n";
  for (const auto& [c, s] : cases) all.add(c, s);
}

std::string iso_time(double unix_s) {
  const auto t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

}  // namespace

std::string junit_xml(const Report& r, const std::vector<CheckEnd>& ends) {
  std::map<std::string, std::vector<std::pair<Case, double>>> suites;
  std::set<const Finding*> tied;
  for (const auto& e : ends) {
    std::vector<const Finding*> found;
    for (const auto& f : r.findings)
      if (proves(f, e.test, e.rank)) found.push_back(&f);
    tied.insert(found.begin(), found.end());
    suites[e.test].push_back({check_case(e, found), e.seconds < 0 ? 0 : e.seconds});
  }
  std::vector<std::pair<Case, double>> localize;
  for (const auto& f : r.findings)
    if (!tied.count(&f)) localize.push_back({finding_case(f), 0.0});
  const std::string stamp = iso_time(r.started);
  std::ostringstream body;
  Totals all;
  for (const auto& [name, cases] : suites) put_suite(body, name, cases, all, stamp);
  if (!localize.empty()) put_suite(body, "kiln.localize", localize, all, stamp);
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"" + xml_escape("kiln " + r.run_id) + "\" " +
         all.attrs() + ">\n" + body.str() + "</testsuites>\n";
}

}  // namespace kiln::coord
