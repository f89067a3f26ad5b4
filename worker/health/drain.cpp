#include "worker/health/drain.hpp"

#include <unistd.h>

#include <cstdlib>

namespace kiln::worker::health {

std::string slurm_node_name() {
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) return n;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string name = host;
  return name.substr(0, name.find('.'));
}

std::string drain_on_fault(slurm::SlurmClient& client, const std::string& node, const Verdict& v) {
  if (v.exit_code != kFault)
    return "kiln-health: not draining " + node + ": " + (v.exit_code == kHealthy ? "healthy" : "the check could not run");
  const std::string reason = drain_reason(v);
  client.drain({node}, reason);
  return "kiln-health: drained " + node + ": scontrol update NodeName=" + node + " State=DRAIN Reason=\"" + reason + "\"";
}

std::string resume_on_pass(slurm::SlurmClient& client, const std::string& node, const Verdict& v) {
  if (v.exit_code != kHealthy) return "";
  const auto info = client.node(node);
  if (!info) return "kiln-health: not resuming " + node + ": SLURM does not know it";
  if (!info->drained()) return "";
  if (!is_own_reason(info->reason))
    return "kiln-health: " + node + " stays drained: its reason is not kiln-health's (" + sanitize_reason(info->reason) + ")";
  client.resume({node});
  return "kiln-health: resumed " + node + " (was drained: " + sanitize_reason(info->reason) + ")";
}

}  // namespace kiln::worker::health
