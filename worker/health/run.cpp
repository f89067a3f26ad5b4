#include "worker/health/run.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include "common/hca_port.hpp"
#include "common/protocol.hpp"
#include "common/spec.hpp"
#include "common/text.hpp"
#include "slurm/command_runner.hpp"
#include "slurm/slurm_client.hpp"
#include "worker/health/drain.hpp"
#include "worker/health/verdict.hpp"
#include "worker/hw/pci_sysfs.hpp"
#include "worker/runner.hpp"

namespace kiln::worker::health {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The spec's expectations for this node's class as check parameters, and its HCA count (0: none
// declared). Throws std::runtime_error.
nlohmann::json spec_params(const std::string& path, const NodeInfo& node, int& hcas_expected) {
  auto parsed = spec::load_spec(path);
  if (!parsed.spec) throw std::runtime_error(parsed.errors.empty() ? "cannot read the spec " + path : parsed.errors.front());
  const auto& s = *parsed.spec;
  const spec::NodeClass* cls = s.class_for(node.host, "");
  for (const auto& c : s.classes)
    if (!cls && c.match_hardware && spec::matches_hardware(c, node)) cls = &c;
  if (!cls) throw std::runtime_error("the spec " + path + " has no class for " + node.host);
  nlohmann::json out = {{"gpu.health", nlohmann::json::object()}, {"ib.ports", nlohmann::json::object()}};
  if (cls->hardware.gpus_per_node) out["gpu.health"]["expected_gpus"] = *cls->hardware.gpus_per_node;
  if (!cls->hardware.gpu_model.empty()) out["gpu.health"]["expected_model"] = cls->hardware.gpu_model;
  if (cls->hardware.hca_rate_gbps) out["ib.ports"]["expect_rate_gbps"] = *cls->hardware.hca_rate_gbps;
  hcas_expected = cls->hardware.hcas_per_node.value_or(0);
  return out;
}

// kept: when given, receives the check's records (require_hcas counts ports from them).
Part in_process(const NodeInfo& node, const Faults& faults, const std::string& key, nlohmann::json params,
                double deadline_s, std::vector<Record>* kept = nullptr) {
  proto::Round round;
  round.id = 1;
  round.deadline_s = deadline_s;
  round.groups = {{node.world_rank}};
  round.tests = {{key, std::move(params)}};
  std::vector<Record> records;
  Runner runner(node, faults, [&](const Record& r) { records.push_back(r); });
  const auto t0 = Clock::now();
  runner.run_round(round);
  Part p = fold_records(key, records, since(t0));
  if (kept) *kept = std::move(records);
  return p;
}

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "kiln-worker" : p.string();
}

// The NCCL harness runs one rank per GPU and sets its communicator up over MPI, so NCCL inside the
// node runs as `mpirun -np GPUS kiln-worker --standalone` on this host alone.
Part nccl_in_node(const NodeInfo& node, double deadline_s) {
  const std::string key = "nccl.all_reduce";
  if (node.gpu_count < 2)
    return {key, Status::Skip, key,
            node.gpu_count == 0 ? (node.gpu_skip_reason.empty() ? "no GPU" : node.gpu_skip_reason)
                                : "one GPU: nothing to reduce across", 0};
  std::vector<std::string> argv = {"mpirun"};
  if (::geteuid() == 0) argv.push_back("--allow-run-as-root");  // slurmd runs health checks as root
  const nlohmann::json params = {{key, {{"min_bytes", 1 << 20}, {"max_bytes", 64 << 20}, {"check", true}}}};
  const std::string n = std::to_string(node.gpu_count);
  const std::vector<std::string> rest = {"-np", n, "--bind-to", "none", self_exe(), "--standalone", "--tests", key,
                                         "--deadline", std::to_string(std::max(1.0, deadline_s - 5)),
                                         "--params", params.dump()};
  argv.insert(argv.end(), rest.begin(), rest.end());
  slurm::ProcessRunner runner;
  const auto t0 = Clock::now();
  const auto res = runner.run(argv, std::chrono::milliseconds(static_cast<long long>(deadline_s * 1000)));
  if (res.spawn_failed) return {key, Status::Error, key, "cannot start mpirun (the NCCL harness needs one rank per GPU)", 0};
  std::vector<Record> records;
  std::istringstream lines(res.out);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    try {
      records.push_back(j.get<Record>());
    } catch (const std::exception&) {  // not a record: mpirun's own chatter
    }
  }
  Part p = fold_records(key, records, since(t0));
  if (res.timed_out) p = {key, Status::Timeout, key, "mpirun did not finish in " + std::to_string(static_cast<int>(deadline_s)) + " s", p.seconds};
  else if (records.empty()) p.reason = "mpirun exit " + std::to_string(res.exit_code) + ": " + res.err.substr(0, 200);
  return p;
}

}  // namespace

namespace {

// Leaves with exit 2 when the parts overrun the budget by far (a hung driver call, a stuck
// MPI_Init): slurmd must not wait forever, and a check that did not finish says nothing.
void start_watchdog(double budget_s, bool json) {
  std::thread([budget_s, json] {
    std::this_thread::sleep_for(std::chrono::duration<double>(budget_s + 10));
    const Verdict v{kCouldNotRun, "budget", "the check ran past its budget of " + std::to_string(static_cast<int>(budget_s)) + " s", {}};
    std::printf("%s\n", json ? to_json({}, v).dump().c_str() : final_line(v).c_str());
    std::fflush(stdout);
    std::_Exit(kCouldNotRun);
  }).detach();
}

// The spec's class has HCAs: a node where ib.ports finds none has lost them (a driver that did not
// load, a card gone from the bus). That is a fault, not a part that does not apply, as the GPU
// count is for GPUs; without it a node of an HCA class with no HCA passed with ib.ports untested.
// A node with some of them is held to the same count as a campaign's (expect_hardware.cpp): devices
// with an ACTIVE port among ib.ports' own results, read as the campaign reads them
// (common/hca_port.hpp); fewer is hca.count (7 of 8 HCAs passed before, since every port that was
// there was ACTIVE).
Part require_hcas(Part p, const std::vector<Record>& records, int expected) {
  if (expected <= 0) return p;
  if (p.status == Status::Skip)
    return {p.key, Status::Fail, "hca.count", "the spec expects " + std::to_string(expected) + " HCA(s): " + p.reason,
            p.seconds};
  if (p.status != Status::Pass && p.status != Status::Fail) return p;  // an error or timeout says so itself
  HcaCount count;
  for (const auto& rec : records)
    if (const auto* r = std::get_if<Result>(&rec)) count.add(*r);
  const auto active = count.active();
  const std::string inactive = join(count.inactive(), ", ");
  if (static_cast<int>(active.size()) >= expected) return p;
  std::string reason = std::to_string(active.size()) + " HCA(s) with an ACTIVE port" +
                       (inactive.empty() ? "" : " (not active: " + inactive + ")") + ", the spec expects " +
                       std::to_string(expected);
  if (p.status == Status::Fail && !p.reason.empty()) reason += "; " + p.reason;
  return {p.key, Status::Fail, "hca.count", reason, p.seconds};
}

std::vector<Part> run_parts(const Options& o, const NodeInfo& node, const Faults& faults, const nlohmann::json& params,
                            int hcas_expected) {
  const auto t0 = Clock::now();
  auto left = [&] { return o.budget_s - since(t0); };
  auto show = [&](const Part& p) {
    if (!o.json) std::printf("%s\n", part_line(p).c_str()), std::fflush(stdout);
    return p;
  };
  auto p_of = [&](const char* key, nlohmann::json extra) {
    nlohmann::json out = params.value(key, nlohmann::json::object());
    if (extra.is_object()) out.update(extra);
    return out;
  };
  // Cheapest first; each part gets at most its usual time and never more than the budget left. A
  // part with no time left could not run (exit 2): running out of budget is not a node's fault.
  auto part = [&](const std::string& key, double usual_s, const std::function<Part(double)>& run) {
    const double deadline_s = std::min(usual_s, left());
    return show(deadline_s < 1 ? Part{key, Status::Error, key, "no time left in the --budget", 0} : run(deadline_s));
  };
  const double burn_s = std::clamp(left() / 8, 1.0, 5.0);
  std::vector<Part> parts;
  parts.push_back(part("ib.ports", 10, [&](double d) {
    std::vector<Record> records;
    Part p = in_process(node, faults, "ib.ports", p_of("ib.ports", {{"window_s", 2.0}}), d, &records);
    return require_hcas(std::move(p), records, hcas_expected);
  }));
  parts.push_back(part("gpu.health", 20, [&](double d) {
    return in_process(node, faults, "gpu.health", p_of("gpu.health", nullptr), d);
  }));
  parts.push_back(part("gpu.burn", burn_s + 20, [&](double d) {
    const nlohmann::json burn = {{"duration_s", std::min(burn_s, d / 2)}, {"warmup_s", 1.0}, {"size", 8192}};
    return in_process(node, faults, "gpu.burn", burn, d);
  }));
  parts.push_back(part("nccl.all_reduce", 30, [&](double d) { return nccl_in_node(node, d); }));
  return parts;
}

std::vector<std::string> slurm_actions(const Options& o, const Verdict& v) {
  std::vector<std::string> out;
  if (!o.drain_on_fail && !o.resume_on_pass) return out;
  slurm::ProcessRunner runner;
  slurm::SlurmClient client(runner, {std::chrono::seconds(10), std::chrono::seconds(1)});
  const std::string node = slurm_node_name();
  try {
    if (o.drain_on_fail && v.exit_code != kHealthy) out.push_back(drain_on_fault(client, node, v));
    if (o.resume_on_pass && v.exit_code == kHealthy)
      if (auto line = resume_on_pass(client, node, v); !line.empty()) out.push_back(line);
  } catch (const std::exception& e) {
    out.push_back(std::string("kiln-health: scontrol failed: ") + e.what());
  }
  return out;
}

// Without a GPU count from the spec, the node must have every NVIDIA GPU its PCI bus lists (read
// under KILN_SYSFS_ROOT, else /): a GPU that the bus still shows but the driver, NVML or CUDA
// cannot use fails gpu.health instead of passing as "no GPU". A node with no NVIDIA GPU on its
// bus is a CPU node: gpu.health SKIPs there.
void expect_bus_gpus(nlohmann::json& params) {
  if (params.contains("gpu.health") && params["gpu.health"].contains("expected_gpus")) return;
  int on_bus = 0;
  for (const auto& f : pci::list_functions(pci::root_from_env())) on_bus += f.gpu() ? 1 : 0;
  if (on_bus == 0) return;
  auto& gh = params["gpu.health"];
  if (!gh.is_object()) gh = nlohmann::json::object();
  gh["expected_gpus"] = on_bus;
  gh["expected_gpus_from"] = "the PCI bus (" + std::to_string(on_bus) + " NVIDIA GPU(s))";
}

}  // namespace

int run_health_check(const Options& o, const NodeInfo& node, const Faults& faults) {
  const auto t0 = Clock::now();
  start_watchdog(o.budget_s, o.json);
  nlohmann::json params = nlohmann::json::object();
  std::vector<Part> parts;
  int hcas_expected = 0;
  if (!o.spec.empty()) {
    try {
      params = spec_params(o.spec, node, hcas_expected);
    } catch (const std::exception& e) {
      parts.push_back({"spec", Status::Error, "spec", e.what(), 0});
    }
  }
  try {
    if (parts.empty()) expect_bus_gpus(params);
    if (parts.empty()) {
      parts = run_parts(o, node, faults, params, hcas_expected);
    }
  } catch (const std::exception& e) {  // the runner's own failure, not a check's: nothing was judged
    parts = {{"health-check", Status::Error, "health-check", e.what(), 0}};
  }
  const Verdict v = judge(parts);
  const auto actions = slurm_actions(o, v);
  if (o.json) {
    auto j = to_json(parts, v);
    j["host"] = node.host;
    j["actions"] = actions;
    j["seconds"] = since(t0);
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("kiln-health: %zu parts in %.1f s\n", parts.size(), since(t0));
    for (const auto& a : actions) std::printf("%s\n", a.c_str());
    std::printf("%s\n", final_line(v).c_str());
  }
  std::fflush(stdout);
  return v.exit_code;
}

}  // namespace kiln::worker::health
