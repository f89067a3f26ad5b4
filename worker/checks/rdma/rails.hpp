// Rails and bandwidth arithmetic of the rdma.* pair tests. Pure functions, unit-tested without an
// HCA.
//
// A pair test drives every active port of both nodes at once. Port i of one side (in sorted
// device:port order, per link layer) is paired with port i of the other: on a rail-optimised
// fabric the same index is the same rail. Ports left over on the side with more are reported as
// unpaired rather than doubled up, so a missing port shows as a missing rail.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "worker/hw/ib_sysfs.hpp"

namespace kiln::worker::rdma {

struct Rail {
  int index = 0;
  PortInfo local;
  PortInfo peer;
  // The slower end bounds what the rail can carry.
  double line_rate_gbps() const { return std::min(local.rate_gbps, peer.rate_gbps); }
};

struct RailPlan {
  std::vector<Rail> rails;
  std::vector<PortInfo> unpaired_local;
  std::vector<PortInfo> unpaired_peer;
};

inline std::vector<PortInfo> active_ports(const std::vector<PortInfo>& ports) {
  std::vector<PortInfo> out;
  for (const auto& p : ports)
    if (p.active()) out.push_back(p);
  std::sort(out.begin(), out.end(), [](const PortInfo& a, const PortInfo& b) {
    if (a.link_layer != b.link_layer) return a.link_layer < b.link_layer;
    return a.device != b.device ? a.device < b.device : a.port < b.port;
  });
  return out;
}

// The ports a rank of a pair test drives, by its `device` parameter:
// - "nearest" (the default): the active ports of the HCA nearest the rank's GPU on the PCI tree
//   (`topo::nearest_hca`, NodeInfo::hca), when the node runs more than one rank; the only rank on
//   its node speaks for the node and drives every active port, and so does a rank with no known
//   nearest HCA (no GPU, sysfs gives no PCI place, or the HCA is not among `ports`);
// - "all": every active port;
// - a list "mlx5_0,mlx5_1:1": the active ports of those devices (dev) or ports (dev:port). A name
//   that matches no port of the node at all is an error (std::invalid_argument).
// The nearest HCA with no active port gives no port: its GPU's rail is down.
struct PortChoice {
  std::vector<PortInfo> ports;  // active, in active_ports order
  std::string how;              // said in the results: "nearest HCA mlx5_3 (to GPU 3)"
};

inline PortChoice choose_ports(const std::vector<PortInfo>& ports, const std::string& device,
                               const std::string& nearest_hca, int gpu, int local_size) {
  PortChoice c;
  const auto active = active_ports(ports);
  if (device == "all") {
    c.ports = active;
    c.how = "every active port (device=all)";
    return c;
  }
  if (device.empty() || device == "nearest") {
    bool known = false;
    for (const auto& p : ports) known = known || p.device == nearest_hca;
    if (!known || local_size <= 1) {
      c.ports = active;
      c.how = local_size <= 1 ? "every active port (the only rank on its node)"
                              : "every active port (no HCA is known to be nearest this rank's GPU)";
      return c;
    }
    for (const auto& p : active)
      if (p.device == nearest_hca) c.ports.push_back(p);
    c.how = "nearest HCA " + nearest_hca + " (to GPU " + std::to_string(gpu) + ")";
    return c;
  }
  std::vector<std::string> names;
  for (std::size_t start = 0; start <= device.size();) {
    const auto comma = std::min(device.find(',', start), device.size());
    if (comma > start) names.push_back(device.substr(start, comma - start));
    start = comma + 1;
  }
  if (names.empty()) throw std::invalid_argument("device: no HCA named");
  auto matches = [](const PortInfo& p, const std::string& n) { return n == p.device || n == p.id(); };
  for (const auto& n : names) {
    bool known = false;
    for (const auto& p : ports) known = known || matches(p, n);
    if (!known) throw std::invalid_argument("device: the node has no HCA port '" + n + "'");
  }
  for (const auto& p : active)
    for (const auto& n : names)
      if (matches(p, n)) {
        c.ports.push_back(p);
        break;
      }
  c.how = "device=" + device;
  return c;
}

// Both sides call this with (own ports, peer's ports) and get mirrored plans: rail i joins the
// i-th active port of each side within the same link layer.
inline RailPlan plan_rails(const std::vector<PortInfo>& local_ports, const std::vector<PortInfo>& peer_ports) {
  const auto local = active_ports(local_ports);
  const auto peer = active_ports(peer_ports);
  RailPlan plan;
  std::size_t i = 0, j = 0;
  while (i < local.size() || j < peer.size()) {
    if (i < local.size() && j < peer.size() && local[i].link_layer == peer[j].link_layer) {
      plan.rails.push_back({static_cast<int>(plan.rails.size()), local[i++], peer[j++]});
    } else if (j >= peer.size() || (i < local.size() && local[i].link_layer < peer[j].link_layer)) {
      plan.unpaired_local.push_back(local[i++]);
    } else {
      plan.unpaired_peer.push_back(peer[j++]);
    }
  }
  return plan;
}

// Bytes over seconds in Gb/s (1e9 bits), the unit HCA rates are given in.
inline double gbits_per_s(std::uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) * 8.0 / 1e9 / seconds : 0.0;
}

// Fraction of the rail's signalling rate achieved. The usable data rate is below the signalling
// rate (encoding and headers: 64b/66b on EDR and later), so 0.9 or so is a good rail.
inline double rail_efficiency(double measured_gbps, double line_rate_gbps) {
  return line_rate_gbps > 0 ? measured_gbps / line_rate_gbps : 0.0;
}

// Messages in flight per QP so a rail stays busy: enough posted work to cover the bandwidth-delay
// product, capped by the queue depth the device allows.
inline int messages_in_flight(std::size_t message_bytes, double line_rate_gbps, double rtt_us, int max_depth) {
  if (message_bytes == 0 || max_depth <= 0) return 1;
  const double bdp_bytes = line_rate_gbps * 1e9 / 8.0 * rtt_us * 1e-6;
  const int need = static_cast<int>(bdp_bytes / static_cast<double>(message_bytes)) + 2;
  return std::max(1, std::min(max_depth, need));
}

}  // namespace kiln::worker::rdma
