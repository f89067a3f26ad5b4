// ib.ports: state, rate, width and error counters of every HCA port of the node, from sysfs.
//
// Params: sysfs_root (default /sys/class/infiniband, or env KILN_IB_SYSFS_ROOT; tests point it at a
// fixture tree), phase (free text copied into every result, e.g. "before"/"after" the campaign, so
// the coordinator can diff the two readings), window_s (when > 0, read twice this many seconds
// apart and fail a port whose error counters grew in between), expect_rate_gbps (fail a port whose
// rate is lower).
#include <thread>

#include "common/text.hpp"
#include "worker/check.hpp"
#include "worker/hw/ib_sysfs.hpp"

namespace kiln::worker::rdma {
namespace {

class IbPortsTest final : public Check {
 public:
  std::string key() const override { return "ib.ports"; }

  std::optional<std::string> applicable(const NodeInfo&) const override {
    if (list_ports(root_from({})).empty())
      return "no RDMA device: nothing under " + root_from({}).string();
    return std::nullopt;
  }

  void run(Context& ctx, ResultSink& sink) override {
    const auto root = root_from(ctx.params);
    const std::string phase = ctx.param<std::string>("phase", "snapshot");
    const double window_s = ctx.param<double>("window_s", 0.0);
    const double expect_rate = ctx.param<double>("expect_rate_gbps", 0.0);
    const auto before = list_ports(root);
    if (before.empty()) {
      Result r;
      r.metric = "port";
      r.status = Status::Skip;
      r.reason = "no RDMA device: nothing under " + root.string();
      sink.emit(r);
      return;
    }
    std::vector<PortInfo> after;
    if (window_s > 0) {
      if (window_s >= ctx.seconds_left()) throw std::invalid_argument("window_s must end before the deadline");
      std::this_thread::sleep_for(std::chrono::duration<double>(window_s));
      after = list_ports(root);
    }
    for (const auto& p : before) {
      Result r;
      r.entity = {"hca", ctx.node.host + "/" + p.id()};
      r.metric = "rate";
      r.value = p.rate_gbps;
      r.unit = "Gb/s";
      r.extra = {{"phase", phase},         {"state", p.state},       {"phys_state", p.phys_state},
                 {"width", p.width},       {"speed", p.speed},       {"link_layer", p.link_layer},
                 {"lid", p.lid},           {"counters", p.counters}};
      std::vector<std::string> problems;
      if (!p.active()) problems.push_back("port state " + p.state + " (" + p.phys_state + ")");
      if (expect_rate > 0 && p.rate_gbps < expect_rate)
        problems.push_back("rate " + short_number(p.rate_gbps) + " Gb/s below the expected " +
                           short_number(expect_rate) + " Gb/s");
      for (const auto& q : after) {
        if (q.device != p.device || q.port != p.port) continue;
        nlohmann::json grew = nlohmann::json::object();
        for (const auto& c : error_increases(p, q)) {
          grew[c.name] = c.delta();
          problems.push_back(c.name + " +" + std::to_string(c.delta()));
        }
        r.extra["window_s"] = window_s;
        r.extra["error_increase"] = grew;
      }
      if (!problems.empty()) {
        r.status = Status::Fail;
        for (const auto& s : problems) r.reason += (r.reason.empty() ? "" : "; ") + s;
      }
      sink.emit(std::move(r));
    }
  }

 private:
  static std::filesystem::path root_from(const nlohmann::json& params) {
    if (auto it = params.find("sysfs_root"); it != params.end()) return it->get<std::string>();
    return ib_root_from_env();
  }
};

KILN_REGISTER_CHECK(IbPortsTest);

}  // namespace
}  // namespace kiln::worker::rdma
