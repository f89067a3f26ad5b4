// The shared harness of the rdma.* pair tests. A group of two is one pair; a larger group meets in
// disjoint pairs, `partners` pairings one after another (worker/pair_runner.hpp). Each member lists the active HCA
// ports it drives (by default those of the HCA nearest its GPU, see choose_ports in rails.hpp),
// the two swap the lists over MPI and pair them into rails (rails.hpp); on every rail an RC
// queue pair is connected (details swapped over MPI), and the test's operation runs on all rails
// at once from group rank 0 (bandwidth) or rail by rail (latency). Completion queues are polled
// against the round's deadline.
//
// Params: memory ("host" | "cuda"), message_bytes (default 1 MiB for bandwidth, 8 for latency),
// iters (per rail), depth (work requests in flight per rail), gid_index (RoCE; default 0),
// device ("nearest" (default): the HCA nearest the rank's GPU; "all": every active port; or a
// comma-separated list of devices or device:port), sysfs_root (as ib.ports), partners (pairings
// in a group of more than two, as net.pair_bw).
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

 private:
  // One pair: ports, rails, queue pairs, the operation, group rank 0's results.
  void run_pair(Context& ctx, ResultSink& sink);
};

}  // namespace kiln::worker::rdma
