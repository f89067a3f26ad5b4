// stack.versions: the software and firmware a node runs, as strings: GPU driver, CUDA, NCCL, MPI,
// rdma-core, mlx5_core, HCA firmware, kernel and GPU VBIOS. The node's result fails on a version
// below the spec's minimum or other than its exact one; the coordinator compares the versions
// across the fleet (fleet.setting names the odd node, its value and the majority's).
//
// Files are read under `root`; CUDA, NCCL and MPI are what this process loaded (the node's hello)
// and rdma-core is read only on the live system (root "/").
#include <fstream>
#include <regex>
#include <sstream>

#include "worker/checks/stack/stack.hpp"
#include "worker/hw/rdma_core.hpp"

namespace kiln::worker::stack {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

// "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..."
std::string driver_version(const fs::path& root) {
  static const std::regex version(R"(Kernel Module\D*?(\d+\.\d+(\.\d+)?))");
  std::smatch m;
  const std::string line = pci::read_line(root / "proc/driver/nvidia/version");
  if (std::regex_search(line, m, version)) return m[1];
  return pci::read_line(root / "sys/module/nvidia/version");
}

// "Linux version 6.8.0-45-generic (...)" -> "6.8.0-45-generic"
std::string kernel_version(const fs::path& root) {
  std::istringstream words(pci::read_line(root / "proc/version"));
  std::string a, b, v;
  words >> a >> b >> v;
  return v;
}

// name -> value of one file in each directory under `dir` (fw_ver of every HCA).
json per_entry(const fs::path& dir, const std::string& file) {
  json out = json::object();
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (auto v = pci::read_line(it->path() / file); !v.empty()) out[it->path().filename().string()] = v;
  return out;
}

// bus id -> "Video BIOS" of each GPU in /proc/driver/nvidia/gpus/<bus id>/information.
json vbios_versions(const fs::path& root) {
  json out = json::object();
  std::error_code ec;
  for (auto it = fs::directory_iterator(root / "proc/driver/nvidia/gpus", ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    std::ifstream in(it->path() / "information");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("Video BIOS:", 0) == 0) {
        std::istringstream rest(line.substr(11));
        std::string v;
        rest >> v;
        out[it->path().filename().string()] = v;
      }
  }
  return out;
}

json read_versions(const fs::path& root, const NodeInfo& node) {
  const bool live = root == fs::path("/");
  return {{"driver", or_null(driver_version(root))},
          {"cuda_driver", or_null(node.cuda_driver)},
          {"cuda_runtime", or_null(node.cuda_runtime)},
          {"nccl", or_null(node.nccl_version)},
          {"mpi", or_null(node.mpi_version)},
          {"rdma_core", live ? or_null(rdma::read_rdma_core().version) : json(nullptr)},
          {"mlx5_core", or_null(pci::read_line(root / "sys/module/mlx5_core/version"))},
          {"hca_fw", per_entry(root / "sys/class/infiniband", "fw_ver")},
          {"kernel", or_null(kernel_version(root))},
          {"vbios", vbios_versions(root)}};
}

// Numeric compare of dotted versions ("580.95.05" < "580.159.04"); -1, 0 or 1.
int compare_versions(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string pa, pb;
  while (true) {
    const bool ga = static_cast<bool>(std::getline(sa, pa, '.')), gb = static_cast<bool>(std::getline(sb, pb, '.'));
    if (!ga && !gb) return 0;
    const long va = ga ? std::strtol(pa.c_str(), nullptr, 10) : 0, vb = gb ? std::strtol(pb.c_str(), nullptr, 10) : 0;
    if (va != vb) return va < vb ? -1 : 1;
  }
}

// Every value of `v` (a string, or an object of strings such as hca_fw), for the spec comparisons.
std::vector<std::pair<std::string, std::string>> values_of(const std::string& name, const json& v) {
  std::vector<std::pair<std::string, std::string>> out;
  if (v.is_string()) out.emplace_back(name, v.get<std::string>());
  if (v.is_object())
    for (const auto& [k, x] : v.items()) out.emplace_back(name + " " + k, x.get<std::string>());
  return out;
}

// The string parameter `kind`_`field` (expected_driver, min_nccl: common/checks.cpp declares which
// exist); "" when not given.
std::string wanted(const json& params, const char* kind, const std::string& field) {
  const auto it = params.find(std::string(kind) + "_" + field);
  return it != params.end() && it->is_string() ? it->get<std::string>() : "";
}

void judge(Result& r, const json& versions, const json& params) {
  for (const auto& [field, v] : versions.items()) {
    const auto want = wanted(params, "expected", field), least = wanted(params, "min", field);
    if (want.empty() && least.empty()) continue;
    const auto vals = values_of(field, v);
    if (vals.empty()) fail(r, field + " version unknown: the spec asks for one");
    for (const auto& [what, got] : vals) {
      if (!want.empty() && got != want) fail(r, what + " is " + got + ", the spec expects " + want);
      if (!least.empty() && compare_versions(got, least) < 0)
        fail(r, what + " " + got + " is older than the spec's minimum " + least);
    }
  }
}

class StackVersions final : public Check {
 public:
  std::string key() const override { return "stack.versions"; }

  void run(Context& ctx, ResultSink& sink) override {
    Result r = part({"node", ctx.node.host}, "versions");
    r.extra = read_versions(root_of(ctx), ctx.node);
    judge(r, r.extra, ctx.params);
    sink.emit(std::move(r));
  }
};

KILN_REGISTER_CHECK(StackVersions);

}  // namespace
}  // namespace kiln::worker::stack
