#include "coordinator/report.hpp"

#include <cctype>
#include <cstdio>
#include <set>
#include <sstream>

#include "common/checks.hpp"
#include "common/findings.hpp"
#include "common/hostlist.hpp"
#include "common/text.hpp"

namespace kiln::coord {

using json = nlohmann::json;

namespace {
json counts(const std::map<std::string, std::uint64_t>& m) { return m.empty() ? json::object() : json(m); }
}  // namespace

std::string node_of(const Entity& e) {
  if (e.kind == "node") return e.id;
  if (e.kind == "gpu" || e.kind == "hca") return e.id.substr(0, e.id.find('/'));
  return "";
}

NodeSplit split_nodes(const Report& r) {
  std::set<std::string> all, bad;
  if (!r.hostlist.empty()) {
    try {
      for (auto& h : hostlist::expand(r.hostlist)) all.insert(h);
    } catch (const std::exception&) {
    }
  }
  std::set<std::string> seen;
  for (const auto& n : r.nodes) all.insert(n.host), seen.insert(n.host);
  std::map<std::string, std::string> host_of_rank;
  for (const auto& k : r.ranks) {
    if (k.host.empty()) continue;
    host_of_rank[std::to_string(k.rank)] = k.host;
    if (k.state == "lost") bad.insert(k.host);
  }
  for (const auto& h : all)
    if (!seen.count(h)) bad.insert(h);  // never connected: not shown to be fit
  for (const auto& f : r.findings) {
    if (f.severity < Severity::Error) continue;
    const auto& e = f.entity;
    std::string host = node_of(e);
    if (e.kind == "rank" && host_of_rank.count(e.id)) host = host_of_rank[e.id];
    if (!host.empty() && all.count(host)) bad.insert(host);
  }
  std::vector<std::string> good_v, bad_v(bad.begin(), bad.end());
  for (const auto& h : all)
    if (!bad.count(h)) good_v.push_back(h);
  return {hostlist::compress(good_v), hostlist::compress(bad_v), good_v.size(), bad_v.size()};
}

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
                      {"missing", rr.missing}, {"results", rr.results}, {"finished", rr.finished}});
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
       {"sessions", r.sessions},
       {"results", {{"total", r.results_total}, {"not_judged", r.results_not_judged},
                    {"unreadable_lines", r.unreadable_lines}, {"by_status", counts(r.results_by_status)},
                    {"by_test", by_test}}},
       {"checks", checks},
       {"rounds", rounds},
       {"findings", r.findings},
       {"rejected_connections", r.rejected_connections},
       {"localization", r.localization}};
  if (!r.error.empty()) j["error"] = r.error;
  j["restarts"] = r.restarts;
  if (!r.launch_retries.empty()) j["launch_retries"] = r.launch_retries;
  json classes = json::object();
  for (const auto& [host, cls] : r.expect_classes) classes[host] = cls;
  j["expectations"] = {{"source", r.expect_source}, {"line", r.expect_line}, {"classes", classes}};
  if (r.launch) j["launch"] = {{"ok", r.launch->ok}, {"state", r.launch->state}};
  const auto split = split_nodes(r);
  j["hostlists"] = {{"good", split.good}, {"bad", split.bad}};
}

std::string render_summary(const Report& r, const std::string& results_path, const std::string& report_path) {
  std::ostringstream os;
  std::string up = r.verdict;
  for (auto& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  os << "\nkiln run " << r.run_id << ": " << up << " - " << r.nodes.size() << " node(s), " << r.ranks.size()
     << " rank(s), " << r.rounds.size() << " round(s), " << r.results_total << " results in "
     << static_cast<int>(r.duration_s + 0.5) << " s\n";
  if (!r.error.empty()) os << "  error: " << printable(r.error, 1000) << "\n";
  if (!r.expect_line.empty()) os << "  " << printable(r.expect_line, 600) << "\n";
  if (r.sessions > 1) os << "  resumed: " << r.sessions - 1 << " time(s)\n";
  for (const auto& e : r.launch_retries)
    os << "  launched again: " << printable(e.value("why", std::string()), 600) << "\n";
  if (r.results_not_judged > 0)
    os << "  not judged: " << r.results_not_judged << " result(s) of rounds cut short (run again) or of no round\n";
  if (r.unreadable_lines > 0) os << "  unreadable: " << r.unreadable_lines << " line(s) of results.jsonl\n";
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
  if (const auto split = split_nodes(r); split.bad_count > 0 && split.good_count + split.bad_count > 0)
    os << "  good nodes (" << split.good_count << "): " << (split.good.empty() ? "none" : printable(split.good, 400))
       << "\n  bad nodes (" << split.bad_count << "): " << printable(split.bad, 400) << "\n";
  os << "  results: " << results_path << "\n  report:  " << report_path << "\n";
  return os.str();
}

}  // namespace kiln::coord

namespace kiln::coord {

namespace {

using analysis::RoundRecord;

// The plan's findings. A value the judgement cannot use must cost a finding, never the report:
// judge each round alone when judging them together fails, and say which could not be judged.
std::vector<Finding> plan_findings(const ReportInput& in, const std::vector<RoundRecord>& rounds) {
  std::vector<analysis::RankFate> fates;
  for (const auto& k : in.ranks) fates.push_back({k.rank, k.host, k.joined, k.lost, k.lost_reason});
  try {
    return analysis::judge_plan(in.expected_ranks, fates, rounds);
  } catch (const std::exception&) {
  }
  std::vector<Finding> out;
  try {
    out = analysis::judge_plan(in.expected_ranks, fates, {});
  } catch (const std::exception& e) {
    out.push_back(make_finding(Code::ResultInvalid, {"job", in.run_id}, std::string("rank states: ") + e.what()));
  }
  for (const auto& rr : rounds) {
    try {
      for (auto& f : analysis::judge_plan(0, {}, {rr})) out.push_back(std::move(f));
    } catch (const std::exception& e) {
      out.push_back(make_finding(Code::ResultInvalid, {"job", in.run_id},
                                 "round " + std::to_string(rr.round.id) + " could not be judged: " + e.what()));
    }
  }
  return out;
}

// The findings of the expectations (docs/spec.md), less those the plan already has for the same
// code and entity (gpu.health's own gpu.count, gpu.driver). Like plan_findings, never throws.
void expectation_findings(const ReportInput& in, const std::vector<RoundRecord>& rounds, Report& rep, bool judge) {
  std::vector<analysis::NodeSeen> nodes;
  std::map<int, const RankSeen*> seen;
  for (const auto& k : in.ranks) seen[k.rank] = &k;
  for (const auto& n : rep.nodes) {
    analysis::NodeSeen ns{n.host, n.ranks, {}, n.info};
    for (int r : n.ranks)
      if (seen.at(r)->lost) ns.lost.insert(r);
    nodes.push_back(std::move(ns));
  }
  analysis::ExpectOutcome out;
  try {
    out = analysis::judge_expectations(in.expect, nodes, rounds);
  } catch (const std::exception& e) {
    if (judge) rep.findings.push_back(make_finding(Code::ResultInvalid, {"job", in.run_id}, std::string("the expectations could not be judged: ") + e.what()));
    return;
  }
  rep.expect_source = out.source;
  rep.expect_line = out.line;
  rep.expect_classes = out.classes;
  if (!judge) return;
  std::set<std::pair<Code, std::string>> have;
  for (const auto& f : rep.findings) have.insert({f.code, f.entity.kind + "\n" + f.entity.id});
  for (auto& f : out.findings)
    if (f.code == Code::NotTested || !have.count({f.code, f.entity.kind + "\n" + f.entity.id})) rep.findings.push_back(std::move(f));
}

// Totals from each round's counts (not its records: a live campaign keeps only those judgement
// reads); results of rounds cut short, and of no round, are counted but not judged.
void count_results(Report& rep, const std::vector<RoundRecord>& rounds, const ReportInput& in) {
  auto count = [&](const std::string& test, const std::string& status, std::uint64_t n) {
    rep.results_by_status[status] += n;
    rep.results_by_test[test][status] += n;
  };
  for (const auto& rr : rounds) {
    rep.results_total += rr.result_count;
    if (!rr.finished) rep.results_not_judged += rr.result_count;
    for (const auto& [test, by_status] : rr.by_test)
      for (const auto& [status, n] : by_status) count(test, status, n);
    for (const auto& e : rr.ends) ++rep.checks_by_test[e.test][to_string(e.status)];
    rep.rounds.push_back({rr.round.id, rr.round.tests, rr.round.groups, rr.reason,
                          rr.phase == analysis::Phase::Localize ? "localize" : "plan", rr.duration_s,
                          std::vector<int>(rr.done.begin(), rr.done.end()),
                          std::vector<int>(rr.missing.begin(), rr.missing.end()), rr.result_count, rr.finished});
  }
  for (const auto& r : in.unattached) {
    ++rep.results_total;
    ++rep.results_not_judged;
    count(r.test, to_string(r.status), 1);
  }
}

// The ranks whose end made the job fail: what SLURM said of each (srun's task-end line before it
// aborted the step), and that every other rank went with them.
void first_end_findings(const ReportInput& in, Report& rep) {
  for (const auto& e : in.first_ends) {
    const std::string who = "rank " + std::to_string(e.rank) + " on " + e.host;
    rep.findings.push_back(make_finding(
        Code::RankLost, {"rank", std::to_string(e.rank)},
        who + " ended first (" + e.how + "); SLURM then ended the job step and every other rank with it",
        json::array({{{"host", e.host}, {"how", e.how}, {"source", "srun's task-end line in the job output"},
                      {"job", in.launch ? in.launch->state : std::string()}}})));
  }
}

}  // namespace

void RankCounts::add(const Result& r) {
  ++results;
  ++by_status[to_string(r.status)];
  // The headline: a sweep's declared figure at the largest size the rank measured; until the rank
  // has one, the first declared figure it measured without a size (gpu.burn's TFLOP/s, a user's
  // job's throughput). Only measured figures: a line the time budget skipped, or one that errored,
  // carries 0 and would make a 0.00 headline of a size nothing ran at.
  if (r.status != Status::Pass && r.status != Status::Fail) return;
  const auto* spec = find_check(r.test);
  if (!spec || !spec->figure || r.metric != spec->figure->metric) return;
  const bool sized = spec->figure->per_size && r.size_bytes.has_value();
  if (sized ? *r.size_bytes <= headline_size : !headline.empty()) return;
  char h[160];
  std::snprintf(h, sizeof h, "%.64s %.32s %.2f %.16s", r.test.c_str(), r.metric.c_str(), r.value, r.unit.c_str());
  std::string text = h;
  if (sized) {
    headline_size = *r.size_bytes;
    text += " @ " + std::to_string(headline_size) + " B";
  }
  headline = printable(text, 120);
}

void RankCounts::merge(const RankCounts& o) {
  results += o.results;
  for (const auto& [status, n] : o.by_status) by_status[status] += n;
  if (o.headline_size > headline_size || (headline.empty() && !o.headline.empty())) {
    headline_size = o.headline_size;
    headline = o.headline;
  }
}

Report build_report(const ReportInput& in, const std::vector<RoundRecord>& rounds) {
  Report rep;
  rep.run_id = in.run_id;
  rep.error = in.error;
  rep.launcher = in.launcher;
  rep.started = in.started;
  rep.duration_s = in.duration_s;
  rep.sessions = in.sessions;
  rep.unreadable_lines = in.unreadable_lines;
  rep.rejected_connections = in.rejected;
  rep.localization = in.localization;
  rep.launch = in.launch;
  rep.restarts = in.restarts;
  rep.launch_retries = in.launch_retries;
  std::map<std::string, std::vector<int>> by_host;
  std::map<int, const RankSeen*> seen;
  for (const auto& k : in.ranks) {
    seen[k.rank] = &k;
    if (k.joined) by_host[k.host].push_back(k.rank);
  }
  std::vector<std::string> hosts;
  for (const auto& [host, rs] : by_host) {
    rep.nodes.push_back({host, rs, seen.at(rs.front())->info});
    hosts.push_back(host);
  }
  rep.hostlist = hosts.empty() ? std::string() : hostlist::compress(hosts);
  count_results(rep, rounds, in);
  for (int r = 0; r < in.expected_ranks; ++r) {
    const auto it = seen.find(r);
    if (it == seen.end() || !it->second->joined) {
      rep.ranks.push_back({r, "", "missing", 0, {}, ""});
      continue;
    }
    const auto& k = *it->second;
    rep.ranks.push_back({r, k.host, k.lost ? "lost" : "ok", k.counts.results, k.counts.by_status, k.counts.headline});
  }
  if (in.error.empty()) {
    rep.findings = plan_findings(in, rounds);
    rep.findings.insert(rep.findings.end(), in.extra_findings.begin(), in.extra_findings.end());
    try {
      for (auto& f : in.fleet.findings()) add_or_merge(rep.findings, std::move(f));
    } catch (const std::exception& e) {
      rep.findings.push_back(make_finding(Code::ResultInvalid, {"job", in.run_id}, std::string("fleet comparison: ") + e.what()));
    }
  }
  expectation_findings(in, rounds, rep, in.error.empty());
  if (!in.error.empty()) first_end_findings(in, rep);
  if (!in.error.empty() && !in.first_ends.empty())
    rep.verdict = "fail";  // cut short, but by a rank's death: the cluster's fault, not kiln's
  else if (!in.error.empty())
    rep.verdict = "error";
  else if (in.launch_failed)
    rep.verdict = "fail";  // the job failed with nobody left: not a pass, nor merely incomplete
  else
    rep.verdict = analysis::verdict_of(rep.findings);
  return rep;
}

std::map<std::string, std::vector<std::string>> leaves_of(const nlohmann::json& j) {
  std::map<std::string, std::vector<std::string>> out;
  if (!j.is_object()) return out;
  for (const auto& [leaf, hosts] : j.items()) {
    if (!hosts.is_array()) continue;
    for (const auto& h : hosts)
      if (h.is_string()) out[leaf].push_back(h.get<std::string>());
  }
  return out;
}

int exit_code(const Report& r) {
  if (r.verdict == "pass") return 0;
  return r.verdict == "fail" || r.verdict == "incomplete" ? 1 : 2;
}

// The fleet and the localization can both name one thing (switch.slow leaf1<->leaf2 from the
// link figures and from the pair rounds): one finding, carrying both lines of evidence.
void add_or_merge(std::vector<Finding>& findings, Finding f) {
  for (auto& have : findings) {
    if (have.code != f.code || have.entity.kind != f.entity.kind || have.entity.id != f.entity.id) continue;
    if (!have.evidence.is_array()) have.evidence = nlohmann::json::array({have.evidence});
    if (f.evidence.is_array())
      for (auto& e : f.evidence) have.evidence.push_back(std::move(e));
    else
      have.evidence.push_back(std::move(f.evidence));
    have.summary += "; " + f.summary;
    have.confidence = std::max(have.confidence, f.confidence);
    return;
  }
  findings.push_back(std::move(f));
}

}  // namespace kiln::coord
