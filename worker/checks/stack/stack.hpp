// What the stack checks (stack.versions, stack.pci, stack.system) share: the root every path is
// read under, and how a result for one part of a check is made.
#pragma once

#include <filesystem>
#include <string>

#include "worker/check.hpp"
#include "worker/hw/pci_sysfs.hpp"

namespace kiln::worker::stack {

// The `root` parameter when given, else env KILN_SYSFS_ROOT, else "/".
inline std::filesystem::path root_of(const Context& ctx) {
  if (auto it = ctx.params.find("root"); it != ctx.params.end() && it->is_string()) return it->get<std::string>();
  return pci::root_from_env();
}

inline Result part(const Entity& e, std::string metric, double value = 1) {
  Result r;
  r.entity = e;
  r.metric = std::move(metric);
  r.value = value;
  return r;
}

inline Result skipped(const Entity& e, std::string metric, std::string reason) {
  Result r = part(e, std::move(metric), 0);
  r.status = Status::Skip;
  r.reason = std::move(reason);
  return r;
}

inline void fail(Result& r, const std::string& why) {
  r.status = Status::Fail;
  r.reason += (r.reason.empty() ? "" : "; ") + why;
}

}  // namespace kiln::worker::stack
