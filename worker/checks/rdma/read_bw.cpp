// rdma.read_bw: RDMA READ bandwidth between the pair on all its rails at once (RC QPs, host or GPU memory)
#include "worker/checks/rdma/pair_test.hpp"

namespace kiln::worker::rdma {
namespace {

class ReadBwTest final : public PairTest {
 public:
  std::string key() const override { return "rdma.read_bw"; }
  RdmaOp op() const override { return RdmaOp::Read; }
};

KILN_REGISTER_CHECK(ReadBwTest);

}  // namespace
}  // namespace kiln::worker::rdma
