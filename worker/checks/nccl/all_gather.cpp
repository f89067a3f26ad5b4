// nccl.all_gather: NCCL all-gather sweep over the group's GPUs: busbw = algbw * (n-1)/n
#include "worker/checks/nccl/harness.hpp"

namespace kiln::worker::nccl {
namespace {

class AllGatherTest final : public CollectiveTest {
 public:
  std::string key() const override { return "nccl.all_gather"; }
  Coll coll() const override { return Coll::AllGather; }
#if KILN_HAVE_NCCL
  ncclResult_t enqueue(const Launch& l) const override {
    return ncclAllGather(l.send, l.recv, l.count, ncclFloat, l.comm, l.stream);
  }
#endif
};

KILN_REGISTER_CHECK(AllGatherTest);

}  // namespace
}  // namespace kiln::worker::nccl
