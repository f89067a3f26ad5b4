// host.inventory: what the node is (CPUs, memory, kernel, GPUs, driver and library versions, the
// rdma-core version), so the report can show mismatches across nodes and against the spec.
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "worker/check.hpp"
#include "worker/hw/proc_stats.hpp"
#include "worker/hw/rdma_core.hpp"

namespace kiln::worker {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      return colon == std::string::npos ? "" : line.substr(colon + 2);
    }
  return "";
}

double mem_total_gib() {
  const auto text = host::read_file("/proc/meminfo");
  const auto m = text ? host::parse_meminfo(*text) : std::nullopt;
  return m ? static_cast<double>(m->total_kib) / (1024.0 * 1024.0) : 0;
}

// CPUs this process may run on (its affinity, which cpusets and cgroups narrow): what a job on
// the node really gets, which can be fewer than the node has online.
long usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  return CPU_COUNT(&set);
}

class HostInventory : public Check {
 public:
  std::string key() const override { return "host.inventory"; }

  void run(Context& ctx, ResultSink& sink) override {
    utsname u{};
    ::uname(&u);
    const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    const auto& n = ctx.node;
    // The node's NodeInfo (the same keys as in the hello) plus what only this check reads.
    nlohmann::json inv = n;
    inv.update({{"cpus", cpus},
                {"cpu_model", cpu_model()},
                {"memory_gib", mem_total_gib()},
                {"kernel", std::string(u.release)},
                {"cpus_usable", usable_cpus()},
                {"arch", std::string(u.machine)}});
    // rdma-core: null when the node has none (the spec's rdma_core is then not.tested).
    const auto rc = rdma::read_rdma_core();
    inv["rdma_core"] = rc.version.empty() ? nlohmann::json(nullptr) : nlohmann::json(rc.version);
    inv["rdma_core_source"] = rc.source;
    const Entity node{"node", n.host};
    Result r;
    r.entity = node;
    r.metric = "inventory";
    r.value = 1;
    r.extra = inv;
    sink.emit(r);

    auto figure = [&](const std::string& metric, double value, const std::string& unit, const char* expect_key) {
      Result m;
      m.entity = node;
      m.metric = metric;
      m.value = value;
      m.unit = unit;
      if (expect_key && ctx.params.contains(expect_key)) {
        const double want = ctx.params[expect_key].get<double>();
        m.extra = {{"expected", want}};
        if (value != want) {
          m.status = Status::Fail;
          m.reason = metric + " is " + std::to_string(static_cast<long long>(value)) + ", the spec expects " +
                     std::to_string(static_cast<long long>(want));
        }
      }
      sink.emit(m);
    };
    figure("cpus", static_cast<double>(cpus), "", "expected_cpus");
    figure("memory", mem_total_gib(), "GiB", nullptr);
    figure("gpus", n.gpu_count, "", "expected_gpus");
  }
};

KILN_REGISTER_CHECK(HostInventory);

}  // namespace
}  // namespace kiln::worker
