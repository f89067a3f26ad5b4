#include "common/types.hpp"

#include "common/findings.hpp"

#include <stdexcept>
#include <string_view>

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

namespace {
bool on_host(std::string_view id, const std::string& host) {
  return id == host || (id.size() > host.size() && id.substr(0, host.size()) == host && id[host.size()] == '/');
}
}  // namespace

bool may_report(const Entity& e, int rank, const std::string& host) {
  if (e.kind == "rank") return e.id == std::to_string(rank);
  if (e.kind == "node") return e.id == host;
  if (e.kind == "gpu" || e.kind == "hca") return e.id.size() > host.size() + 1 && on_host(e.id, host) && e.id != host;
  if (e.kind == "nvlink") {
    const auto arrow = e.id.find("->");
    if (arrow == std::string::npos) return false;
    const std::string_view id(e.id);
    return on_host(id.substr(0, arrow), host) && on_host(id.substr(arrow + 2), host);
  }
  if (e.kind == "link") {
    const auto sep = e.id.find("<->");
    if (sep == std::string::npos) return false;
    const std::string_view id(e.id);
    return on_host(id.substr(0, sep), host) || on_host(id.substr(sep + 3), host);
  }
  return false;
}

void to_json(nlohmann::json& j, const Result& r) {
  j = {{"test", r.test},     {"host", r.host},         {"rank", r.rank},
       {"entity", r.entity}, {"metric", r.metric},     {"value", r.value},
       {"unit", r.unit},     {"status", r.status},     {"round_id", r.round_id},
       {"group_id", r.group_id}, {"ts", r.ts}};
  if (!r.reason.empty()) j["reason"] = r.reason;
  if (r.size_bytes) j["size_bytes"] = *r.size_bytes;
  if (!r.problems.empty()) j["problems"] = r.problems;
  if (!r.extra.empty()) j["extra"] = r.extra;
}

void from_json(const nlohmann::json& j, Result& r) {
  j.at("test").get_to(r.test);
  j.at("host").get_to(r.host);
  r.rank = int_at<int>(j, "rank");
  if (j.contains("entity")) j.at("entity").get_to(r.entity);
  j.at("metric").get_to(r.metric);
  j.at("value").get_to(r.value);
  j.at("unit").get_to(r.unit);
  j.at("status").get_to(r.status);
  r.reason = j.value("reason", std::string{});
  r.round_id = int_or<std::int64_t>(j, "round_id", -1);
  r.group_id = int_or<int>(j, "group_id", -1);
  if (j.contains("size_bytes") && !j.at("size_bytes").is_null())
    r.size_bytes = int_at<std::int64_t>(j, "size_bytes");
  else
    r.size_bytes.reset();
  r.problems = j.value("problems", std::vector<Problem>{});
  r.extra = j.value("extra", nlohmann::json::object());
  r.ts = j.value("ts", 0.0);
}

void to_json(nlohmann::json& j, const Problem& p) { j = {{"code", p.code}, {"what", p.what}}; }
void from_json(const nlohmann::json& j, Problem& p) {
  j.at("code").get_to(p.code);
  p.what = j.value("what", std::string{});
  // An unknown code is kept in words so that the finding it becomes can say what was sent (a
  // name, or a value that is no name at all, such as a number).
  const auto& code = j.at("code");
  if (p.code == Code::ResultInvalid && !(code.is_string() && code.get<std::string>() == "result.invalid"))
    p.what = "unknown finding code " +
             (code.is_string() ? "'" + code.get<std::string>().substr(0, 64) + "'"
                               : code.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).substr(0, 64)) +
             (p.what.empty() ? "" : ": " + p.what);
}

void to_json(nlohmann::json& j, const CheckEnd& e) {
  j = {{"test", e.test},         {"host", e.host},         {"rank", e.rank},       {"status", e.status},
       {"seconds", e.seconds},   {"round_id", e.round_id}, {"group_id", e.group_id}, {"ts", e.ts}};
  if (!e.reason.empty()) j["reason"] = e.reason;
  if (e.mpi_untrusted) j["mpi_untrusted"] = true;  // only when set: older readers never see it
}
void from_json(const nlohmann::json& j, CheckEnd& e) {
  j.at("test").get_to(e.test);
  j.at("host").get_to(e.host);
  e.rank = int_at<int>(j, "rank");
  j.at("status").get_to(e.status);
  e.reason = j.value("reason", std::string{});
  e.seconds = j.value("seconds", 0.0);
  e.round_id = int_or<std::int64_t>(j, "round_id", -1);
  e.group_id = int_or<int>(j, "group_id", -1);
  e.ts = j.value("ts", 0.0);
  e.mpi_untrusted = j.value("mpi_untrusted", false);
}

void to_json(nlohmann::json& j, const Record& r) {
  std::visit([&](const auto& v) { j = v; }, r);
  j["record"] = std::holds_alternative<CheckEnd>(r) ? "end" : "result";
}
void from_json(const nlohmann::json& j, Record& r) {
  const auto kind = j.value("record", std::string("result"));
  if (kind == "end") r = j.get<CheckEnd>();
  else if (kind == "result") r = j.get<Result>();
  else throw std::invalid_argument("unknown record '" + kind.substr(0, 32) + "'");
}

void to_json(nlohmann::json& j, const NodeInfo& n) {
  j = {{"host", n.host},
       {"world_rank", n.world_rank},
       {"world_size", n.world_size},
       {"local_rank", n.local_rank},
       {"local_size", n.local_size},
       {"gpu_count", n.gpu_count},
       {"gpu_models", n.gpu_models},
       {"gpu_skip_reason", n.gpu_skip_reason},
       {"cuda_driver", n.cuda_driver},
       {"cuda_runtime", n.cuda_runtime},
       {"nccl_version", n.nccl_version},
       {"mpi_version", n.mpi_version},
       {"ib_devices", n.ib_device_count},
       {"hca", n.hca}};
}
void from_json(const nlohmann::json& j, NodeInfo& n) {
  n.host = j.value("host", std::string{});
  n.world_rank = int_or<int>(j, "world_rank", 0);
  n.world_size = int_or<int>(j, "world_size", 1);
  n.local_rank = int_or<int>(j, "local_rank", 0);
  n.local_size = int_or<int>(j, "local_size", 1);
  n.gpu_count = int_or<int>(j, "gpu_count", 0);
  n.gpu_models = j.value("gpu_models", std::vector<std::string>{});
  n.gpu_skip_reason = j.value("gpu_skip_reason", std::string{});
  n.cuda_driver = j.value("cuda_driver", std::string{});
  n.cuda_runtime = j.value("cuda_runtime", std::string{});
  n.nccl_version = j.value("nccl_version", std::string{});
  n.mpi_version = j.value("mpi_version", std::string{});
  n.ib_device_count = int_or<int>(j, "ib_devices", 0);
  n.hca = j.value("hca", std::string{});
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
