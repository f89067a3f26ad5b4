// The shared harness of the rdma.* pair tests (groups of two). Each member lists its active HCA
// ports, the two swap the lists over MPI and pair them into rails (rails.hpp); on every rail an RC
// queue pair is connected (details swapped over MPI), and the test's operation runs on all rails
// at once from group rank 0 (bandwidth) or rail by rail (latency). Completion queues are polled
// against the round's deadline.
//
// Params: memory ("host" | "cuda"), message_bytes (default 1 MiB for bandwidth, 8 for latency),
// iters (per rail), depth (work requests in flight per rail), gid_index (RoCE; default 0),
// ib_port_filter (comma-separated device:port list to use instead of every active port),
// sysfs_root (as ib.ports).
#pragma once

#include <optional>
#include <string>

#include "worker/check.hpp"

namespace kiln::worker::rdma {

enum class RdmaOp { Write, Read, SendLatency };

class PairTest : public Check {
 public:
  std::optional<std::string> applicable(const NodeInfo& node) const override;
  void run(Context& ctx, ResultSink& sink) override;
  virtual RdmaOp op() const = 0;
};

}  // namespace kiln::worker::rdma
