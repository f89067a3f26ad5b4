#include "coordinator/report.hpp"

#include <cctype>
#include <cstdio>
#include <sstream>

#include "common/findings.hpp"
#include "common/text.hpp"

namespace kiln::coord {

using json = nlohmann::json;

namespace {
json counts(const std::map<std::string, std::uint64_t>& m) { return m.empty() ? json::object() : json(m); }
}  // namespace

void to_json(json& j, const Report& r) {
  json nodes = json::array(), ranks = json::array(), rounds = json::array();
  for (const auto& n : r.nodes) nodes.push_back({{"host", n.host}, {"ranks", n.ranks}, {"info", n.info}});
  for (const auto& k : r.ranks) {
    if (k.state == "missing") {
      ranks.push_back({{"rank", k.rank}, {"state", k.state}});
      continue;
    }
    ranks.push_back({{"rank", k.rank}, {"host", k.host}, {"state", k.state}, {"results", k.results},
                     {"by_status", counts(k.by_status)}, {"headline", k.headline}});
  }
  for (const auto& rr : r.rounds)
    rounds.push_back({{"id", rr.id}, {"tests", rr.tests}, {"groups", rr.groups}, {"reason", rr.reason},
                      {"phase", rr.phase}, {"duration_s", rr.duration_s}, {"done", rr.done},
                      {"missing", rr.missing}, {"results", rr.results}});
  json by_test = json::object(), checks = json::object();
  for (const auto& [t, m] : r.results_by_test) by_test[t] = m;
  for (const auto& [t, m] : r.checks_by_test) checks[t] = m;
  j = {{"schema_version", kSchemaVersion},
       {"run_id", r.run_id},
       {"verdict", r.verdict},
       {"launcher", r.launcher},
       {"started", r.started},
       {"duration_s", r.duration_s},
       {"hostlist", r.hostlist},
       {"nodes", nodes},
       {"ranks", ranks},
       {"results", {{"total", r.results_total}, {"by_status", counts(r.results_by_status)}, {"by_test", by_test}}},
       {"checks", checks},
       {"rounds", rounds},
       {"findings", r.findings},
       {"rejected_connections", r.rejected_connections},
       {"localization", r.localization}};
  if (!r.error.empty()) j["error"] = r.error;
  if (r.launch) j["launch"] = {{"ok", r.launch->ok}, {"state", r.launch->state}};
}

std::string render_summary(const Report& r, const std::string& results_path, const std::string& report_path) {
  std::ostringstream os;
  std::string up = r.verdict;
  for (auto& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  os << "\nkiln run " << r.run_id << ": " << up << " - " << r.nodes.size() << " node(s), " << r.ranks.size()
     << " rank(s), " << r.rounds.size() << " round(s), " << r.results_total << " results in "
     << static_cast<int>(r.duration_s + 0.5) << " s\n";
  if (!r.error.empty()) os << "  error: " << printable(r.error, 1000) << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-5s %-20s %-7s %7s %5s %5s %5s  %s\n", "rank", "host", "state", "results",
                "pass", "skip", "bad", "headline");
  os << line;
  auto count = [](const RankRow& k, const char* s) {
    auto it = k.by_status.find(s);
    return it == k.by_status.end() ? 0ull : static_cast<unsigned long long>(it->second);
  };
  for (const auto& k : r.ranks) {
    if (k.state == "missing") {
      std::snprintf(line, sizeof line, "  %-5d %-20s %-7s\n", k.rank, "-", "missing");
      os << line;
      continue;
    }
    std::snprintf(line, sizeof line, "  %-5d %-20s %-7s %7llu %5llu %5llu %5llu  %s\n", k.rank, printable(k.host, 64).c_str(),
                  k.state.c_str(), static_cast<unsigned long long>(k.results), count(k, "pass"), count(k, "skip"),
                  count(k, "fail") + count(k, "error") + count(k, "timeout"), printable(k.headline, 100).c_str());
    os << line;
  }
  if (r.findings.empty()) {
    os << "  findings: none\n";
  } else {
    os << "  findings (" << r.findings.size() << "):\n";
    for (const auto& f : r.findings)
      os << "   - [" << to_string(f.severity) << "] " << to_string(f.code) << " " << printable(f.entity.kind, 32) << " "
         << printable(f.entity.id, 200) << ": " << printable(f.summary, 600) << "\n     next: " << printable(f.next_step, 600)
         << "\n";
  }
  os << "  results: " << results_path << "\n  report:  " << report_path << "\n";
  return os.str();
}

}  // namespace kiln::coord
