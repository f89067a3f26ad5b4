// stack.system: the node settings RDMA and GPUDirect depend on. The IOMMU (translated DMA for a
// GPU or HCA costs bandwidth; iommu=pt or no IOMMU is what GPUDirect wants), the NUMA node of each
// GPU against its nearest HCA (worker/hw/pci_topology.hpp pairs them), the locked-memory limit
// (memory registration needs it unlimited), and on NVSwitch systems the fabric manager, without
// which the GPUs cannot use NVLink.
#include <fstream>
#include <regex>
#include <sstream>

#include "worker/checks/stack/stack.hpp"
#include "worker/hw/pci_topology.hpp"

namespace kiln::worker::stack {
namespace {

namespace fs = std::filesystem;

// The kernel command line's IOMMU switches (iommu=, intel_iommu=, amd_iommu=).
std::string iommu_cmdline(const fs::path& root) {
  const std::string line = pci::read_line(root / "proc/cmdline");
  static const std::regex flag(R"((^|\s)((intel_|amd_)?iommu=\S+))");
  std::string out;
  for (std::sregex_iterator it(line.begin(), line.end(), flag), end; it != end; ++it)
    out += (out.empty() ? "" : " ") + (*it)[2].str();
  return out;
}

Result iommu_result(const std::string& host, const fs::path& root, const std::vector<pci::Function>& devs) {
  Result r = part({"node", host}, "iommu");
  std::error_code ec;
  const bool present = fs::exists(root / "sys/class/iommu", ec) && !fs::is_empty(root / "sys/class/iommu", ec);
  r.extra = {{"iommu_present", present}, {"cmdline", iommu_cmdline(root)}};
  nlohmann::json types = nlohmann::json::object();
  for (const auto& f : devs) {
    const auto type = pci::read_line(f.dir / "iommu_group/type");
    if (type.empty()) continue;
    types[f.name] = type;
    if (type == "DMA" || type == "DMA-FQ")
      fail(r, (f.gpu() ? "GPU " : "HCA ") + f.name + " behind a translating IOMMU (group type " + type +
                  "): boot with iommu=pt");
  }
  r.extra["group_types"] = types;
  r.value = present ? 1 : 0;
  return r;
}

void numa_results(const std::string& host, const std::vector<pci::Function>& devs, ResultSink& sink) {
  std::vector<topo::PciPlace> hcas;
  for (const auto& f : devs)
    if (f.hca()) hcas.push_back({f.name, f.dir.string(), f.numa_node});
  bool any_gpu = false;
  for (const auto& g : devs) {
    if (!g.gpu()) continue;
    any_gpu = true;
    const Entity e{"gpu", host + "/" + g.name};
    const auto n = topo::nearest({g.name, g.dir.string(), g.numa_node}, hcas);
    if (!n) {
      sink.emit(skipped(e, "numa", "no HCA on the PCI bus"));
      continue;
    }
    const auto& h = hcas[n->index];
    Result r = part(e, "numa", g.numa_node);
    r.extra = {{"gpu_numa", g.numa_node}, {"hca", h.name}, {"hca_numa", h.numa_node}, {"by", n->by}};
    if (g.numa_node >= 0 && h.numa_node >= 0 && g.numa_node != h.numa_node)
      fail(r, "GPU " + g.name + " on NUMA node " + std::to_string(g.numa_node) + ", its nearest HCA " + h.name +
                  " on NUMA node " + std::to_string(h.numa_node));
    sink.emit(std::move(r));
  }
  if (!any_gpu) sink.emit(skipped({"node", host}, "numa", "no GPU on the PCI bus"));
}

// /proc/self/limits is the kernel's text of this process's rlimits (getrlimit's values); a recorded
// tree carries the recording shell's.
Result memlock_result(const std::string& host, const fs::path& root) {
  std::ifstream in(root / "proc/self/limits");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Max locked memory", 0) != 0) continue;
    std::istringstream words(line.substr(17));
    std::string soft;
    words >> soft;
    const bool unlimited = soft == "unlimited";
    Result r = part({"node", host}, "memlock", unlimited ? -1 : std::stod(soft));
    r.unit = "B";
    r.extra = {{"limit", soft}};
    if (!unlimited) fail(r, "locked-memory limit " + soft + " bytes (ulimit -l): RDMA memory registration needs unlimited");
    return r;
  }
  return skipped({"node", host}, "memlock", "no locked-memory limit in /proc/self/limits");
}

bool fabric_manager_running(const fs::path& root) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(root / "proc", ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (pci::read_line(it->path() / "comm").rfind("nv-fabricmanage", 0) == 0) return true;  // comm keeps 15 chars
  return false;
}

Result fabric_result(const std::string& host, const fs::path& root, const std::vector<pci::Function>& devs) {
  int switches = 0;
  for (const auto& f : devs) switches += f.nvswitch() ? 1 : 0;
  const Entity node{"node", host};
  if (switches == 0) return skipped(node, "fabricmanager", "no NVSwitch");
  const bool running = fabric_manager_running(root);
  Result r = part(node, "fabricmanager", running ? 1 : 0);
  r.extra = {{"nvswitches", switches}, {"running", running}};
  if (!running)
    fail(r, std::to_string(switches) + " NVSwitch but no nv-fabricmanager process: start nvidia-fabricmanager");
  return r;
}

class StackSystem final : public Check {
 public:
  std::string key() const override { return "stack.system"; }

  void run(Context& ctx, ResultSink& sink) override {
    const auto root = root_of(ctx);
    const auto& host = ctx.node.host;
    const auto devs = pci::list_functions(root);
    sink.emit(iommu_result(host, root, devs));
    numa_results(host, devs, sink);
    sink.emit(memlock_result(host, root));
    sink.emit(fabric_result(host, root, devs));
  }
};

KILN_REGISTER_CHECK(StackSystem);

}  // namespace
}  // namespace kiln::worker::stack
