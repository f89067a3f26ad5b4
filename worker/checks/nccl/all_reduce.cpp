// nccl.all_reduce: NCCL all-reduce (float sum) sweep over the group's GPUs: time, algbw, busbw = algbw * 2(n-1)/n
#include "worker/checks/nccl/harness.hpp"

namespace kiln::worker::nccl {
namespace {

class AllReduceTest final : public CollectiveTest {
 public:
  std::string key() const override { return "nccl.all_reduce"; }
  Coll coll() const override { return Coll::AllReduce; }
#if KILN_HAVE_NCCL
  ncclResult_t enqueue(const Launch& l) const override {
    return ncclAllReduce(l.send, l.recv, l.count, ncclFloat, ncclSum, l.comm, l.stream);
  }
#endif
};

KILN_REGISTER_CHECK(AllReduceTest);

}  // namespace
}  // namespace kiln::worker::nccl
