// nccl.sendrecv: pairwise send/recv around the group's ring (rank r sends to r+1 and receives from
// r-1 at the same time), so every neighbouring pair of the group carries traffic both ways.
#include "worker/checks/nccl/harness.hpp"

namespace kiln::worker::nccl {
namespace {

class SendRecvTest final : public CollectiveTest {
 public:
  std::string key() const override { return "nccl.sendrecv"; }
  Coll coll() const override { return Coll::SendRecv; }
  bool supports_in_place() const override { return false; }
  bool blocking_ops() const override { return false; }
#if KILN_HAVE_NCCL
  ncclResult_t enqueue(const Launch& l) const override {
    const int to = (l.rank + 1) % l.nranks;
    const int from = (l.rank - 1 + l.nranks) % l.nranks;
    ncclResult_t r = ncclGroupStart();
    if (r != ncclSuccess) return r;
    ncclResult_t rs = ncclSend(l.send, l.count, ncclFloat, to, l.comm, l.stream);
    ncclResult_t rr = ncclRecv(l.recv, l.count, ncclFloat, from, l.comm, l.stream);
    r = ncclGroupEnd();  // always close the group, then report the first problem
    if (rs != ncclSuccess && rs != ncclInProgress) return rs;
    if (rr != ncclSuccess && rr != ncclInProgress) return rr;
    return r;
  }
#endif
};

KILN_REGISTER_CHECK(SendRecvTest);

}  // namespace
}  // namespace kiln::worker::nccl
