// gpu.health's NVLink count (worker/hw/nvml): links up, links down, links the GPU does not have,
// and links that cannot be read, from the states NVML would give.
#include <catch2/catch.hpp>

#include "worker/hw/nvml.hpp"

using namespace kiln::worker;

TEST_CASE("NVLink links: up, down, absent and unreadable", "[gpu]") {
  namespace nvml = gpu::nvml;
  // An SXM GPU with 18 links, two of them down.
  auto n = nvml::count_nvlinks([](unsigned link, bool* on) {
    *on = link != 4 && link != 11;
    return nvml::kSuccess;
  });
  CHECK(n.active == 16);
  CHECK(n.inactive == std::vector<int>{4, 11});
  CHECK(n.error == nvml::kSuccess);
  // A GPU with 12 links: the others are invalid arguments, not links that are down.
  n = nvml::count_nvlinks([](unsigned link, bool* on) {
    *on = true;
    return link < 12 ? nvml::kSuccess : nvml::kErrInvalidArgument;
  });
  CHECK(n.active == 12);
  CHECK(n.inactive.empty());
  // A PCIe GPU: no NVLink at all.
  n = nvml::count_nvlinks([](unsigned, bool*) { return nvml::kErrNotSupported; });
  CHECK(n.active == 0);
  CHECK(n.error == nvml::kSuccess);
  // A driver without the call, or a lost GPU: the count is unknown.
  n = nvml::count_nvlinks([](unsigned, bool*) { return nvml::kErrFunctionNotFound; });
  CHECK(n.error == nvml::kErrFunctionNotFound);
  n = nvml::count_nvlinks([](unsigned link, bool* on) {
    *on = true;
    return link < 3 ? nvml::kSuccess : nvml::kErrGpuIsLost;
  });
  CHECK(n.error == nvml::kErrGpuIsLost);
}
