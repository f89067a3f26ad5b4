// The shared harness of the nccl.* group tests. A collective's file says only which collective it
// is and how to enqueue one operation; the harness does the rest the same way for all of them:
// one non-blocking NCCL communicator per group (its id sent over the group's MPI communicator),
// one GPU per rank, the size ladder in and out of place, warm-up, timing as nccl-tests times,
// the optional data check, and the deadline (abort and attribution of a hung group).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "worker/check.hpp"
#include "worker/checks/nccl/sweep.hpp"

#if KILN_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif

namespace kiln::worker::nccl {

#if KILN_HAVE_NCCL
// One operation, with the buffers already offset for this iteration and placement.
struct Launch {
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0;  // Shape::count
  int rank = 0;           // rank in the NCCL communicator (= group rank)
  int nranks = 1;
  int root = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};
#endif

class CollectiveTest : public Check {
 public:
  std::optional<std::string> applicable(const NodeInfo& node) const override;
  void run(Context& ctx, ResultSink& sink) override;

  virtual Coll coll() const = 0;
  // False where NCCL defines no in-place form (all-to-all, send/recv): those lines are left out.
  virtual bool supports_in_place() const { return true; }
  // False where NCCL connects peers inside the call on first use (send/recv, all-to-all): those
  // run on the non-blocking communicator so that a missing peer cannot block the host thread.
  virtual bool blocking_ops() const { return true; }
#if KILN_HAVE_NCCL
  // Enqueues one operation of the collective on l.stream (may return ncclInProgress, the harness
  // waits for the communicator then).
  virtual ncclResult_t enqueue(const Launch& l) const = 0;
#endif
};

}  // namespace kiln::worker::nccl
