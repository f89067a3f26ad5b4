#include "worker/hw/pci_topology.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>

namespace kiln::worker::topo {

namespace {

namespace fs = std::filesystem;

bool hex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

int read_numa(const fs::path& dev) {
  std::ifstream in(dev / "numa_node");
  int n = -1;
  if (!(in >> n)) return -1;
  return n;
}

std::string canonical_or_empty(const fs::path& p) {
  std::error_code ec;
  const auto c = fs::canonical(p, ec);
  return ec ? std::string() : c.string();
}

}  // namespace

std::string normalize_bus_id(std::string_view bus_id) {
  // [domain:]bus:device.function
  const auto dot = bus_id.rfind('.');
  if (dot == std::string_view::npos) return "";
  const auto fn = bus_id.substr(dot + 1);
  const auto head = bus_id.substr(0, dot);
  const auto c2 = head.rfind(':');
  if (c2 == std::string_view::npos) return "";
  const auto dev = head.substr(c2 + 1);
  const auto rest = head.substr(0, c2);
  const auto c1 = rest.rfind(':');
  const auto bus = c1 == std::string_view::npos ? rest : rest.substr(c1 + 1);
  auto domain = c1 == std::string_view::npos ? std::string_view("0000") : rest.substr(0, c1);
  if (!hex(domain) || !hex(bus) || !hex(dev) || !hex(fn) || bus.size() > 2 || dev.size() > 2 || fn.size() != 1)
    return "";
  // sysfs writes the domain with at least 4 digits: NVML's 8-digit form has 4 leading zeros more.
  while (domain.size() > 4 && domain.front() == '0') domain.remove_prefix(1);
  std::string d(domain);
  while (d.size() < 4) d.insert(d.begin(), '0');
  auto two = [](std::string_view s) { return s.size() == 1 ? "0" + std::string(s) : std::string(s); };
  return lower(d + ":" + two(bus) + ":" + two(dev) + "." + std::string(fn));
}

std::size_t common_depth(std::string_view a, std::string_view b) {
  if (a.empty() || b.empty()) return 0;
  const fs::path pa(a), pb(b);
  std::size_t n = 0;
  for (auto ia = pa.begin(), ib = pb.begin(); ia != pa.end() && ib != pb.end() && *ia == *ib; ++ia, ++ib)
    if (!ia->empty() && *ia != "/") ++n;
  return n;
}

std::optional<Nearest> nearest(const PciPlace& gpu, const std::vector<PciPlace>& hcas) {
  if (hcas.empty()) return std::nullopt;
  auto numa_match = [&](const PciPlace& h) { return gpu.numa_node >= 0 && h.numa_node == gpu.numa_node; };
  Nearest best;
  best.depth = common_depth(gpu.path, hcas[0].path);
  for (std::size_t i = 1; i < hcas.size(); ++i) {
    const std::size_t d = common_depth(gpu.path, hcas[i].path);
    if (d > best.depth || (d == best.depth && numa_match(hcas[i]) && !numa_match(hcas[best.index]))) {
      best.index = i;
      best.depth = d;
    }
  }
  // How the winner stood out: against the runner-up on the path, then on the NUMA node.
  if (hcas.size() == 1) {
    best.by = "only";
    return best;
  }
  bool tied_path = false, tied_numa = false;
  for (std::size_t i = 0; i < hcas.size(); ++i) {
    if (i == best.index || common_depth(gpu.path, hcas[i].path) != best.depth) continue;
    tied_path = true;
    if (numa_match(hcas[i]) == numa_match(hcas[best.index])) tied_numa = true;
  }
  best.by = !tied_path ? "pci" : !tied_numa ? "numa" : "order";
  return best;
}

std::vector<PciPlace> hca_places(const fs::path& ib_root) {
  std::vector<PciPlace> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(ib_root, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    PciPlace p;
    p.name = it->path().filename().string();
    p.path = canonical_or_empty(it->path() / "device");
    if (!p.path.empty()) p.numa_node = read_numa(p.path);
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(), [](const PciPlace& a, const PciPlace& b) { return a.name < b.name; });
  return out;
}

std::optional<PciPlace> gpu_place(std::string_view bus_id, const fs::path& pci_root) {
  const std::string id = normalize_bus_id(bus_id);
  if (id.empty()) return std::nullopt;
  PciPlace p;
  p.name = id;
  p.path = canonical_or_empty(pci_root / id);
  if (p.path.empty()) return std::nullopt;
  p.numa_node = read_numa(p.path);
  return p;
}

nlohmann::json Binding::to_json() const { return {{"device", hca}, {"gpu_pci", gpu}, {"shared_depth", depth}, {"by", by}}; }

std::optional<Binding> nearest_hca(std::string_view gpu_bus_id, const fs::path& ib_root, const fs::path& pci_root) {
  const auto gpu = gpu_place(gpu_bus_id, pci_root);
  if (!gpu) return std::nullopt;
  const auto hcas = hca_places(ib_root);
  const auto n = nearest(*gpu, hcas);
  if (!n) return std::nullopt;
  return Binding{hcas[n->index].name, gpu->name, n->depth, n->by};
}

}  // namespace kiln::worker::topo
