#include "worker/checks/gpu/common.hpp"

namespace kiln::worker::gpu {

Entity gpu_entity(const std::string& host, int index) {
  return {"gpu", host + "/gpu" + std::to_string(index)};
}

Entity node_entity(const std::string& host) { return {"node", host}; }

Entity link_entity(const std::string& host, int src, int dst) {
  return {"nvlink", host + "/gpu" + std::to_string(src) + "->" + host + "/gpu" + std::to_string(dst)};
}

Result make_result(const std::string& test, Entity entity, std::string metric, double value,
                   std::string unit, Status status, std::string reason) {
  Result r;
  r.test = test;
  r.entity = std::move(entity);
  r.metric = std::move(metric);
  r.value = value;
  r.unit = std::move(unit);
  r.status = status;
  r.reason = std::move(reason);
  return r;
}

std::optional<std::string> cuda_skip_reason(const NodeInfo& node) {
#if !KILN_HAVE_CUDA
  (void)node;
  return std::string("built without CUDA");
#else
  if (node.gpu_count > 0) return std::nullopt;
  return node.gpu_skip_reason.empty() ? std::string("no GPU visible to CUDA")
                                      : node.gpu_skip_reason;
#endif
}

}  // namespace kiln::worker::gpu
