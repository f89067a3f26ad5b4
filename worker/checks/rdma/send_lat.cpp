// rdma.send_lat: RDMA SEND/RECV ping-pong latency between the pair, rail by rail (half the round trip)
#include "worker/checks/rdma/pair_test.hpp"

namespace kiln::worker::rdma {
namespace {

class SendLatTest final : public PairTest {
 public:
  std::string key() const override { return "rdma.send_lat"; }
  RdmaOp op() const override { return RdmaOp::SendLatency; }
};

KILN_REGISTER_CHECK(SendLatTest);

}  // namespace
}  // namespace kiln::worker::rdma
