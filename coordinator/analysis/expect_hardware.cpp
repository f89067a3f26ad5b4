// The hardware and software a node reports, against its class: GPU count and model, memory,
// PCIe, NVLink, HCA ports and rate, driver, kernel, MPI, NCCL and rdma-core versions.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string_view>

#include "common/checks.hpp"
#include "common/findings.hpp"
#include "common/hca_port.hpp"
#include "common/text.hpp"
#include "coordinator/analysis/expect_internal.hpp"

namespace kiln::analysis::expect_detail {

namespace {

using json = nlohmann::json;
using spec::NodeClass;

std::string req_text(const spec::VersionReq& r) { return (r.minimum ? ">= " : "") + r.version; }

// The first version in a text such as "Open MPI v4.1.6, package: ...": from its first digit up to
// the first character a version cannot hold.
std::string version_in(const std::string& text) {
  const auto start = text.find_first_of("0123456789");
  if (start == std::string::npos) return "";
  auto end = start;
  while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) ||
                               std::string_view(".-+_~").find(text[end]) != std::string_view::npos))
    ++end;
  std::string v = text.substr(start, end - start);
  while (!v.empty() && !std::isalnum(static_cast<unsigned char>(v.back()))) v.pop_back();
  return v;
}

void hardware_findings(const NodeSeen& n, const NodeClass& c, std::vector<Finding>& out) {
  const auto& h = c.hardware;
  if (h.gpus_per_node && n.info.gpu_count != *h.gpus_per_node) {
    const std::string why = n.info.gpu_skip_reason.empty() ? "" : " (" + n.info.gpu_skip_reason + ")";
    out.push_back(make_finding(Code::GpuCount, {"node", n.host},
                               n.host + " has " + std::to_string(n.info.gpu_count) + " GPU(s) usable through CUDA" + why +
                                   ", class " + c.name + " expects " + std::to_string(*h.gpus_per_node),
                               json::array({{{"gpu_count", n.info.gpu_count}, {"expected", *h.gpus_per_node},
                                             {"class", c.name}}})));
  }
  if (h.gpu_model.empty()) return;
  for (std::size_t i = 0; i < n.info.gpu_models.size(); ++i) {
    const auto& m = n.info.gpu_models[i];
    std::string lm = m, lw = h.gpu_model;
    for (auto* s : {&lm, &lw})
      for (auto& ch : *s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lm.find(lw) != std::string::npos) continue;
    const Entity gpu{"gpu", n.host + "/gpu" + std::to_string(i)};
    out.push_back(make_finding(Code::GpuModel, gpu, gpu.id + " is '" + m + "', class " + c.name + " expects '" + h.gpu_model + "'",
                               json::array({{{"model", m}, {"expected", h.gpu_model}}})));
  }
}


std::optional<int> max_of(const json& extra, const char* key) {
  const auto it = extra.find(key);
  if (it == extra.end() || !it->is_object() || !it->contains("max") || !(*it)["max"].is_number_integer()) return std::nullopt;
  return (*it)["max"].get<int>();
}

GpuHardware gpu_hardware(const Result& r) {
  GpuHardware g;
  g.gpu = r.entity;
  g.pcie_gen = max_of(r.extra, "pcie_gen");
  g.pcie_width = max_of(r.extra, "pcie_width");
  if (auto it = r.extra.find("memory_total_bytes"); it != r.extra.end() && it->is_number())
    g.memory_gib = it->get<double>() / (1024.0 * 1024.0 * 1024.0);
  if (auto it = r.extra.find("nvlinks_active"); it != r.extra.end() && it->is_number_integer())
    g.nvlinks = it->get<int>();
  if (auto it = r.extra.find("nvlinks_inactive"); it != r.extra.end() && it->is_array()) g.nvlinks_inactive = *it;
  if (auto it = r.extra.find("nvlink_error"); it != r.extra.end() && it->is_string()) g.nvlink_error = it->get<std::string>();
  return g;
}

void add_port(Reported& rep, const Result& r) {
  if (!rep.hcas.add(r)) return;
  auto& p = rep.ports[r.entity.id];
  if (!hca_port(r)->active()) {
    p.active = false;
    return;
  }
  if (!p.rate_gbps || r.value < *p.rate_gbps) p.rate_gbps = r.value;
}

bool is_optional(const Expectations& e, const NodeClass& c, const std::string& check) {
  return e.optional.count(check) || std::find(c.optional.begin(), c.optional.end(), check) != c.optional.end();
}

// A requirement whose check ran but read nothing to compare: not.tested, like a missing version.
Finding requirement_untested(const NodeSeen& n, const NodeClass& c, const std::string& check, const std::string& what,
                             const std::string& reason) {
  return make_finding(Code::NotTested, {"node", n.host}, what + " was not tested on " + n.host + ": " + reason,
                      json::array({{{"check", check}, {"requirement", what}, {"reason", reason}, {"class", c.name}}}));
}

// Each GPU's NVLink links up against nvlinks_per_gpu: fewer is gpu.nvlink_down; GPUs whose links
// gpu.health could not read make one not.tested for the node (unless gpu.health is optional).
void nvlink_findings(const Expectations& e, const NodeSeen& n, const NodeClass& c, const std::vector<GpuHardware>& gpus,
                     std::vector<Finding>& out) {
  const auto& want = c.hardware.nvlinks_per_gpu;
  if (!want || *want <= 0) return;
  std::string unread, why;
  for (const auto& g : gpus) {
    if (!g.nvlinks) {
      unread += (unread.empty() ? "" : ", ") + g.gpu.id;
      if (why.empty() && !g.nvlink_error.empty()) why = " (" + g.nvlink_error + ")";
      continue;
    }
    if (*g.nvlinks >= *want) continue;
    out.push_back(make_finding(
        Code::GpuNvlinkDown, g.gpu,
        g.gpu.id + " has " + std::to_string(*g.nvlinks) + " active NVLink link(s), class " + c.name + " expects " +
            std::to_string(*want),
        json::array({{{"nvlinks_active", *g.nvlinks}, {"expected", *want},
                      {"inactive_links", g.nvlinks_inactive.is_null() ? json::array() : g.nvlinks_inactive},
                      {"class", c.name}}})));
  }
  if (!unread.empty() && !is_optional(e, c, "gpu.health"))
    out.push_back(requirement_untested(n, c, "gpu.health", "nvlinks_per_gpu",
                                       "gpu.health reported no NVLink state for " + unread + why + " (class " + c.name +
                                           " expects " + std::to_string(*want) + " per GPU)"));
}

// The node's HCAs against hcas_per_node (devices with an ACTIVE port; fewer is hca.count) and each
// ACTIVE port against hca_rate_gbps (slower is hca.rate). Nothing when ib.ports gave no port: it
// skipped or never ran, which untested_findings reports as not.tested unless it is optional.
void hca_findings(const NodeSeen& n, const NodeClass& c, const Reported& rep, std::vector<Finding>& out) {
  const auto& h = c.hardware;
  if ((!h.hcas_per_node && !h.hca_rate_gbps) || rep.ports.empty()) return;
  const auto active = rep.hcas.active();
  const auto inactive = rep.hcas.inactive();
  if (h.hcas_per_node && static_cast<int>(active.size()) < *h.hcas_per_node) {
    const std::string down = join(inactive, ", ");
    out.push_back(make_finding(
        Code::HcaCount, {"node", n.host},
        n.host + " has " + std::to_string(active.size()) + " HCA(s) with an ACTIVE port (ib.ports)" +
            (down.empty() ? "" : ", not active: " + down) + ", class " + c.name + " expects " +
            std::to_string(*h.hcas_per_node),
        json::array({{{"hca_count", active.size()}, {"expected", *h.hcas_per_node},
                      {"active", json(std::vector<std::string>(active.begin(), active.end()))},
                      {"inactive_ports", json(inactive)}, {"class", c.name}}})));
  }
  if (!h.hca_rate_gbps) return;
  for (const auto& [id, p] : rep.ports) {
    if (!p.active || !p.rate_gbps || *p.rate_gbps >= *h.hca_rate_gbps) continue;
    out.push_back(make_finding(Code::HcaRate, {"hca", id},
                               id + " runs at " + short_number(*p.rate_gbps) + " Gb/s, class " + c.name + " expects " +
                                   short_number(*h.hca_rate_gbps) + " Gb/s",
                               json::array({{{"rate_gbps", *p.rate_gbps}, {"expected", *h.hca_rate_gbps},
                                             {"class", c.name}}})));
  }
}

// Each GPU against the class's memory and PCIe link. Memory may be 1% under the class's figure
// (NVML reports 140.4 GiB for a "141 GB" H200, and classes round).
void gpu_hardware_findings(const NodeClass& c, const std::vector<GpuHardware>& gpus, std::vector<Finding>& out) {
  const auto& h = c.hardware;
  for (const auto& g : gpus) {
    if (h.gpu_memory_gib && g.memory_gib && *g.memory_gib < 0.99 * *h.gpu_memory_gib) {
      std::ostringstream b;
      b << std::fixed << std::setprecision(1) << *g.memory_gib << " GiB of memory, class " << c.name << " expects "
        << *h.gpu_memory_gib << " GiB";
      out.push_back(make_finding(Code::GpuModel, g.gpu, g.gpu.id + " has " + b.str(),
                                 json::array({{{"memory_gib", *g.memory_gib}, {"expected", *h.gpu_memory_gib}}})));
    }
    const bool gen = h.pcie_gen && g.pcie_gen && *g.pcie_gen < *h.pcie_gen;
    const bool width = h.pcie_width && g.pcie_width && *g.pcie_width < *h.pcie_width;
    if (gen || width)
      out.push_back(make_finding(
          Code::GpuPcieDegraded, g.gpu,
          g.gpu.id + "'s PCIe link can reach Gen" + std::to_string(g.pcie_gen.value_or(0)) + " x" +
              std::to_string(g.pcie_width.value_or(0)) + " at most, class " + c.name + " expects Gen" +
              std::to_string(h.pcie_gen.value_or(0)) + " x" + std::to_string(h.pcie_width.value_or(0)),
          json::array({{{"pcie_gen_max", g.pcie_gen.value_or(0)}, {"pcie_width_max", g.pcie_width.value_or(0)},
                        {"expected_gen", h.pcie_gen.value_or(0)}, {"expected_width", h.pcie_width.value_or(0)}}})));
  }
}

}  // namespace

std::map<std::string, Reported> reported(const std::vector<RoundRecord>& rounds) {
  std::map<std::string, Reported> out;
  for (const auto& rr : rounds) {
    if (rr.phase != Phase::Plan || !rr.finished) continue;
    for (const auto& r : rr.results) {
      if (!r.extra.is_object()) continue;
      if (r.test == "gpu.health" && r.metric == "driver" && r.extra.contains("driver_version") &&
          r.extra["driver_version"].is_string())
        out[r.host].driver = r.extra["driver_version"].get<std::string>();
      if (r.test == "host.inventory" && r.metric == "inventory" && r.extra.contains("kernel") &&
          r.extra["kernel"].is_string())
        out[r.host].kernel = r.extra["kernel"].get<std::string>();
      if (r.test == "host.inventory" && r.metric == "inventory" && r.extra.contains("rdma_core") &&
          r.extra["rdma_core"].is_string())
        out[r.host].rdma_core = r.extra["rdma_core"].get<std::string>();
      if (r.test == "gpu.health" && r.metric == "health" && r.entity.kind == "gpu") out[r.host].gpus.push_back(gpu_hardware(r));
      if (r.test == "ib.ports" && r.metric == "rate") add_port(out[r.host], r);
    }
  }
  return out;
}

void version_finding(const NodeSeen& n, const NodeClass& c, const char* what, const std::optional<spec::VersionReq>& req,
                     const std::string& actual_text, Code code, const char* source, std::vector<Finding>& out) {
  if (!req) return;
  const std::string actual = version_in(actual_text);
  if (actual.empty()) {
    if (std::string(source) == "gpu.health") return;  // gpu.health's own not.tested says it did not run
    const std::string reason = "the node reports no " + std::string(what) + " version (class " + c.name + " asks for " +
                               req_text(*req) + ")";
    out.push_back(make_finding(Code::NotTested, {"node", n.host}, std::string(what) + " version was not tested on " + n.host + ": " + reason,
                               json::array({{{"check", source}, {"requirement", what}, {"reason", reason}, {"class", c.name}}})));
    return;
  }
  if (req->satisfied_by(actual)) return;
  out.push_back(make_finding(code, {"node", n.host},
                             n.host + " runs " + what + " " + actual + ", class " + c.name + " expects " + req_text(*req),
                             json::array({{{"software", what}, {"actual", actual_text}, {"expected", req_text(*req)},
                                           {"class", c.name}}})));
}

void software_findings(const NodeSeen& n, const NodeClass& c, const Reported& rep, std::vector<Finding>& out) {
  const auto& s = c.software;
  version_finding(n, c, "driver", s.driver, rep.driver, Code::GpuDriver, "gpu.health", out);
  version_finding(n, c, "cuda", s.cuda, n.info.cuda_runtime, Code::SoftwareVersion, "host.inventory", out);
  version_finding(n, c, "nccl", s.nccl, n.info.nccl_version, Code::SoftwareVersion, "host.inventory", out);
  version_finding(n, c, "mpi", s.mpi, n.info.mpi_version, Code::SoftwareVersion, "host.inventory", out);
  version_finding(n, c, "kernel", s.kernel, rep.kernel, Code::SoftwareVersion, "host.inventory", out);
  version_finding(n, c, "rdma_core", s.rdma_core, rep.rdma_core, Code::SoftwareVersion, "host.inventory", out);
}

void node_findings(const Expectations& e, const NodeSeen& n, const NodeClass& c, const Reported& rep,
                   std::vector<Finding>& out) {
  hardware_findings(n, c, out);
  software_findings(n, c, rep, out);
  gpu_hardware_findings(c, rep.gpus, out);
  nvlink_findings(e, n, c, rep.gpus, out);
  hca_findings(n, c, rep, out);
}

}  // namespace kiln::analysis::expect_detail
