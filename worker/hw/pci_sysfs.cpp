#include "worker/hw/pci_sysfs.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "worker/hw/pci_topology.hpp"

namespace kiln::worker::pci {

namespace fs = std::filesystem;

namespace {

std::uint32_t read_hex(const fs::path& file) {
  const auto s = read_line(file);
  if (s.empty()) return 0;
  return static_cast<std::uint32_t>(std::strtoul(s.c_str(), nullptr, 16));
}

int read_int(const fs::path& file, int fallback) {
  const auto s = read_line(file);
  if (s.empty()) return fallback;
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  return end == s.c_str() ? fallback : static_cast<int>(v);
}

Function read_function(const fs::path& dir) {
  Function f;
  f.name = dir.filename().string();
  f.dir = dir;
  f.vendor = read_hex(dir / "vendor");
  f.device = read_hex(dir / "device");
  f.pci_class = read_hex(dir / "class");
  f.cur_speed = read_line(dir / "current_link_speed");
  f.max_speed = read_line(dir / "max_link_speed");
  f.cur_width = read_int(dir / "current_link_width", 0);
  f.max_width = read_int(dir / "max_link_width", 0);
  f.numa_node = read_int(dir / "numa_node", -1);
  return f;
}

}  // namespace

fs::path root_from_env() {
  if (const char* env = std::getenv("KILN_SYSFS_ROOT"); env && *env) return env;
  return "/";
}

bool Function::gpu() const {
  const auto base = pci_class >> 8;
  return vendor == 0x10de && (base == 0x0302 || base == 0x0300);
}
bool Function::hca() const { return vendor == 0x15b3 || (pci_class >> 8) == 0x0207; }
bool Function::nvswitch() const { return vendor == 0x10de && (pci_class >> 8) == 0x0680; }

std::string read_line(const fs::path& file) {
  std::ifstream in(file);
  std::string s;
  if (!std::getline(in, s)) return "";
  const auto a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::vector<Function> list_functions(const fs::path& root) {
  std::vector<Function> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(root / "sys/bus/pci/devices", ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    std::error_code cec;
    const auto dir = fs::canonical(it->path(), cec);
    if (!cec) out.push_back(read_function(dir));
  }
  std::sort(out.begin(), out.end(), [](const Function& a, const Function& b) { return a.name < b.name; });
  return out;
}

std::vector<Function> bridges_above(const Function& f) {
  std::vector<Function> out;
  for (auto d = f.dir.parent_path(); d.has_relative_path() && d != d.parent_path(); d = d.parent_path()) {
    const auto name = d.filename().string();
    if (topo::normalize_bus_id(name) != name || !fs::exists(d / "config")) break;
    out.push_back(read_function(d));
  }
  return out;
}

int pcie_gen(const std::string& speed) {
  static const std::pair<const char*, int> gens[] = {{"2.5 GT/s", 1}, {"5.0 GT/s", 2},  {"8.0 GT/s", 3},
                                                     {"16.0 GT/s", 4}, {"32.0 GT/s", 5}, {"64.0 GT/s", 6}};
  for (const auto& [s, g] : gens)
    if (speed.rfind(s, 0) == 0) return g;
  return 0;
}

}  // namespace kiln::worker::pci
