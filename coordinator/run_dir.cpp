#include "coordinator/run_dir.hpp"

#include <fstream>
#include <map>
#include <stdexcept>

namespace kiln::coord {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("cannot read " + p.string());
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
  for (int x : r.value("done", std::vector<int>{})) rr.done.insert(x);
  for (int x : r.value("missing", std::vector<int>{})) rr.missing.insert(x);
  for (const auto& g : rr.round.groups) rr.expected.insert(g.begin(), g.end());
  return rr;
}

}  // namespace

LoadedRun load_run(const fs::path& dir) {
  LoadedRun run;
  run.report = read_json(dir / "report.json");
  const auto& ranks = run.report.value("ranks", json::array());
  run.ranks = static_cast<int>(ranks.size());
  for (const auto& r : ranks) {
    const auto state = r.value("state", std::string("missing"));
    run.fates.push_back({r.value("rank", -1), r.value("host", std::string{}), state != "missing", state == "lost",
                         state == "lost" ? "lost in the recorded run" : ""});
  }
  std::map<std::int64_t, std::size_t> index;
  for (const auto& r : run.report.value("rounds", json::array())) {
    index[r.at("id").get<std::int64_t>()] = run.rounds.size();
    run.rounds.push_back(round_from(r));
  }
  std::ifstream in(dir / "results.jsonl");
  if (!in) throw std::runtime_error("cannot read " + (dir / "results.jsonl").string());
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line, nullptr, false);
    Record rec;
    try {
      if (j.is_discarded()) throw std::invalid_argument("not JSON");
      rec = j.get<Record>();
    } catch (const std::exception&) {
      ++run.bad_lines;
      continue;
    }
    const auto round_id = std::visit([](const auto& v) { return v.round_id; }, rec);
    const auto it = index.find(round_id);
    if (it == index.end()) continue;  // a record of a round the report does not know
    auto& rr = run.rounds[it->second];
    if (auto* res = std::get_if<Result>(&rec)) {
      ++rr.result_count;
      ++rr.by_test[res->test][to_string(res->status)];
      rr.results.push_back(std::move(*res));
    }
    else
      rr.ends.push_back(std::get<CheckEnd>(std::move(rec)));
  }
  return run;
}

}  // namespace kiln::coord
