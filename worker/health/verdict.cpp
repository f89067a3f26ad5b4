#include "worker/health/verdict.hpp"

#include <cstdio>

namespace kiln::worker::health {

namespace {

int severity(Status s) {
  switch (s) {
    case Status::Pass: return 0;
    case Status::Skip: return 1;
    case Status::Error: return 2;
    case Status::Timeout: return 3;
    case Status::Fail: return 4;
  }
  return 2;
}

bool is_fault(Status s) { return s == Status::Fail || s == Status::Timeout; }

std::string upper(Status s) {
  std::string out = to_string(s);
  for (auto& c : out) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return out;
}

}  // namespace

Part fold_records(const std::string& key, const std::vector<Record>& records, double seconds) {
  Part p{key, Status::Pass, key, "", seconds};
  bool ended = false;
  for (const auto& rec : records) {
    if (const auto* end = std::get_if<CheckEnd>(&rec)) {
      ended = true;
      if (severity(end->status) > severity(p.status)) {
        p.status = end->status;
        p.reason = end->reason;
      }
      continue;
    }
    const auto& r = std::get<Result>(rec);
    if (!is_fault(r.status) || (is_fault(p.status) && !p.reason.empty())) continue;
    p.status = r.status;
    p.reason = (r.entity.id.empty() ? "" : r.entity.id + ": ") + r.reason;
    if (!r.problems.empty()) p.code = nlohmann::json(r.problems.front())["code"].get<std::string>();
  }
  if (!ended && records.empty()) {
    p.status = Status::Error;
    p.reason = "the check reported nothing";
  }
  if (p.status != Status::Pass && p.reason.empty()) p.reason = to_string(p.status) + " without a reason";
  return p;
}

Verdict judge(const std::vector<Part>& parts) {
  Verdict v;
  const Part* fault = nullptr;
  const Part* error = nullptr;
  for (const auto& p : parts) {
    if (is_fault(p.status) && !fault) fault = &p;
    if (p.status == Status::Error && !error) error = &p;
    if (p.status == Status::Skip) v.not_tested.push_back(p.key + " (" + p.reason + ")");
  }
  if (const Part* bad = fault ? fault : error) {
    v.exit_code = fault ? kFault : kCouldNotRun;
    v.code = bad->code.empty() ? bad->key : bad->code;
    v.reason = bad->status == Status::Timeout ? bad->key + " did not finish: " + bad->reason : bad->reason;
    return v;
  }
  const std::size_t ran = parts.size() - v.not_tested.size();
  v.reason = std::to_string(ran) + " of " + std::to_string(parts.size()) + " parts passed";
  if (!v.not_tested.empty()) {
    v.reason += "; not tested:";
    for (const auto& s : v.not_tested) v.reason += " " + s.substr(0, s.find(' ')) + (&s == &v.not_tested.back() ? "" : ",");
  }
  return v;
}

std::string part_line(const Part& p) {
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1f s", p.seconds);
  return "kiln-health: " + p.key + " " + upper(p.status) + " " + secs + (p.reason.empty() ? "" : ": " + p.reason);
}

std::string final_line(const Verdict& v) {
  if (v.exit_code == kHealthy) return "kiln-health: OK: " + v.reason;
  return std::string("kiln-health: ") + (v.exit_code == kFault ? "FAIL " : "ERROR ") + v.code + ": " + v.reason;
}

nlohmann::json to_json(const std::vector<Part>& parts, const Verdict& v) {
  nlohmann::json out = {{"schema", "kiln.health/1"}, {"exit_code", v.exit_code},
                        {"verdict", v.exit_code == kHealthy ? "ok" : v.exit_code == kFault ? "fail" : "error"},
                        {"code", v.code}, {"reason", v.reason}, {"not_tested", v.not_tested}};
  out["parts"] = nlohmann::json::array();
  for (const auto& p : parts)
    out["parts"].push_back({{"key", p.key}, {"status", p.status}, {"code", p.code}, {"reason", p.reason},
                            {"seconds", p.seconds}});
  return out;
}

std::string sanitize_reason(std::string_view text, std::size_t max_len) {
  std::string out;
  for (char c : text) {
    if (out.size() >= max_len) break;
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       std::string_view(" .,:/+-_()%@").find(c) != std::string_view::npos;
    out += plain ? c : '_';
  }
  return out;
}

std::string drain_reason(const Verdict& v) {
  return sanitize_reason(std::string(kReasonPrefix) + " " + v.code + ": " + v.reason);
}

bool is_own_reason(std::string_view slurm_reason) {
  return slurm_reason.substr(0, kReasonPrefix.size()) == kReasonPrefix;
}

}  // namespace kiln::worker::health
