// PCI functions as sysfs lists them under <root>/sys/bus/pci/devices, for the stack checks: what
// each is (vendor, class), its link (current and max speed and width), its NUMA node, and the
// bridges above it. Every path is under a root prefix ("/" on a node; a recorded tree in tests).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kiln::worker::pci {

// The root the stack checks read when their `root` parameter is not given: env KILN_SYSFS_ROOT,
// else "/".
std::filesystem::path root_from_env();

struct Function {
  std::string name;             // 0000:1b:00.0
  std::filesystem::path dir;    // canonical directory under <root>/sys/devices
  std::uint32_t vendor = 0, device = 0;
  std::uint32_t pci_class = 0;  // 24 bits: 0x030200
  std::string cur_speed, max_speed;  // "32.0 GT/s PCIe"; empty when sysfs gives none
  int cur_width = 0, max_width = 0;
  int numa_node = -1;

  bool gpu() const;     // NVIDIA, 3D or VGA controller
  bool hca() const;     // Mellanox/NVIDIA networking, or an InfiniBand controller
  bool nvswitch() const;  // NVIDIA, bridge class 0x0680
};

// A whitespace-trimmed line of a file; "" when it cannot be read.
std::string read_line(const std::filesystem::path& file);

// Every function under <root>/sys/bus/pci/devices, sorted by name.
std::vector<Function> list_functions(const std::filesystem::path& root);

// The PCI functions above `f` (its bridges and switch ports), nearest first: the directories of
// its sysfs path that are named like a PCI address and have a config file.
std::vector<Function> bridges_above(const Function& f);

// "32.0 GT/s PCIe" -> the PCIe generation (5); 0 when unknown.
int pcie_gen(const std::string& speed);

}  // namespace kiln::worker::pci
