#include "common/types.hpp"

#include <stdexcept>

namespace kiln {

std::string to_string(Status s) {
  switch (s) {
    case Status::Pass: return "pass";
    case Status::Fail: return "fail";
    case Status::Skip: return "skip";
    case Status::Error: return "error";
    case Status::Timeout: return "timeout";
  }
  return "error";
}

Status status_from_string(const std::string& s) {
  if (s == "pass") return Status::Pass;
  if (s == "fail") return Status::Fail;
  if (s == "skip") return Status::Skip;
  if (s == "error") return Status::Error;
  if (s == "timeout") return Status::Timeout;
  throw std::invalid_argument("unknown status '" + s + "'");
}

void to_json(nlohmann::json& j, Status s) { j = to_string(s); }
void from_json(const nlohmann::json& j, Status& s) { s = status_from_string(j.get<std::string>()); }

void to_json(nlohmann::json& j, const Entity& e) { j = {{"kind", e.kind}, {"id", e.id}}; }
void from_json(const nlohmann::json& j, Entity& e) {
  j.at("kind").get_to(e.kind);
  j.at("id").get_to(e.id);
}

void to_json(nlohmann::json& j, const Result& r) {
  j = {{"test", r.test},     {"host", r.host},         {"rank", r.rank},
       {"entity", r.entity}, {"metric", r.metric},     {"value", r.value},
       {"unit", r.unit},     {"status", r.status},     {"round_id", r.round_id},
       {"group_id", r.group_id}, {"ts", r.ts}};
  if (!r.reason.empty()) j["reason"] = r.reason;
  if (r.size_bytes) j["size_bytes"] = *r.size_bytes;
  if (!r.extra.empty()) j["extra"] = r.extra;
}

void from_json(const nlohmann::json& j, Result& r) {
  j.at("test").get_to(r.test);
  j.at("host").get_to(r.host);
  j.at("rank").get_to(r.rank);
  if (j.contains("entity")) j.at("entity").get_to(r.entity);
  j.at("metric").get_to(r.metric);
  j.at("value").get_to(r.value);
  j.at("unit").get_to(r.unit);
  j.at("status").get_to(r.status);
  r.reason = j.value("reason", std::string{});
  r.round_id = j.value("round_id", std::int64_t{-1});
  r.group_id = j.value("group_id", -1);
  if (j.contains("size_bytes") && !j.at("size_bytes").is_null())
    r.size_bytes = j.at("size_bytes").get<std::int64_t>();
  else
    r.size_bytes.reset();
  r.extra = j.value("extra", nlohmann::json::object());
  r.ts = j.value("ts", 0.0);
}

std::string to_string(Severity s) {
  switch (s) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
    case Severity::Critical: return "critical";
  }
  return "error";
}
void to_json(nlohmann::json& j, Severity s) { j = to_string(s); }
void from_json(const nlohmann::json& j, Severity& s) {
  const auto v = j.get<std::string>();
  if (v == "info") s = Severity::Info;
  else if (v == "warning") s = Severity::Warning;
  else if (v == "error") s = Severity::Error;
  else if (v == "critical") s = Severity::Critical;
  else throw std::invalid_argument("unknown severity '" + v + "'");
}

void to_json(nlohmann::json& j, const Finding& f) {
  j = {{"code", f.code},           {"severity", f.severity},   {"entity", f.entity},
       {"summary", f.summary},     {"next_step", f.next_step}, {"confidence", f.confidence},
       {"evidence", f.evidence}};
}
void from_json(const nlohmann::json& j, Finding& f) {
  j.at("code").get_to(f.code);
  j.at("severity").get_to(f.severity);
  j.at("entity").get_to(f.entity);
  j.at("summary").get_to(f.summary);
  j.at("next_step").get_to(f.next_step);
  f.confidence = j.value("confidence", 1.0);
  f.evidence = j.value("evidence", nlohmann::json::array());
}

}  // namespace kiln
