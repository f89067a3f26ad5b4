#include "coordinator/run_dir.hpp"

#include "common/channel.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "common/findings.hpp"
#include "coordinator/expectations.hpp"

namespace kiln::coord {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// The file's object, or null when it does not exist.
json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) {
    if (!fs::exists(p)) return nullptr;
    throw std::runtime_error("cannot read " + p.string());
  }
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw std::runtime_error(p.string() + " is not a JSON object");
  return j;
}

analysis::RoundRecord round_from(const json& r) {
  analysis::RoundRecord rr;
  rr.round.id = r.at("id").get<std::int64_t>();
  rr.round.tests = r.value("tests", std::vector<proto::TestSpec>{});
  rr.round.groups = r.value("groups", std::vector<std::vector<int>>{});
  rr.reason = r.value("reason", std::string{});
  rr.phase = r.value("phase", std::string("plan")) == "localize" ? analysis::Phase::Localize : analysis::Phase::Plan;
  rr.duration_s = r.value("duration_s", 0.0);
  rr.finished = r.value("finished", true);
  for (int x : r.value("done", std::vector<int>{})) rr.done.insert(x);
  for (int x : r.value("missing", std::vector<int>{})) rr.missing.insert(x);
  for (const auto& g : rr.round.groups) rr.expected.insert(g.begin(), g.end());
  return rr;
}

// A run written before journal.jsonl existed: its report holds the rounds and the ranks' fates.
void from_report(LoadedRun& run) {
  std::map<std::string, NodeInfo> info;
  for (const auto& n : run.report.value("nodes", json::array()))
    info[n.value("host", std::string{})] = n.value("info", NodeInfo{});
  for (const auto& r : run.report.value("ranks", json::array())) {
    const auto state = r.value("state", std::string("missing"));
    RankSeen k{r.value("rank", -1), r.value("host", std::string{}), state != "missing", state == "lost",
               state == "lost" ? "lost in the recorded run" : "", {}, {}};
    k.info = info[k.host];
    run.seen.push_back(std::move(k));
  }
  for (const auto& r : run.report.value("rounds", json::array())) run.rounds.push_back(round_from(r));
}

void from_journal(LoadedRun& run) {
  for (const auto& [rank, r] : run.journal->ranks)
    run.seen.push_back({rank, r.host, r.joined, r.lost, r.lost_reason, r.info, {}});
  run.rounds = run.journal->rounds;
}

int rank_named(const json& j) {
  if (!j.is_object() || !j.contains("rank") || !j.at("rank").is_number_integer()) return -1;
  return j.at("rank").get<int>();
}

// Puts every record of results.jsonl into the round it names, and counts each rank's results.
void attach_records(const fs::path& path, LoadedRun& run) {
  std::map<int, RankCounts> counts;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!fs::exists(path)) return;  // the coordinator died before it wrote anything
    throw std::runtime_error("cannot read " + path.string());
  }
  std::map<std::int64_t, std::size_t> index;
  for (std::size_t i = 0; i < run.rounds.size(); ++i) index[run.rounds[i].round.id] = i;
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    json j;  // null until the line parses
    Record rec;
    try {
      // Depth-limited like every peer's JSON: these lines are what workers sent, stored as sent.
      j = proto::parse_body(line);
      rec = j.get<Record>();
    } catch (const std::exception& e) {
      if (in.eof()) {  // no newline after it: a write cut short, never acknowledged
        run.torn_tail = true;
        continue;
      }
      ++run.bad_lines;
      if (run.bad.size() < 5) run.bad.push_back({n, rank_named(j), std::string(e.what()).substr(0, 200)});
      continue;
    }
    const auto round_id = std::visit([](const auto& v) { return v.round_id; }, rec);
    const auto it = index.find(round_id);
    if (auto* res = std::get_if<Result>(&rec)) {
      counts[res->rank].add(*res);
      if (it == index.end()) {
        run.unattached.push_back(std::move(*res));
        continue;
      }
      auto& rr = run.rounds[it->second];
      if (rr.phase == analysis::Phase::Plan) run.fleet.add_record(*res);
      ++rr.result_count;
      ++rr.by_test[res->test][to_string(res->status)];
      rr.results.push_back(std::move(*res));
    } else if (it != index.end()) {
      run.rounds[it->second].ends.push_back(std::get<CheckEnd>(std::move(rec)));
    }
  }
  for (auto& k : run.seen) k.counts = counts[k.rank];
}

// Codes only the localization planner gives: in a report from before the journal they are the
// localization's findings, which cannot be judged again from results.jsonl alone.
bool planner_code(const std::string& code) {
  return code == "node.slow" || code == "link.slow" || code == "switch.slow" || code == "node.lost" ||
         code == "localize.unresolved";
}

}  // namespace

LoadedRun load_run(const fs::path& dir) {
  LoadedRun run;
  run.report = read_json(dir / "report.json");
  run.campaign = read_json(dir / "campaign.json");
  run.journal = read_journal(dir);
  if (run.report.is_null() && !run.journal)
    throw std::runtime_error(dir.string() + " holds neither report.json nor journal.jsonl: not a kiln run directory");
  try {
    if (run.journal)
      from_journal(run);
    else
      from_report(run);
    if (run.campaign.is_object())
      run.ranks = run.campaign.value("ranks", 0);
    else if (run.report.is_object())
      run.ranks = static_cast<int>(run.report.value("ranks", json::array()).size());
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot read the run in " + dir.string() + ": " + e.what());
  }
  for (const auto& k : run.seen) run.fates.push_back({k.rank, k.host, k.joined, k.lost, k.lost_reason});
  run.expect = recorded_expectations(dir, run.campaign);
  attach_records(dir / "results.jsonl", run);
  return run;
}

ReportInput report_input(const LoadedRun& run) {
  ReportInput in;
  const json& c = run.campaign.is_object() ? run.campaign : run.report;
  const json& r = run.report.is_object() ? run.report : json::object();
  in.run_id = c.is_object() ? c.value("run_id", std::string{}) : "";
  in.launcher = c.is_object() ? c.value("launcher", std::string{}) : "";
  in.expected_ranks = run.ranks;
  in.ranks = run.seen;
  in.fleet = run.fleet;
  if (run.campaign.is_object() && run.campaign.contains("leaves")) in.fleet.set_leaves(leaves_of(run.campaign.at("leaves")));
  for (const auto& k : run.seen) {
    if (!k.joined) continue;
    NodeInfo node = k.info;
    node.host = k.host;
    in.fleet.add_node(node);
  }
  in.unattached = run.unattached;
  in.unreadable_lines = run.bad_lines;
  in.expect = run.expect;
  in.started = run.journal && run.journal->first_ts > 0 ? run.journal->first_ts : r.value("started", 0.0);
  in.sessions = run.journal ? std::max(1, run.journal->sessions) : r.value("sessions", 1);
  in.rejected = r.value("rejected_connections", std::uint64_t{0});
  if (run.journal) in.restarts = run.journal->restarts;
  if (r.contains("launch") && r.at("launch").is_object())
    in.launch = LaunchRow{r.at("launch").value("ok", false), r.at("launch").value("state", std::string{})};
  if (run.journal && run.journal->localized) {
    in.localization = run.journal->localize_section;
    in.extra_findings = run.journal->localize_findings;
  } else if (!run.journal) {
    in.localization = r.value("localization", json(nullptr));
    for (const auto& f : r.value("findings", json::array())) try {
        if (planner_code(f.value("code", std::string{}))) in.extra_findings.push_back(f.get<Finding>());
      } catch (const std::exception&) {
        // an old report's finding we cannot read is left out; the plan's are judged again anyway
      }
  }
  // Unreadable lines: one finding per rank they name (or the job when they name none).
  std::map<int, std::vector<const BadLine*>> by_rank;
  for (const auto& b : run.bad) by_rank[b.rank].push_back(&b);
  for (const auto& [rank, lines] : by_rank) {
    json evidence = json::array();
    for (const auto* b : lines) evidence.push_back({{"line", b->line}, {"error", b->why}});
    const Entity ent = rank >= 0 ? Entity{"rank", std::to_string(rank)} : Entity{"job", in.run_id};
    in.extra_findings.push_back(make_finding(
        Code::ResultInvalid, ent,
        "results.jsonl line " + std::to_string(lines.front()->line) + " could not be read: " + lines.front()->why +
            (run.bad_lines > run.bad.size() ? " (" + std::to_string(run.bad_lines) + " unreadable lines in all)" : ""),
        evidence));
  }
  return in;
}

namespace {

// Why a run is not finished, or "" when it is; sets the launch fields from the last end event.
std::string unfinished(const fs::path& dir, const LoadedRun& run, ReportInput& in) {
  const std::string resume = "; `kiln resume " + dir.string() + "` continues it";
  if (!run.journal) {
    const json& r = run.report;
    if (r.value("verdict", std::string{}) != "error") return "";
    return r.value("error", std::string("the campaign did not finish"));
  }
  const auto& j = *run.journal;
  if (j.end) {
    if (j.end->contains("launch") && j.end->at("launch").is_object())
      in.launch = LaunchRow{j.end->at("launch").value("ok", false), j.end->at("launch").value("state", std::string{})};
    in.launch_failed = j.end->value("launch_failed", false);
    if (j.end->contains("first_ends")) in.first_ends = j.end->at("first_ends").get<std::vector<FirstEnd>>();
    in.rejected = j.end->value("rejected", in.rejected);
    if (campaign_complete(j)) return "";
    return j.end->value("error", std::string("the campaign did not finish")) + resume;
  }
  std::size_t planned = 0;  // the plan is kiln run's --tests, kept in campaign.json
  if (run.campaign.is_object() && run.campaign.contains("config")) {
    const auto tests = run.campaign.at("config").value("tests", std::string{});
    planned = tests.empty() ? 0 : 1 + static_cast<std::size_t>(std::count(tests.begin(), tests.end(), ','));
  }
  std::size_t cut = 0;
  for (const auto& rr : run.rounds) cut += rr.finished ? 0 : 1;
  return "the coordinator stopped before the campaign finished (" + std::to_string(j.plan_done.size()) + " of " +
         std::to_string(planned) + " plan round(s) done, " + std::to_string(cut) + " round(s) cut short" +
         (j.localized ? "" : ", localization not done") + ")" + resume;
}

}  // namespace

Report rebuild_report(const fs::path& dir, const LoadedRun& run) {
  ReportInput in = report_input(run);
  in.error = unfinished(dir, run, in);
  if (run.journal && run.journal->end && run.journal->end->contains("duration_s")) {
    in.duration_s = run.journal->end->value("duration_s", 0.0);
  } else {
    double last = 0;  // the last record's time: when the campaign was last heard of
    for (const auto& rr : run.rounds)
      for (const auto& r : rr.results) last = std::max(last, r.ts);
    for (const auto& r : run.unattached) last = std::max(last, r.ts);
    in.duration_s = last > in.started && in.started > 0 ? last - in.started : run.report.is_object() ? run.report.value("duration_s", 0.0) : 0.0;
  }
  return build_report(in, run.rounds);
}

}  // namespace kiln::coord
