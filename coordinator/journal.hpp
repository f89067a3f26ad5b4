// RUN_DIR/journal.jsonl: what results.jsonl cannot say about a campaign, so that `kiln report` can
// rebuild report.json and `kiln resume` can continue after the coordinator died. One JSON object
// per line, appended like results.jsonl (one write, fdatasync'd before the campaign goes on):
//
//   {"event":"session","session":1,"ts":...,"coordinator":"HOST:PORT","resumed":false}
//   {"event":"launched","session":1,"launcher":"local","pid":123,"pid_start":456} (or "job":"12")
//   {"event":"joined","session":1,"rank":0,"host":"n1","info":{NodeInfo}}
//   {"event":"lost","session":1,"rank":2,"host":"n3","reason":"..."}
//   {"event":"round","session":1,"id":3,"tests":[...],"groups":[[...]],"reason":"","phase":"plan",
//    "plan_index":2,"expected":[...],"deadline_s":120}          before the round is sent
//   {"event":"round_end","session":1,"id":3,"done":[...],"missing":[...],"duration_s":12.5,
//    "progress":[...]}  (each rank's last heartbeat progress in the round, when it sent one)
//   {"event":"restart","session":1,"round":3,"untrusted":[1],"restart":1,"ranks":[0,1,2,3]}
//                                   the workers were started again after round 3 (campaign_restart.cpp)
//   {"event":"localized","session":1,"findings":[...],"section":{...}}
//   {"event":"end","session":1,"verdict":"pass","error":"","launch":{...},"rejected":0}
//
// A round without its round_end did not finish: its records are kept but not judged, and kiln
// resume runs that test again as a new round (round ids only grow).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/types.hpp"
#include "coordinator/analysis/judge.hpp"
#include "coordinator/store.hpp"

namespace kiln::coord {

class Journal {
 public:
  // Opens (or creates) DIR/journal.jsonl for this coordinator session.
  Journal(const std::filesystem::path& dir, int session);
  // Appends one event (its "event" and "session" are set here); durable after sync(). Throws
  // StorageError.
  void note(const std::string& event, nlohmann::json fields);
  void sync() { log_.sync(); }
  void record(const std::string& event, nlohmann::json fields) {
    note(event, std::move(fields));
    sync();
  }

 private:
  AppendLog log_;
  int session_;
};

struct JournalRank {
  std::string host;
  NodeInfo info;
  bool joined = false;
  bool lost = false;  // lost in a session that did not end in error
  std::string lost_reason;
};

// journal.jsonl read back.
struct JournalContents {
  int sessions = 0;
  double first_ts = 0;                          // when the campaign began
  std::map<int, JournalRank> ranks;
  std::vector<analysis::RoundRecord> rounds;    // in id order, records not yet attached
  std::set<int> plan_done;                      // plan indexes whose round finished
  std::int64_t max_round_id = 0;
  bool localized = false;                       // the localization phase ran to its end
  std::vector<Finding> localize_findings;
  nlohmann::json localize_section;
  std::optional<nlohmann::json> end;            // the last session's end event, if it wrote one
  nlohmann::json launched;                      // the last session's launched event (or null)
  std::vector<nlohmann::json> restarts;         // restart events: {round, untrusted, restart, ranks, session}
  std::size_t bad_lines = 0;                    // lines that could not be read (skipped)
};

// Reads DIR/journal.jsonl; nullopt when it does not exist. Never throws on a malformed line.
std::optional<JournalContents> read_journal(const std::filesystem::path& dir);

// True when the journal says the campaign ran to its end (every plan round, the localization, a
// pass or fail verdict): there is nothing left to resume.
bool campaign_complete(const JournalContents& j);

}  // namespace kiln::coord
