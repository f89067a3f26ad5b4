#include "coordinator/catalog.hpp"

namespace kiln::coord {

const std::vector<CatalogEntry>& catalog() {
  static const std::vector<CatalogEntry> entries{
      {"rank.missing", Severity::Error, "a worker rank never connected to the coordinator",
       "check the node is up and can reach the coordinator's address (firewall, routing), then look at "
       "workers.log in the run directory for the rank's start-up error"},
      {"rank.lost", Severity::Error, "a worker rank stopped talking to the coordinator mid-campaign",
       "check the node (dmesg, power, network link); drain it if it is down and rerun the campaign"},
      {"node.lost", Severity::Critical, "a node dropped out of the campaign (its ranks were lost or timed out)",
       "drain the node, check its power, BMC and network link, and rerun kiln on it once repaired"},
      {"test.fail", Severity::Error, "a test measured a value outside its limits",
       "read the evidence; rerun the test on the entity alone to confirm, then repair or drain it"},
      {"test.error", Severity::Error, "a test could not complete because of an error",
       "read the error in the evidence; fix the software/driver setup on that node and rerun"},
      {"test.timeout", Severity::Error, "a test did not finish before its deadline",
       "the entity may be hung or very slow: check dmesg and the worker log, then rerun the test alone"},
      {"node.slow", Severity::Error, "a node is slow with known-good partners",
       "drain the node; check its NIC (link speed, errors), CPU frequency and thermal state, then rerun"},
      {"link.slow", Severity::Error, "the link between two nodes is slow while both ends are fine with others",
       "check the cable and switch ports between the two nodes (reseat or replace the cable), then rerun a "
       "pair test on them"},
      {"switch.slow", Severity::Error, "every node under one switch is slow",
       "check the switch (uplinks, errors, firmware) before draining its nodes"},
      {"gpu.count", Severity::Critical, "the node has fewer usable GPUs than the spec expects",
       "check nvidia-smi and dmesg for the missing GPU (XID 79: fell off the bus); reseat or replace it"},
      {"gpu.model", Severity::Error, "a GPU is not the model the spec expects",
       "confirm the hardware order; replace the GPU or correct the spec"},
      {"gpu.lost", Severity::Critical, "a GPU fell off the bus or stopped answering mid-test",
       "drain the node; check dmesg for XID 79/74, reseat the GPU and its power, then rerun gpu.health"},
      {"gpu.sdc", Severity::Critical, "a GPU computed wrong GEMM results (silent data corruption)",
       "drain the node and RMA the GPU named in the evidence; never return it to training"},
      {"gpu.slow", Severity::Error, "a GPU is slower than its peers or the spec under the same load",
       "check its clocks, power and throttle reasons in the evidence; check cooling and PCIe, then rerun gpu.burn"},
      {"gpu.throttle", Severity::Warning, "a GPU throttled for thermal or power reasons beyond the normal power cap",
       "check the node's airflow, fans and inlet temperature; rerun gpu.burn once fixed"},
      {"gpu.memory", Severity::Critical, "GPU memory returned wrong data",
       "drain the node; check ECC and row-remap counters (gpu.health), then RMA the GPU"},
      {"gpu.memory_bw", Severity::Error, "GPU memory bandwidth is below its peers or the spec",
       "rerun gpu.memtest; check clocks and ECC state, then RMA if it persists"},
      {"gpu.ecc_uncorrectable", Severity::Critical, "a GPU reported uncorrectable ECC errors",
       "drain the node; reset the GPU at a maintenance window and RMA it if errors return"},
      {"gpu.row_remap_failure", Severity::Critical, "a GPU could not remap a failing memory row",
       "drain the node and RMA the GPU"},
      {"gpu.reset_required", Severity::Error, "a GPU has pending retired pages or row remaps",
       "drain the node and reset the GPU (or reboot) to apply them, then rerun gpu.health"},
      {"gpu.pcie_degraded", Severity::Error, "a GPU's PCIe link runs below its maximum generation or width",
       "reseat the GPU/riser, check the slot and BIOS PCIe settings"},
      {"gpu.xid", Severity::Error, "the driver reported XID events during the campaign",
       "look the XID up in NVIDIA's XID catalog; most call for a GPU reset or RMA"},
      {"gpu.hang", Severity::Critical, "a GPU stopped making progress before the deadline",
       "drain the node, collect nvidia-bug-report, reset the GPU"},
      {"gpu.cuda", Severity::Error, "a CUDA call failed on a GPU",
       "read the error in the evidence; check the driver/CUDA install on that node"},
      {"campaign.error", Severity::Critical, "the campaign could not run to the end",
       "read the error; fix the cause (launcher, network, permissions) and rerun"},
  };
  return entries;
}

CatalogEntry lookup(const std::string& code) {
  for (const auto& e : catalog())
    if (e.code == code) return e;
  return {code, Severity::Error, "finding " + code, "see docs/findings.md"};
}

Finding make_finding(const std::string& code, const Entity& entity, const std::string& summary,
                     nlohmann::json evidence, double confidence) {
  const auto e = lookup(code);
  Finding f;
  f.code = code;
  f.severity = e.severity;
  f.entity = entity;
  f.summary = summary;
  f.next_step = e.next_step;
  f.confidence = confidence;
  f.evidence = std::move(evidence);
  return f;
}

}  // namespace kiln::coord
