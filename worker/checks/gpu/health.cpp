// gpu.health: inventory and health of every GPU of the node, read through NVML (loaded at run
// time) and probed through CUDA. Count and model against the spec, driver, ECC mode and counts,
// retired pages, row remapping, PCIe link, NVLink links, clocks, power limit, throttle reasons,
// persistence and MIG mode, the HCA nearest each GPU (PCI topology), and the XID events seen since
// the worker started. Read-only: it changes no setting.
#include <cstdlib>
#include <sstream>

#include "worker/checks/gpu/gpu_check.hpp"
#include "worker/hw/cuda_util.hpp"
#include "worker/hw/ib_sysfs.hpp"
#include "worker/hw/nvml.hpp"
#include "worker/hw/pci_topology.hpp"

namespace kiln::worker::gpu {
namespace {

using nlohmann::json;

constexpr const char* kKey = "gpu.health";

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Collects one GPU's problems; each carries a findings-catalog code (docs/gpu-tests.md).
struct Problems {
  std::vector<Problem> list;
  void add(Code code, const std::string& what) { list.push_back({code, what}); }
  std::string reason() const {
    std::string r;
    for (const auto& p : list) r += (r.empty() ? "" : "; ") + p.what;
    return r;
  }
};

// Name, identifiers and the model against the spec. False when the GPU is lost.
bool read_identity(const nvml::Lib& lib, nvml::Device d, const Context& ctx, json& f, Problems& p) {
  std::string s;
  int rc = lib.name(d, &s);
  if (rc == nvml::kErrGpuIsLost) {
    p.add(Code::GpuLost, "GPU has fallen off the bus (NVML: " + lib.error(rc) + ")");
    return false;
  }
  f["name"] = s;
  if (lib.uuid(d, &s) == nvml::kSuccess) f["uuid"] = s;
  if (lib.serial(d, &s) == nvml::kSuccess) f["serial"] = s;
  if (lib.bus_id(d, &s) == nvml::kSuccess) f["pci_bus_id"] = s;
  const auto model = ctx.param<std::string>("expected_model", "");
  if (!model.empty() && lower(f["name"].get<std::string>()).find(lower(model)) == std::string::npos)
    p.add(Code::GpuModel, "model '" + f["name"].get<std::string>() + "', spec expects '" + model + "'");
  return true;
}

// ECC mode and counts, retired pages and row remapping.
void read_memory_health(const nvml::Lib& lib, nvml::Device d, const Context& ctx, json& f, Problems& p) {
  bool cur = false, pend = false;
  if (lib.ecc_mode(d, &cur, &pend) == nvml::kSuccess) {
    f["ecc_enabled"] = cur;
    f["ecc_enabled_after_reset"] = pend;
    if (!cur && ctx.param("require_ecc", true)) p.add(Code::GpuEccDisabled, "ECC is disabled");
  }
  std::uint64_t v = 0;
  const char* names[2][2] = {{"ecc_corrected_volatile", "ecc_corrected_aggregate"},
                             {"ecc_uncorrected_volatile", "ecc_uncorrected_aggregate"}};
  for (int type = 0; type < 2; ++type)
    for (int counter = 0; counter < 2; ++counter)
      if (lib.ecc_count(d, type, counter, &v) == nvml::kSuccess) f[names[type][counter]] = v;
  if (f.value("ecc_uncorrected_volatile", 0ULL) > 0)
    p.add(Code::GpuEccUncorrectable, std::to_string(f["ecc_uncorrected_volatile"].get<std::uint64_t>()) +
                                       " uncorrectable ECC errors since the driver loaded");
  const auto max_agg = ctx.param<long long>("max_ecc_uncorrected_aggregate", -1);
  if (max_agg >= 0 && f.value("ecc_uncorrected_aggregate", 0LL) > max_agg)
    p.add(Code::GpuEccUncorrectable, "lifetime uncorrectable ECC errors above the spec");

  unsigned pages = 0;
  bool pending = false;
  if (lib.retired_pages(d, 0, &pages) == nvml::kSuccess) f["retired_pages_sbe"] = pages;
  if (lib.retired_pages(d, 1, &pages) == nvml::kSuccess) f["retired_pages_dbe"] = pages;
  if (lib.retired_pages_pending(d, &pending) == nvml::kSuccess) {
    f["retired_pages_pending"] = pending;
    if (pending) p.add(Code::GpuResetRequired, "page retirement pending: reset the GPU");
  }
  unsigned corr = 0, unc = 0;
  bool failed = false;
  if (lib.remapped_rows(d, &corr, &unc, &pending, &failed) == nvml::kSuccess) {
    f["remapped_rows"] = {{"correctable", corr}, {"uncorrectable", unc},
                          {"pending", pending}, {"failure", failed}};
    if (failed) p.add(Code::GpuRowRemapFailure, "row remapping failed: the GPU needs service");
    else if (pending) p.add(Code::GpuResetRequired, "row remap pending: reset the GPU");
  }
}

// PCIe link generation and width.
void read_pcie(const nvml::Lib& lib, nvml::Device d, const Context& ctx, json& f, Problems& p) {
  unsigned gc = 0, gm = 0, wc = 0, wm = 0;
  if (lib.pcie_gen(d, &gc, &gm) == nvml::kSuccess) f["pcie_gen"] = {{"current", gc}, {"max", gm}};
  if (lib.pcie_width(d, &wc, &wm) == nvml::kSuccess) {
    f["pcie_width"] = {{"current", wc}, {"max", wm}};
    // Link generation drops at idle to save power; the width never should.
    if (wc > 0 && wm > 0 && wc < wm)
      p.add(Code::GpuPcieDegraded, "PCIe link x" + std::to_string(wc) + " of x" + std::to_string(wm));
  }
  const auto min_gen = ctx.param<unsigned>("min_pcie_gen_max", 0);
  if (min_gen > 0 && gm > 0 && gm < min_gen)
    p.add(Code::GpuPcieDegraded, "PCIe link trains at gen" + std::to_string(gm));
}

// NVLink links up, out of those the GPU has: the coordinator compares the count with the class's
// nvlinks_per_gpu (docs/spec.md). When a link cannot be read the count is left out, with why.
void read_nvlink(const nvml::Lib& lib, nvml::Device d, json& f) {
  const auto n = nvml::count_nvlinks([&](unsigned link, bool* on) { return lib.nvlink_state(d, link, on); });
  if (n.error != nvml::kSuccess) {
    f["nvlink_error"] = "NVML: " + lib.error(n.error);
    return;
  }
  f["nvlinks_active"] = n.active;
  f["nvlinks_inactive"] = n.inactive;
}

// The HCA nearest the GPU on the PCI tree, the one its rank's RDMA traffic uses (docs/nccl-rdma.md).
void read_nearest_hca(json& f) {
  if (!f.contains("pci_bus_id")) return;
  if (auto b = topo::nearest_hca(f["pci_bus_id"].get<std::string>(), rdma::ib_root_from_env()))
    f["nearest_hca"] = b->to_json();
}

// Clocks, power limit and draw, temperature and throttle reasons.
void read_power(const nvml::Lib& lib, nvml::Device d, const Context& ctx, json& f, Problems& p) {
  unsigned c = 0, cm = 0;
  if (lib.clock(d, 1, &c, &cm) == nvml::kSuccess) f["sm_clock_mhz"] = {{"current", c}, {"max", cm}};
  if (lib.clock(d, 2, &c, &cm) == nvml::kSuccess) f["mem_clock_mhz"] = {{"current", c}, {"max", cm}};
  double enforced = 0, def = 0, watts = 0;
  if (lib.power_limits(d, &enforced, &def) == nvml::kSuccess) {
    f["power_limit_w"] = enforced;
    f["power_default_limit_w"] = def;
    const double min_w = ctx.param("min_power_limit_w", 0.0);
    if (min_w > 0 && enforced < min_w)
      p.add(Code::GpuPowerLimit, "power limit " + std::to_string(static_cast<int>(enforced)) +
                                   " W is below the spec's " + std::to_string(static_cast<int>(min_w)) + " W");
  }
  if (lib.power_w(d, &watts) == nvml::kSuccess) f["power_w"] = watts;
  unsigned temp = 0;
  if (lib.temperature_c(d, &temp) == nvml::kSuccess) f["temperature_c"] = temp;
  std::uint64_t reasons = 0;
  if (lib.throttle_reasons(d, &reasons) == nvml::kSuccess) {
    f["throttle_reasons"] = throttle::names(reasons);
    if (throttle::abnormal(reasons))
      p.add(Code::GpuThrottle, "clocks held down at idle by " + f["throttle_reasons"].dump());
  }
}

// Persistence and MIG mode against the spec, and memory in use.
void read_modes(const nvml::Lib& lib, nvml::Device d, const Context& ctx, json& f, Problems& p) {
  bool on = false;
  if (lib.persistence(d, &on) == nvml::kSuccess) {
    f["persistence_mode"] = on;
    if (!on && ctx.param("require_persistence", false))
      p.add(Code::GpuPersistence, "persistence mode is off");
  }
  bool cur = false, pend = false;
  if (lib.mig_mode(d, &cur, &pend) == nvml::kSuccess) {
    f["mig_mode"] = {{"current", cur}, {"pending", pend}};
    if (auto it = ctx.params.find("expect_mig"); it != ctx.params.end() && it->get<bool>() != cur)
      p.add(Code::GpuMigMode, std::string("MIG mode is ") + (cur ? "on" : "off") + ", spec expects " +
                                (cur ? "off" : "on"));
  }
  std::uint64_t total = 0, used = 0;
  if (lib.memory(d, &total, &used) == nvml::kSuccess) {
    f["memory_total_bytes"] = total;
    f["memory_used_bytes"] = used;
  }
}

// NVML fields of one GPU into `f`, problems into `p`. Returns false when the GPU is lost.
bool read_gpu(const nvml::Lib& lib, nvml::Device d, const Context& ctx, json& f, Problems& p) {
  if (!read_identity(lib, d, ctx, f, p)) return false;
  read_memory_health(lib, d, ctx, f, p);
  read_pcie(lib, d, ctx, f, p);
  read_nvlink(lib, d, f);
  read_nearest_hca(f);
  read_power(lib, d, ctx, f, p);
  read_modes(lib, d, ctx, f, p);
  return true;
}

// Count against the spec: what CUDA sees is what workloads get, what NVML sees is what is
// installed. A GPU hidden or failed to initialise shows up as a difference between them.
Result gpu_count(const Context& ctx, const std::string& host, int cuda_count, int nvml_count) {
  const int expected = ctx.param("expected_gpus", -1);
  const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
  Result count = make_result(kKey, node_entity(host), "gpu_count", cuda_count, "");
  count.extra = {{"cuda_visible", cuda_count}, {"nvml_count", nvml_count},
                 {"expected", expected}};
  if (cvd) count.extra["CUDA_VISIBLE_DEVICES"] = cvd;
  if (expected >= 0 && (cuda_count != expected || (nvml_count >= 0 && nvml_count != expected))) {
    count.status = Status::Fail;
    std::ostringstream r;
    r << cuda_count << " GPU(s) usable through CUDA, " << ctx.param<std::string>("expected_gpus_from", "the spec")
      << " expects " << expected;
    if (nvml_count >= 0) r << " (NVML sees " << nvml_count << ")";
    if (cvd) r << "; CUDA_VISIBLE_DEVICES=" << cvd;
    count.reason = r.str();
    count.problems.push_back({Code::GpuCount, count.reason});
  }
  return count;
}

// The driver against the spec, or an ERROR when NVML is missing.
Result driver(const Context& ctx, const NodeGpus& node) {
  if (!node.lib) {
    Result r = make_result(kKey, node_entity(node.host), "nvml", 0, "", Status::Error,
                           node.nvml_why + ": health counters unavailable");
    r.problems.push_back({Code::GpuNvml, r.reason});
    return r;
  }
  const nvml::Lib& lib = *node.lib;
  Result drv = make_result(kKey, node_entity(node.host), "driver", lib.cuda_driver_version() / 1000.0, "");
  drv.extra = {{"driver_version", lib.driver_version()},
               {"cuda_driver_version", lib.cuda_driver_version()}};
  const auto want = ctx.param<std::string>("expected_driver", "");
  if (!want.empty() && lib.driver_version().rfind(want, 0) != 0) {
    drv.status = Status::Fail;
    drv.reason = "driver " + lib.driver_version() + ", spec expects " + want;
    drv.problems.push_back({Code::GpuDriver, drv.reason});
  }
  return drv;
}

// The health of NVML's GPU `i`, with the XIDs seen on it during the campaign.
Result gpu_health(const Context& ctx, const nvml::Lib& lib, int i, const std::string& host,
                  const std::vector<nvml::Xid>& xids, const json& xid_note) {
  int rc = 0;
  json f = json::object();
  Problems p;
  nvml::Device d = lib.handle(static_cast<unsigned>(i), &rc);
  if (!d) {
    p.add(rc == nvml::kErrGpuIsLost ? Code::GpuLost : Code::GpuNvml,
          "NVML cannot open the GPU: " + lib.error(rc));
  } else {
    read_gpu(lib, d, ctx, f, p);
  }
  json seen = json::array();
  for (const auto& x : xids)
    if (x.gpu_index == i) seen.push_back({{"xid", x.xid}, {"ts", x.unix_time}});
  f["xid_events"] = seen;
  if (!xid_note.is_null()) f["xid_watch"] = xid_note;
  if (!seen.empty())
    p.add(Code::GpuXid, std::to_string(seen.size()) + " XID error(s) during the campaign, last XID " +
                         std::to_string(seen.back()["xid"].get<std::uint64_t>()));
  Result r = make_result(kKey, gpu_entity(host, i), "health",
                         static_cast<double>(p.list.size()), "problems",
                         p.list.empty() ? Status::Pass : Status::Fail, p.reason());
  r.problems = std::move(p.list);
  r.extra = std::move(f);
  return r;
}

// Why the check has nothing to measure: neither NVML nor CUDA sees a GPU.
std::string no_gpu_reason(const NodeInfo& info, const NodeGpus& node) {
  const std::string why = node.lib ? "NVML sees no GPU" : node.nvml_why;
  const auto cuda = cuda_skip_reason(info).value_or("");
  return "no GPU visible (" + why + (cuda.empty() ? "" : "; " + cuda) + ")";
}

#if KILN_HAVE_CUDA
// Every CUDA-visible GPU must also take a context and an allocation: a GPU that NVML still
// lists but CUDA cannot use is as lost as one that vanished.
Result cuda_probe(const std::string& host, const GpuInfo& g) {
  Result r = make_result(kKey, gpu_entity(host, g.index), "cuda_probe", 1, "");
  r.extra = {{"cuda_ordinal", g.ordinal}, {"name", g.name}, {"bus_id", g.bus_id},
             {"sm_count", g.sm_count}, {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)},
             {"total_mem_bytes", g.total_mem}};
  const GpuFailure f = on_gpu([&] {
    KILN_CUDA(cudaSetDevice(g.ordinal));
    DeviceBuffer probe(g.ordinal, 1 << 20);
    KILN_CUDA(cudaMemset(probe.get(), 0xa5, probe.size()));
    KILN_CUDA(cudaDeviceSynchronize());
  });
  if (f.failed()) report_failure(r, f);
  return r;
}
#endif

class GpuHealth final : public GpuCheck {
 public:
  std::string key() const override { return kKey; }

  // Measured even where no GPU is visible: a node the plan expects GPUs on (expected_gpus > 0)
  // then FAILs with gpu.count instead of skipping, so untested hardware never passes.
  std::optional<std::string> applicable(const NodeInfo&) const override { return std::nullopt; }

 protected:
  bool needs_cuda() const override { return false; }

  void measure(Context& ctx, ResultSink& sink, const NodeGpus& node) override {
    const int nvml_count = node.lib ? node.lib->count() : -1;
    int cuda_count = ctx.node.gpu_count;
#if KILN_HAVE_CUDA
    cuda_count = static_cast<int>(node.list.size());
#endif
    if (cuda_count == 0 && nvml_count <= 0) {
      if (ctx.param("expected_gpus", -1) > 0)
        sink.emit(gpu_count(ctx, node.host, cuda_count, nvml_count));
      else
        sink.emit(make_result(kKey, node_entity(node.host), "health", 0, "", Status::Skip, no_gpu_reason(ctx.node, node)));
      return;
    }
    json xid_note;
    if (node.lib) {
      std::string xwhy;
      if (!nvml::XidWatcher::instance().start(node.lib, &xwhy)) xid_note = xwhy;
    }
    sink.emit(gpu_count(ctx, node.host, cuda_count, nvml_count));
    sink.emit(driver(ctx, node));
    const auto xids = nvml::XidWatcher::instance().since(0.0);
    for (int i = 0; node.lib && i < nvml_count; ++i)
      sink.emit(gpu_health(ctx, *node.lib, i, node.host, xids, xid_note));
#if KILN_HAVE_CUDA
    for (const auto& g : node.list) sink.emit(cuda_probe(node.host, g));
#endif
  }
};

KILN_REGISTER_CHECK(GpuHealth);

}  // namespace
}  // namespace kiln::worker::gpu
