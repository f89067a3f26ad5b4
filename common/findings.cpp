#include "common/findings.hpp"

#include <sstream>
#include <stdexcept>

namespace kiln {

namespace {
using S = Severity;
}  // namespace

const std::vector<CatalogEntry>& catalog() {
  static const std::vector<CatalogEntry> entries{
      {Code::RankMissing, "rank.missing", S::Error, "rank", "a worker rank never connected to the coordinator",
       "check the node is up and can reach the coordinator's address (firewall, routing), then look at "
       "workers.log in the run directory for the rank's start-up error"},
      {Code::RankLost, "rank.lost", S::Error, "rank", "a worker rank stopped talking to the coordinator mid-campaign",
       "check the node (dmesg, power, network link); drain it if it is down and rerun the campaign"},
      {Code::NodeLost, "node.lost", S::Critical, "node",
       "a node dropped out of the campaign (its ranks were lost or timed out)",
       "find out why {entity} stopped (scontrol show node, its console, BMC and dmesg), fix it and rerun kiln on "
       "it before returning it to service"},
      {Code::TestFail, "test.fail", S::Error, "rank", "a check measured a value outside its limits",
       "read the evidence; rerun the check on the entity alone to confirm, then repair or drain it"},
      {Code::TestError, "test.error", S::Error, "rank", "a check could not complete because of an error",
       "read the error in the evidence; fix the software/driver setup on that node and rerun"},
      {Code::TestTimeout, "test.timeout", S::Error, "rank", "a check did not finish before its deadline",
       "the entity may be hung or very slow: check dmesg and the worker log, then rerun the check alone"},
      {Code::GroupBehind, "group.behind", S::Error, "rank",
       "a group check overran its deadline, and the heartbeats show the group was waiting for this rank: it had "
       "done markedly fewer operations than the other members, or they were waiting on it",
       "check the node of {entity} (CPU frequency and load, dmesg, its NIC's link speed and port errors); the "
       "other members' timeouts in that check were caused by it. Rerun the group check without it to confirm"},
      {Code::NodeSlow, "node.slow", S::Error, "node", "a node is slow with known-good partners",
       "drain {entity} (scontrol update nodename={entity} state=drain reason=kiln), then check its NIC (link "
       "speed, port errors), CPU frequency and thermal state; reseat or replace its NIC cable if the port shows "
       "errors, and rerun kiln on it"},
      {Code::NodeRegressed, "node.regressed", S::Warning, "node",
       "a node's figure fell below the median of its own earlier runs in the history database by more than the "
       "regression threshold (kiln run --regression-threshold)",
       "compare with `kiln history {entity}`; run again to confirm before draining"},
      {Code::LinkSlow, "link.slow", S::Error, "link",
       "the network path between two nodes is slow while both ends are fine with others",
       "check the cables and switch ports on the path between the two ends of {entity}: port error counters on "
       "both ends, reseat or replace the cable, then rerun a pair check on them; both nodes are fine with other "
       "partners, so do not drain them"},
      {Code::NvlinkSlow, "nvlink.slow", S::Error, "nvlink",
       "peer copies between two GPUs of one node are slow over NVLink/NVSwitch",
       "run nvidia-smi nvlink --status and nvidia-smi topo -m on the node of {entity}; check the fabric manager "
       "and NVSwitch state, then reseat or RMA the GPU baseboard if links are down"},
      {Code::SwitchSlow, "switch.slow", S::Critical, "switch", "every node under one switch is slow",
       "check switch {entity}: uplink ports, port error counters and firmware; the nodes under it are slow only "
       "because of the switch, so do not drain them one by one"},
      {Code::LocalizeUnresolved, "localize.unresolved", S::Warning, "node or link",
       "localization could not decide whether a suspect node or link is slow: it ran out of rounds, of "
       "resolution tests or of known-good partners before enough votes for or against it, or a link read slow "
       "in some tests and clearly fast in others (the link or one of its ends slow some of the time)",
       "rerun the localization with {entity} and a few known-good nodes (kiln run --nodelist), or with a larger "
       "round budget; the evidence lists the slow and fast tests it had and why it stopped"},
      {Code::GpuCount, "gpu.count", S::Critical, "node", "the node has fewer usable GPUs than the spec expects",
       "check nvidia-smi and dmesg for the missing GPU (XID 79: fell off the bus); reseat or replace it"},
      {Code::GpuModel, "gpu.model", S::Error, "gpu", "a GPU is not the model the spec expects",
       "confirm the hardware order; replace the GPU or correct the spec"},
      {Code::GpuDriver, "gpu.driver", S::Error, "node", "the node's GPU driver is not the version the spec expects",
       "install the expected driver version on {entity} (or correct the spec), reboot and rerun"},
      {Code::GpuLost, "gpu.lost", S::Critical, "gpu", "a GPU fell off the bus or stopped answering mid-check",
       "drain the node; check dmesg for XID 79/74, reseat the GPU and its power, then rerun gpu.health"},
      {Code::GpuSdc, "gpu.sdc", S::Critical, "gpu", "a GPU computed wrong GEMM results (silent data corruption)",
       "drain the node and RMA the GPU {entity}; never return it to training"},
      {Code::GpuSlow, "gpu.slow", S::Error, "gpu", "a GPU is slower than its peers or the spec under the same load",
       "check its clocks, power and throttle reasons in the evidence; check cooling and PCIe, then rerun gpu.burn"},
      {Code::GpuThrottle, "gpu.throttle", S::Warning, "gpu",
       "a GPU throttled for thermal or power reasons beyond the normal power cap",
       "check the node's airflow, fans and inlet temperature; rerun gpu.burn once fixed"},
      {Code::GpuMemory, "gpu.memory", S::Critical, "gpu", "GPU memory returned wrong data",
       "drain the node; check ECC and row-remap counters (gpu.health), then RMA the GPU"},
      {Code::GpuMemoryBw, "gpu.memory_bw", S::Error, "gpu", "GPU memory bandwidth is below its peers or the spec",
       "rerun gpu.memtest; check clocks and ECC state, then RMA if it persists"},
      {Code::GpuEccUncorrectable, "gpu.ecc_uncorrectable", S::Critical, "gpu",
       "a GPU reported uncorrectable ECC errors",
       "drain the node; reset the GPU at a maintenance window and RMA it if errors return"},
      {Code::GpuEccDisabled, "gpu.ecc_disabled", S::Error, "gpu", "ECC is off on a GPU that the spec expects it on",
       "enable ECC (nvidia-smi -e 1 at a maintenance window, then reset the GPU) and rerun gpu.health"},
      {Code::GpuRowRemapFailure, "gpu.row_remap_failure", S::Critical, "gpu",
       "a GPU could not remap a failing memory row", "drain the node and RMA the GPU"},
      {Code::GpuResetRequired, "gpu.reset_required", S::Error, "gpu", "a GPU has pending retired pages or row remaps",
       "drain the node and reset the GPU (or reboot) to apply them, then rerun gpu.health"},
      {Code::GpuPcieDegraded, "gpu.pcie_degraded", S::Error, "gpu",
       "a GPU's PCIe link runs below its maximum generation or width",
       "reseat the GPU/riser, check the slot and BIOS PCIe settings"},
      {Code::GpuPcieSlow, "gpu.pcie_slow", S::Error, "gpu",
       "a GPU's PCIe link can reach only a lower generation than the spec asks for",
       "check the slot, riser and BIOS PCIe generation setting of {entity}; correct the spec if the platform is "
       "older"},
      {Code::GpuNvlinkDown, "gpu.nvlink_down", S::Error, "gpu",
       "a GPU has fewer active NVLink links than the spec expects",
       "run nvidia-smi nvlink --status on the node of {entity} and check the fabric manager and NVSwitch state "
       "(nvidia-smi -q, its log); reset the GPU at a maintenance window, and reseat or RMA the GPU baseboard if "
       "the links stay down"},
      {Code::GpuPowerLimit, "gpu.power_limit", S::Warning, "gpu",
       "a GPU's power limit is below its default, so it cannot reach its rated throughput",
       "restore the default power limit (nvidia-smi -pl) or find which tool lowered it, then rerun gpu.burn"},
      {Code::GpuPersistence, "gpu.persistence", S::Warning, "gpu", "persistence mode is off on a GPU",
       "enable persistence (nvidia-persistenced) so the driver stays loaded between jobs"},
      {Code::GpuMigMode, "gpu.mig_mode", S::Error, "gpu", "a GPU's MIG mode is not what the spec expects",
       "set the expected MIG mode (nvidia-smi -mig) at a maintenance window, reset the GPU and rerun"},
      {Code::GpuXid, "gpu.xid", S::Error, "gpu", "the driver reported XID events during the campaign",
       "look the XID up in NVIDIA's XID catalog; most call for a GPU reset or RMA"},
      {Code::GpuHang, "gpu.hang", S::Critical, "gpu", "a GPU stopped making progress before the deadline",
       "drain the node, collect nvidia-bug-report, reset the GPU"},
      {Code::GpuCuda, "gpu.cuda", S::Error, "gpu", "a CUDA call failed on a GPU",
       "read the error in the evidence; check the driver/CUDA install on that node"},
      {Code::GpuNvml, "gpu.nvml", S::Error, "node", "NVML could not be loaded or queried on the node",
       "check that the NVIDIA driver (libnvidia-ml.so.1) is installed and matches the kernel module on {entity}"},
      {Code::HcaCount, "hca.count", S::Error, "node", "the node has fewer HCAs with an active port than the spec expects",
       "run ibstat (or ibv_devinfo) on {entity}: a device that is missing points at the card, its slot or the "
       "driver (lspci, dmesg for mlx5_core), a port that is not ACTIVE at the cable or the switch port; fix it "
       "and rerun ib.ports"},
      {Code::HcaRate, "hca.rate", S::Error, "hca", "an HCA port runs at a lower rate than the spec expects",
       "check the rate and width of {entity} (ibstat): a link trained at fewer lanes or a lower speed points at "
       "the cable, the transceiver or the switch port; reseat or replace the cable and rerun ib.ports"},
      {Code::FleetOutlier, "fleet.outlier", S::Error, "gpu",
       "a GPU or node measured clearly worse than the rest of the fleet (the median of every GPU or node of "
       "the campaign), though it may look healthy beside its own node's GPUs",
       "compare {entity} with its peers in the evidence; check its clocks, power limit, thermals and PCIe "
       "link (nvidia-smi -q), then rerun the check on it alone"},
      {Code::FleetSetting, "fleet.setting", S::Warning, "node",
       "a node's software version or setting differs from what most nodes of the campaign have",
       "bring {entity} in line with the fleet (same driver, CUDA, NCCL, MPI, rdma-core, kernel) or confirm the "
       "difference is intended"},
      {Code::NotTested, "not.tested", S::Warning, "node",
       "a check the node's class requires (docs/spec.md) did not run to a verdict there: it was skipped, left "
       "out of the plan, or the node's ranks were lost before it",
       "read the reason: give {entity} what the check needs (GPUs, NCCL, HCAs), add the check to --tests or "
       "rerun after fixing the lost ranks; mark the check optional (--optional, or the class's optional list) "
       "only if the node need not pass it"},
      {Code::SpecBelow, "spec.below", S::Error, "gpu, rank, node or group",
       "a measurement is worse than the spec's figure by more than its tolerance",
       "compare the measured and expected values in the evidence; rerun the check on {entity} alone, then look "
       "for the cause (clocks, power, links, cabling, fabric settings); correct the spec only if its figure was "
       "wrong"},
      {Code::SoftwareVersion, "software.version", S::Error, "node",
       "the node runs a CUDA, NCCL, MPI, rdma-core or kernel version the spec does not accept",
       "install the version the spec names on {entity} (or correct the spec) and rerun"},
      {Code::ResultInvalid, "result.invalid", S::Error, "rank",
       "a worker sent a value kiln cannot use (an unknown finding code or a malformed field)",
       "check that every node runs the same kiln version as the coordinator; the evidence holds the value"},
      {Code::CampaignError, "campaign.error", S::Critical, "job", "the campaign could not run to the end",
       "read the error; fix the cause (launcher, network, permissions) and rerun"},
  };
  return entries;
}

const CatalogEntry& entry(Code c) {
  for (const auto& e : catalog())
    if (e.code == c) return e;
  throw std::logic_error("finding code missing from the catalog");  // a unit test covers every Code
}

std::string to_string(Code c) { return std::string(entry(c).name); }

std::optional<Code> code_from_string(std::string_view name) {
  for (const auto& e : catalog())
    if (e.name == name) return e.code;
  return std::nullopt;
}

void to_json(nlohmann::json& j, Code c) { j = to_string(c); }
void from_json(const nlohmann::json& j, Code& c) {
  const auto parsed = j.is_string() ? code_from_string(j.get<std::string>()) : std::nullopt;
  c = parsed.value_or(Code::ResultInvalid);
}

Finding make_finding(Code code, const Entity& entity, const std::string& summary, nlohmann::json evidence,
                     double confidence) {
  const auto& e = entry(code);
  Finding f;
  f.code = code;
  f.severity = e.severity;
  f.entity = entity;
  f.summary = summary;
  std::string next(e.next_step);
  for (auto pos = next.find("{entity}"); pos != std::string::npos; pos = next.find("{entity}"))
    next.replace(pos, 8, entity.id);
  f.next_step = std::move(next);
  f.confidence = confidence;
  f.evidence = std::move(evidence);
  return f;
}

std::string catalog_markdown() {
  std::ostringstream os;
  os << "# Findings catalog\n\n"
        "Generated from the catalog in the source (`kiln catalog --markdown`); a unit test fails when this\n"
        "file and the catalog differ. Every finding in report.json carries one of these codes, the entity it\n"
        "names, the evidence, and the next step. `{entity}` stands for the entity's id.\n\n"
        "| code | severity | entity | meaning | next step |\n|---|---|---|---|---|\n";
  for (const auto& e : catalog())
    os << "| `" << e.name << "` | " << to_string(e.severity) << " | " << e.entity_kind << " | " << e.meaning << " | "
       << e.next_step << " |\n";
  return os.str();
}

}  // namespace kiln
