// One ib.ports result read back as the port it names: entity "host/device:port" (kind "hca") and
// extra.state; and the HCA count that the campaign's hardware expectations (coordinator
// expect_hardware.cpp) and the health check (worker/health/run.cpp) both hold a node to.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/types.hpp"

namespace kiln {

struct HcaPort {
  std::string port;    // "device:port"
  std::string device;  // "device"
  std::string state;   // extra.state as reported ("ACTIVE", "DOWN", ...); empty when absent
  bool active() const { return state == "ACTIVE"; }
};

// nullopt for a result that is not an HCA port's.
inline std::optional<HcaPort> hca_port(const Result& r) {
  if (r.entity.kind != "hca") return std::nullopt;
  const auto slash = r.entity.id.find('/');
  HcaPort p;
  p.port = r.entity.id.substr(slash == std::string::npos ? 0 : slash + 1);
  p.device = p.port.substr(0, p.port.rfind(':'));
  const auto it = r.extra.find("state");
  if (it != r.extra.end() && it->is_string()) p.state = it->get<std::string>();
  return p;
}

// A node's HCAs over its ib.ports readings: a port is ACTIVE when every reading of it said so, and a
// device counts when one of its ports is ACTIVE. A reading is a result that passed or failed (an
// error or a skip read no port). Written once: the two callers counted apart, and a port ACTIVE
// before the checks and DOWN after counted for the health check but not for the campaign.
class HcaCount {
 public:
  // Adds r when it is a reading of an HCA port; false, and nothing added, otherwise.
  bool add(const Result& r) {
    const auto p = hca_port(r);
    if (!p || (r.status != Status::Pass && r.status != Status::Fail)) return false;
    auto& port = ports_.try_emplace(p->port, Port{p->device, ""}).first->second;
    if (!p->active()) port.not_active = p->state.empty() ? "unknown" : p->state;
    return true;
  }
  // Devices with an ACTIVE port.
  std::set<std::string> active() const {
    std::set<std::string> out;
    for (const auto& [port, p] : ports_)
      if (p.not_active.empty()) out.insert(p.device);
    return out;
  }
  // "device:port STATE" for each port that is not ACTIVE (its last reading that was not), by port.
  std::vector<std::string> inactive() const {
    std::vector<std::string> out;
    for (const auto& [port, p] : ports_)
      if (!p.not_active.empty()) out.push_back(port + " " + p.not_active);
    return out;
  }
  bool empty() const { return ports_.empty(); }

 private:
  struct Port {
    std::string device;
    std::string not_active;  // the last state read that was not ACTIVE; empty while every one was
  };
  std::map<std::string, Port> ports_;  // by "device:port"
};

}  // namespace kiln
