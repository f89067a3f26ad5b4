// Internal to expect*.cpp, not part of the API: the hardware and software comparisons of a node
// against its class (expect_hardware.cpp), which judge_expectations (expect.cpp) calls per node.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/hca_port.hpp"
#include "coordinator/analysis/expect.hpp"

namespace kiln::analysis::expect_detail {

// What one GPU's gpu.health record says of its hardware (NVML): total memory and the PCIe link's
// maximum generation and width (the current ones drop at idle, so they are not compared).
struct GpuHardware {
  Entity gpu;
  std::optional<double> memory_gib;
  std::optional<int> pcie_gen, pcie_width;
  std::optional<int> nvlinks;  // NVLink links up; none when gpu.health could not read them
  nlohmann::json nvlinks_inactive;
  std::string nvlink_error;
};

// One HCA port's rate over the plan's ib.ports readings: the lowest an ACTIVE reading gave, kept
// while every reading was ACTIVE (the count of HCAs is Reported::hcas).
struct HcaPort {
  bool active = true;
  std::optional<double> rate_gbps;
};

// What the node's records say beyond NodeInfo: the driver (gpu.health), the kernel and rdma-core
// (host.inventory), each GPU's hardware (gpu.health) and each HCA port (ib.ports).
struct Reported {
  std::string driver, kernel, rdma_core;
  std::vector<GpuHardware> gpus;
  std::map<std::string, HcaPort> ports;  // by entity id, host/dev:port
  HcaCount hcas;                         // the node's HCAs with an ACTIVE port (common/hca_port.hpp)
};

// What each host's records say, by host.
std::map<std::string, Reported> reported(const std::vector<RoundRecord>& rounds);

// Every hardware and software finding for node n of class c: NodeInfo against the class, then the
// driver, kernel and rdma-core versions, each GPU's memory and PCIe link, NVLink, HCA ports.
void node_findings(const Expectations& e, const NodeSeen& n, const spec::NodeClass& c, const Reported& rep,
                   std::vector<Finding>& out);

}  // namespace kiln::analysis::expect_detail
