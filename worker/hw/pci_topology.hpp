// Which HCA is nearest a GPU, from the PCI topology sysfs shows. Each PCI function has a canonical
// path under /sys/devices that names every bridge above it
// (/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:10.0/0000:1b:00.0): two devices
// behind the same PCIe switch share a longer prefix than two that meet only at the root complex,
// and those a longer one than two on different host bridges. The nearest HCA is the one whose path
// shares the most components with the GPU's, then the one on the GPU's NUMA node, then the first
// by name. Pure file reading with configurable roots, so the unit tests build a fake tree.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::worker::topo {

inline constexpr const char* kPciDevicesRoot = "/sys/bus/pci/devices";

// A PCI function as sysfs places it.
struct PciPlace {
  std::string name;   // the HCA (mlx5_0) or the GPU's bus id (0000:1b:00.0)
  std::string path;   // canonical sysfs path; empty when it does not resolve
  int numa_node = -1;  // -1: unknown (the kernel's value when the platform gives none)
};

// "00000000:1B:00.0" (NVML), "0000:1B:00.0" (CUDA) or "1b:00.0" -> "0000:1b:00.0", the name sysfs
// gives the function. "" when the text is not a PCI address.
std::string normalize_bus_id(std::string_view bus_id);

// How many leading path components `a` and `b` share (0 when either is empty).
std::size_t common_depth(std::string_view a, std::string_view b);

// How the nearest HCA was told apart from the others.
struct Nearest {
  std::size_t index = 0;  // into the candidates
  std::size_t depth = 0;  // path components shared with the GPU
  // "only" (one candidate), "pci" (the longest shared path), "numa" (tied on the path, on the
  // GPU's NUMA node), "order" (tied on both: the first by name).
  std::string by;
};

// The HCA among `hcas` nearest `gpu`; nullopt when there is none.
std::optional<Nearest> nearest(const PciPlace& gpu, const std::vector<PciPlace>& hcas);

// Every RDMA device under `ib_root` (/sys/class/infiniband), its `device` link resolved, sorted by
// name. A device whose link does not resolve keeps an empty path (it can win only on order).
std::vector<PciPlace> hca_places(const std::filesystem::path& ib_root);

// The GPU with this bus id under `pci_root` (/sys/bus/pci/devices); nullopt when it is not there.
std::optional<PciPlace> gpu_place(std::string_view bus_id, const std::filesystem::path& pci_root = kPciDevicesRoot);

// The HCA nearest the GPU with this bus id.
struct Binding {
  std::string hca;     // mlx5_3
  std::string gpu;     // the GPU's bus id as sysfs names it
  std::size_t depth = 0;
  std::string by;      // as Nearest::by
  nlohmann::json to_json() const;
};
// nullopt when the node has no RDMA device or the GPU is not under pci_root.
std::optional<Binding> nearest_hca(std::string_view gpu_bus_id, const std::filesystem::path& ib_root,
                                   const std::filesystem::path& pci_root = kPciDevicesRoot);

}  // namespace kiln::worker::topo
