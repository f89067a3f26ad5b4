// rdma.write_bw: RDMA WRITE bandwidth between the pair on all its rails at once (RC QPs, host or GPU memory)
#include "worker/checks/rdma/pair_test.hpp"

namespace kiln::worker::rdma {
namespace {

class WriteBwTest final : public PairTest {
 public:
  std::string key() const override { return "rdma.write_bw"; }
  RdmaOp op() const override { return RdmaOp::Write; }
};

KILN_REGISTER_CHECK(WriteBwTest);

}  // namespace
}  // namespace kiln::worker::rdma
