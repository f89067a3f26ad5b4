// stack.pci: the PCIe links of the node's GPUs and HCAs (current width and speed against the
// maximum), their Max_Read_Request_Size, and ACS on every bridge above them: ACS redirection sends
// GPU-to-GPU and GPU-to-HCA peer traffic up through the root complex, which GPUDirect does not
// want. Config space is parsed from the sysfs `config` files (worker/hw/pci_config.hpp); without
// root only their header is readable, and those parts SKIP saying so.
#include <map>

#include "worker/checks/stack/stack.hpp"
#include "worker/hw/pci_config.hpp"

namespace kiln::worker::stack {
namespace {

constexpr const char* kUnreadable = "config space not readable (run as root)";

std::string label(const pci::Function& f) { return std::string(f.gpu() ? "GPU " : "HCA ") + f.name; }

Result link_result(const std::string& host, const pci::Function& f) {
  Result r = part({f.gpu() ? "gpu" : "hca", host + "/" + f.name}, "link_width", f.cur_width);
  const int gen = pci::pcie_gen(f.cur_speed), max_gen = pci::pcie_gen(f.max_speed);
  r.extra = {{"pci", f.name},           {"width", f.cur_width}, {"max_width", f.max_width},
             {"speed", f.cur_speed},    {"max_speed", f.max_speed}, {"gen", gen},
             {"max_gen", max_gen},      {"numa_node", f.numa_node}};
  if (f.cur_width > 0 && f.cur_width < f.max_width)
    fail(r, label(f) + " link x" + std::to_string(f.cur_width) + " of x" + std::to_string(f.max_width));
  if (gen > 0 && gen < max_gen)
    fail(r, label(f) + " link gen" + std::to_string(gen) + " of gen" + std::to_string(max_gen) + " (" + f.cur_speed +
                " of " + f.max_speed + ")");
  const auto cfg = pci::read_config(f.dir / "config");
  if (const auto mrrs = pci::max_read_request(cfg)) r.extra["max_read_request"] = *mrrs;
  if (const auto mps = pci::max_payload(cfg)) r.extra["max_payload"] = *mps;
  if (!cfg.readable()) r.extra["config"] = kUnreadable;
  return r;
}

Result mrrs_result(const std::string& host, const pci::Function& f, int min_mrrs) {
  const Entity e{f.gpu() ? "gpu" : "hca", host + "/" + f.name};
  const auto cfg = pci::read_config(f.dir / "config");
  if (!cfg.readable()) return skipped(e, "max_read_request", kUnreadable);
  const auto mrrs = pci::max_read_request(cfg);
  if (!mrrs) return skipped(e, "max_read_request", label(f) + " has no PCI Express capability");
  Result r = part(e, "max_read_request", *mrrs);
  r.unit = "B";
  if (*mrrs < min_mrrs)
    fail(r, label(f) + " MaxReadReq " + std::to_string(*mrrs) + " B below " + std::to_string(min_mrrs) + " B");
  return r;
}

Result acs_result(const std::string& host, const pci::Function& bridge, const std::string& below) {
  const Entity e{"bridge", host + "/" + bridge.name};
  const auto cfg = pci::read_config(bridge.dir / "config");
  if (!cfg.readable()) return skipped(e, "acs", kUnreadable);
  const auto ctl = pci::acs_control(cfg);
  Result r = part(e, "acs", ctl ? *ctl : 0);
  r.extra = {{"below", below}, {"acs_capability", ctl.has_value()}};
  if (!ctl) return r;
  const auto on = pci::acs_redirecting(*ctl);
  r.extra["acs_control"] = *ctl;
  r.extra["redirecting"] = on;
  if (on.empty()) return r;
  // A root port's ACS only acts on traffic that already crosses the root complex (devices under
  // different root ports); on a switch port it turns peer-to-peer under the switch into a detour.
  if (pci::port_type(cfg) == pci::kPortRoot) {
    r.extra["note"] = "ACS on at root port " + bridge.name + " (" + on + "): affects only traffic between root ports";
    return r;
  }
  fail(r, "ACS on at bridge " + bridge.name + " (" + on + "): peer-to-peer goes through the root complex");
  return r;
}

class StackPci final : public Check {
 public:
  std::string key() const override { return "stack.pci"; }

  void run(Context& ctx, ResultSink& sink) override {
    const auto& host = ctx.node.host;
    const int min_mrrs = ctx.param<int>("min_max_read_request", 0);
    const auto all = pci::list_functions(root_of(ctx));
    std::map<std::string, pci::Function> bridges;  // each bridge once, with the devices below it
    std::map<std::string, std::string> below;
    bool gpus = false, hcas = false;
    for (const auto& f : all) {
      if (!f.gpu() && !f.hca()) continue;
      (f.gpu() ? gpus : hcas) = true;
      sink.emit(link_result(host, f));
      sink.emit(mrrs_result(host, f, min_mrrs));
      for (const auto& b : pci::bridges_above(f)) {
        bridges.emplace(b.name, b);
        below[b.name] += (below[b.name].empty() ? "" : ",") + f.name;
      }
    }
    const Entity node{"node", host};
    if (!gpus) sink.emit(skipped(node, "link_width", "no GPU on the PCI bus"));
    if (!hcas) sink.emit(skipped(node, "link_width", "no HCA on the PCI bus"));
    if ((gpus || hcas) && bridges.empty())
      sink.emit(skipped(node, "acs", "no PCI bridge above the GPUs and HCAs (attached to the root complex)"));
    for (const auto& [name, b] : bridges) sink.emit(acs_result(host, b, below[name]));
  }
};

KILN_REGISTER_CHECK(StackPci);

}  // namespace
}  // namespace kiln::worker::stack
