#include "coordinator/journal.hpp"

#include "common/channel.hpp"

#include <fstream>

namespace kiln::coord {

namespace fs = std::filesystem;
using json = nlohmann::json;
using analysis::Phase;
using analysis::RoundRecord;

Journal::Journal(const fs::path& dir, int session) : log_(dir / "journal.jsonl"), session_(session) {}

void Journal::note(const std::string& event, json fields) {
  fields["event"] = event;
  fields["session"] = session_;
  log_.append(fields.dump(-1, ' ', false, json::error_handler_t::replace));
}

namespace {

// Reading state: what each session said, folded into JournalContents as the lines come.
struct Reader {
  JournalContents out;
  std::map<std::int64_t, std::size_t> index;    // round id -> position in out.rounds
  std::map<std::int64_t, int> session_of;       // round id -> session that ran it
  std::map<std::int64_t, int> plan_index;       // round id -> index in the plan (plan rounds)
  std::map<int, std::map<int, std::string>> lost;  // session -> rank -> reason
  std::set<int> error_sessions;                 // sessions that ended in error
  int localized_session = 0;

  void round(const json& e, int session) {
    RoundRecord rr;
    rr.round.id = e.at("id").get<std::int64_t>();
    rr.round.tests = e.value("tests", std::vector<proto::TestSpec>{});
    rr.round.groups = e.value("groups", std::vector<std::vector<int>>{});
    rr.round.deadline_s = e.value("deadline_s", 0.0);
    rr.reason = e.value("reason", std::string{});
    rr.phase = e.value("phase", std::string("plan")) == "localize" ? Phase::Localize : Phase::Plan;
    for (int r : e.value("expected", std::vector<int>{})) rr.expected.insert(r);
    rr.finished = false;  // until its round_end
    index[rr.round.id] = out.rounds.size();
    session_of[rr.round.id] = session;
    if (e.contains("plan_index")) plan_index[rr.round.id] = e.at("plan_index").get<int>();
    out.max_round_id = std::max(out.max_round_id, rr.round.id);
    out.rounds.push_back(std::move(rr));
  }

  void round_end(const json& e) {
    const auto it = index.find(e.at("id").get<std::int64_t>());
    if (it == index.end()) return;
    auto& rr = out.rounds[it->second];
    for (int r : e.value("done", std::vector<int>{})) rr.done.insert(r);
    for (int r : e.value("missing", std::vector<int>{})) rr.missing.insert(r);
    rr.duration_s = e.value("duration_s", 0.0);
    for (const auto& p : e.value("progress", std::vector<proto::RankProgress>{})) rr.progress[p.rank] = p;
    rr.finished = true;
  }

  void line(const json& e) {
    const auto ev = e.at("event").get<std::string>();
    const int session = e.value("session", 0);
    if (ev == "session") {
      out.sessions = std::max(out.sessions, session);
      if (out.first_ts == 0) out.first_ts = e.value("ts", 0.0);
      out.end.reset();  // a later session re-opens the campaign
    } else if (ev == "launched") {
      out.launched = e;
    } else if (ev == "restart") {
      json r = e;
      r.erase("event");
      out.restarts.push_back(std::move(r));
    } else if (ev == "joined") {
      auto& r = out.ranks[e.at("rank").get<int>()];
      r.joined = true;
      r.host = e.value("host", std::string{});
      if (e.contains("info")) r.info = e.at("info").get<NodeInfo>();
    } else if (ev == "lost") {
      lost[session][e.at("rank").get<int>()] = e.value("reason", std::string{});
    } else if (ev == "round") {
      round(e, session);
    } else if (ev == "round_end") {
      round_end(e);
    } else if (ev == "localized") {
      out.localized = true;
      localized_session = session;
      out.localize_findings = e.value("findings", std::vector<Finding>{});
      out.localize_section = e.value("section", json(nullptr));
    } else if (ev == "end") {
      const auto verdict = e.value("verdict", std::string{});
      out.end = e;
      if (verdict == "error") error_sessions.insert(session);
    }
  }

  void finish() {
    // Localization rounds count only from the session whose localization ran to its end; a
    // phase that was cut short is run again whole.
    for (auto& rr : out.rounds) {
      const auto id = rr.round.id;
      if (rr.phase == Phase::Localize && session_of[id] != localized_session) rr.finished = false;
      if (rr.phase == Phase::Plan && rr.finished && plan_index.count(id)) out.plan_done.insert(plan_index[id]);
    }
    // A rank lost while its session went on is a finding; ranks lost because the session itself
    // failed (the job ended, a signal, a full disk) are not.
    for (const auto& [session, ranks] : lost) {
      if (error_sessions.count(session)) continue;
      for (const auto& [rank, reason] : ranks) {
        auto& r = out.ranks[rank];
        r.lost = true;
        r.lost_reason = out.sessions > 1 ? reason + " (coordinator session " + std::to_string(session) + ")" : reason;
      }
    }
  }
};

}  // namespace

std::optional<JournalContents> read_journal(const fs::path& dir) {
  std::ifstream in(dir / "journal.jsonl");
  if (!in) return std::nullopt;
  Reader reader;
  for (std::string line; std::getline(in, line);) {
    try {
      reader.line(proto::parse_body(line));  // depth-limited: it holds what workers said of themselves
    } catch (const std::exception&) {
      ++reader.out.bad_lines;  // a torn last line, or a hand edit: skip it, keep the rest
    }
  }
  reader.finish();
  return std::move(reader.out);
}

bool campaign_complete(const JournalContents& j) {
  if (!j.end) return false;
  const auto verdict = j.end->value("verdict", std::string{});
  // A fail with an error was cut short by a rank's death (report.hpp, first_ends): resumable.
  return (verdict == "pass" || verdict == "fail") && j.end->value("error", std::string{}).empty();
}

}  // namespace kiln::coord
