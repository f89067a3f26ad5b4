// One ib.ports result read back as the port it names: entity "host/device:port" (kind "hca") and
// extra.state. The campaign's hardware expectations (coordinator expect_hardware.cpp) and the
// health check's HCA count (worker/health/run.cpp) both count HCAs with an ACTIVE port from these.
#pragma once

#include <optional>
#include <string>

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

}  // namespace kiln
