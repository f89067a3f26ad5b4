#include "coordinator/drain.hpp"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <map>
#include <ostream>
#include <stdexcept>

#include "coordinator/report.hpp"
#include "coordinator/store.hpp"

namespace kiln::coord {

namespace fs = std::filesystem;
using json = nlohmann::json;

bool isolates(Code c) {
  switch (c) {
    case Code::NodeSlow:  // slow with known-good partners: every job it joins runs at its pace
    case Code::NodeLost:  // dropped out mid-campaign: not fit until someone finds out why
    case Code::GpuCount:
    case Code::GpuLost:
    case Code::GpuSdc:
    case Code::GpuMemory:
    case Code::GpuEccUncorrectable:
    case Code::GpuRowRemapFailure:
    case Code::GpuResetRequired:
    case Code::GpuXid:
    case Code::GpuHang:
      return true;
    default:
      return false;
  }
}

namespace {

// Why a finding on a node does not drain it; "" when it does.
std::string held_because(const Finding& f) {
  if (!isolates(f.code)) return "its next step is not to take the node out";
  if (f.severity < Severity::Error) return "severity " + to_string(f.severity);
  if (f.confidence < kDrainConfidence)
    return "confidence " + std::to_string(f.confidence).substr(0, 4) + " is below " + std::to_string(kDrainConfidence).substr(0, 3);
  return "";
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

json read_drained(const fs::path& file) {
  if (!fs::exists(file)) return json{{"drained", json::array()}};
  std::ifstream in(file);
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("drained") || !j["drained"].is_array())
    throw std::runtime_error(file.string() + " is not a kiln drain record");
  return j;
}

}  // namespace

DrainPlan plan_drain(const json& report) {
  if (!report.is_object() || !report.contains("findings") || !report["findings"].is_array())
    throw std::runtime_error("report.json has no findings list");
  DrainPlan plan;
  plan.run_id = report.value("run_id", std::string());
  if (plan.run_id.empty()) throw std::runtime_error("report.json has no run_id");
  std::map<std::string, std::size_t> at;  // node -> index in targets
  std::map<std::string, Severity> worst;
  for (const auto& fj : report["findings"]) {
    const auto f = fj.get<Finding>();
    const std::string node = node_of(f.entity);
    if (node.empty()) continue;
    if (auto why = held_because(f); !why.empty()) {
      plan.held.push_back(to_string(f.code) + " " + f.entity.id + ": " + why);
      continue;
    }
    auto [it, fresh] = at.try_emplace(node, plan.targets.size());
    if (fresh) plan.targets.push_back({node, "", {}});
    auto& t = plan.targets[it->second];
    t.codes.push_back(to_string(f.code));
    if (fresh || f.severity > worst[node]) {
      worst[node] = f.severity;
      t.reason = "kiln " + to_string(f.code) + " " + plan.run_id;
    }
  }
  return plan;
}

std::string drain_command(const DrainTarget& t) {
  return "scontrol update NodeName=" + t.node + " State=DRAIN Reason=\"" + t.reason + "\"";
}

std::string resume_command(const std::string& node) { return "scontrol update NodeName=" + node + " State=RESUME"; }

int drain_run(const fs::path& dir, const DrainPlan& plan, bool yes, slurm::SlurmClient& slurm, std::ostream& out) {
  for (const auto& h : plan.held) out << "kiln: not draining for " << h << "\n";
  if (plan.targets.empty()) {
    out << "kiln: run " << plan.run_id << " has no confirmed finding that takes a node out: nothing to drain\n";
    return 0;
  }
  if (!yes) {
    for (const auto& t : plan.targets) out << drain_command(t) << "\n";
    out << "kiln: nothing changed; add --yes to drain " << plan.targets.size() << " node(s)\n";
    return 0;
  }
  json record = read_drained(dir / kDrainedFile);
  int rc = 0;
  for (const auto& t : plan.targets) {
    try {
      slurm.drain({t.node}, t.reason);
    } catch (const std::exception& e) {
      out << "kiln: error: could not drain " << t.node << ": " << e.what() << "\n";
      rc = 2;
      continue;
    }
    record["drained"].push_back({{"node", t.node}, {"reason", t.reason}, {"codes", t.codes}, {"at", now_utc()}});
    out << "kiln: drained " << t.node << " (" << t.reason << ")\n";
  }
  record["run_id"] = plan.run_id;
  write_file_atomic(dir / kDrainedFile, record.dump(2) + "\n");
  return rc;
}

int undrain_run(const fs::path& dir, bool yes, slurm::SlurmClient& slurm, std::ostream& out) {
  if (!fs::exists(dir / kDrainedFile)) {
    out << "kiln: error: " << dir.string() << " has no " << kDrainedFile << ": this run drained nothing\n";
    return 2;
  }
  json record = read_drained(dir / kDrainedFile);
  bool any = false;
  int rc = 0;
  for (auto& d : record["drained"]) {
    if (d.value("resumed", false)) continue;
    any = true;
    const std::string node = d.value("node", std::string()), reason = d.value("reason", std::string());
    try {
      const auto info = slurm.node(node);
      const bool drained = info && (info->has_flag("DRAIN") || info->state.find("DRAIN") != std::string::npos);
      if (!drained || info->reason != reason) {
        out << "kiln: leaving " << node << " as it is: "
            << (!info ? "SLURM no longer knows it" : !drained ? "it is not drained any more" : "it is drained for '" + info->reason + "' now")
            << "\n";
        continue;
      }
      if (!yes) {
        out << resume_command(node) << "\n";
        continue;
      }
      slurm.resume({node});
      d["resumed"] = true;
      d["resumed_at"] = now_utc();
      out << "kiln: resumed " << node << " (drained as " << reason << ")\n";
    } catch (const std::exception& e) {
      out << "kiln: error: could not resume " << node << ": " << e.what() << "\n";
      rc = 2;
    }
  }
  if (!any) {
    out << "kiln: every node this run drained is resumed already\n";
    return 0;
  }
  if (!yes) out << "kiln: nothing changed; add --yes to resume them\n";
  else write_file_atomic(dir / kDrainedFile, record.dump(2) + "\n");
  return rc;
}

}  // namespace kiln::coord
