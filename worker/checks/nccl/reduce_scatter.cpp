// nccl.reduce_scatter: NCCL reduce-scatter (float sum) sweep over the group's GPUs: busbw = algbw * (n-1)/n
#include "worker/checks/nccl/harness.hpp"

namespace kiln::worker::nccl {
namespace {

class ReduceScatterTest final : public CollectiveTest {
 public:
  std::string key() const override { return "nccl.reduce_scatter"; }
  Coll coll() const override { return Coll::ReduceScatter; }
#if KILN_HAVE_NCCL
  ncclResult_t enqueue(const Launch& l) const override {
    return ncclReduceScatter(l.send, l.recv, l.count, ncclFloat, ncclSum, l.comm, l.stream);
  }
#endif
};

KILN_REGISTER_CHECK(ReduceScatterTest);

}  // namespace
}  // namespace kiln::worker::nccl
