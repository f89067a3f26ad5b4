#include "worker/checks/gpu/gpu_check.hpp"

namespace kiln::worker::gpu {

void report_failure(Result& r, const GpuFailure& f) {
  r.value = 0;
  r.status = f.hardware ? Status::Fail : Status::Error;
  r.reason = f.error;
  r.problems.push_back({f.hardware ? Code::GpuLost : Code::GpuCuda, f.error});
}

std::string GpuCheck::skip_metric() const {
  const std::string k = key();
  return k.substr(k.find('.') + 1);
}

void GpuCheck::run(Context& ctx, ResultSink& raw_sink) {
  LockedSink sink(raw_sink);
#if !KILN_HAVE_CUDA
  if (needs_cuda()) {
    sink.emit(make_result(key(), {}, skip_metric(), 0, "", Status::Skip, "built without CUDA"));
    return;
  }
#endif
  NodeGpus node;
  node.host = ctx.node.host;
  if (has_drills()) node.drill = parse_drill(ctx.faults.spec, key(), node.host);
  node.lib = nvml::shared(&node.nvml_why);
  if (node.lib && watches_xids()) nvml::XidWatcher::instance().start(node.lib, nullptr);
#if KILN_HAVE_CUDA
  node.list = list_gpus(node.lib.get());
  if (needs_cuda() && node.list.empty()) {
    sink.emit(make_result(key(), node_entity(node.host), skip_metric(), 0, "", Status::Skip,
                          "no GPU visible to CUDA"));
    return;
  }
#endif
  measure(ctx, sink, node);
}

}  // namespace kiln::worker::gpu
