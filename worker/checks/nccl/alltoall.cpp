// nccl.alltoall: NCCL all-to-all sweep over the group's GPUs (every pair carries traffic): busbw = algbw * (n-1)/n
#include "worker/checks/nccl/harness.hpp"

namespace kiln::worker::nccl {
namespace {

class AllToAllTest final : public CollectiveTest {
 public:
  std::string key() const override { return "nccl.alltoall"; }
  Coll coll() const override { return Coll::AllToAll; }
  bool supports_in_place() const override { return false; }
  bool blocking_ops() const override { return false; }
#if KILN_HAVE_NCCL
  ncclResult_t enqueue(const Launch& l) const override {
    return ncclAlltoAll(l.send, l.recv, l.count, ncclFloat, l.comm, l.stream);
  }
#endif
};

KILN_REGISTER_CHECK(AllToAllTest);

}  // namespace
}  // namespace kiln::worker::nccl
