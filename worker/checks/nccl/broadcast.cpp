// nccl.broadcast: NCCL broadcast sweep from the group's root rank: busbw = algbw
#include "worker/checks/nccl/harness.hpp"

namespace kiln::worker::nccl {
namespace {

class BroadcastTest final : public CollectiveTest {
 public:
  std::string key() const override { return "nccl.broadcast"; }
  Coll coll() const override { return Coll::Broadcast; }
#if KILN_HAVE_NCCL
  ncclResult_t enqueue(const Launch& l) const override {
    return ncclBroadcast(l.send, l.recv, l.count, ncclFloat, l.root, l.comm, l.stream);
  }
#endif
};

KILN_REGISTER_CHECK(BroadcastTest);

}  // namespace
}  // namespace kiln::worker::nccl
