// The config-space parser (worker/hw/pci_config.hpp) on the recorded H200 config space and on
// built ones: capability walks, Max_Read_Request_Size, ACS control, a header-only read.
#include <catch2/catch.hpp>

#include "worker/hw/pci_config.hpp"
#include "worker/hw/pci_sysfs.hpp"

using namespace kiln::worker::pci;

namespace {
const std::string kSysfs = std::string(KILN_TEST_DATA) + "/sysfs";

// A 4096-byte config space whose capability list is 0x34 -> 0x50 (power management) -> 0x40
// (PCIe), and an ACS capability at 0x140 behind a null extended capability at 0x100.
ConfigSpace built(std::uint16_t devctl, std::optional<std::uint16_t> acs) {
  ConfigSpace c;
  c.bytes.assign(4096, 0);
  c.bytes[0x06] = 0x10;
  c.bytes[0x34] = 0x50;
  c.bytes[0x50] = 0x01;  // power management
  c.bytes[0x51] = 0x40;
  c.bytes[0x40] = kCapPcie;
  c.bytes[0x48] = devctl & 0xff;
  c.bytes[0x49] = devctl >> 8;
  // A null extended capability at 0x100 whose next is 0x140, where ACS is.
  c.bytes[0x102] = 0x00;
  c.bytes[0x103] = 0x14;  // next = 0x140 in bits 31:20
  if (acs) {
    c.bytes[0x140] = 0x0d;
    c.bytes[0x142] = 0x01;
    c.bytes[0x146] = *acs & 0xff;
    c.bytes[0x147] = *acs >> 8;
  }
  return c;
}
}  // namespace

TEST_CASE("the recorded H200 config space: PCIe capability, MaxReadReq 4096, MaxPayload 256, no ACS",
          "[stack][pci]") {
  const auto c = read_config(kSysfs + "/gpu-h200-vm/sys/devices/pci0000:00/0000:00:06.0/config");
  REQUIRE(c.bytes.size() == 4096);
  CHECK(c.readable());
  CHECK(find_capability(c, kCapPcie) == std::optional<std::size_t>(0x60));
  CHECK(max_read_request(c) == std::optional<int>(4096));
  CHECK(max_payload(c) == std::optional<int>(256));
  CHECK_FALSE(acs_control(c).has_value());
  CHECK(find_ext_capability(c, 0x000b).has_value());  // vendor-specific, past a null capability
  CHECK(port_type(c) == std::optional<int>(0));         // an endpoint
}

TEST_CASE("the Device/Port Type is bits 7:4 of the PCIe Capabilities register", "[stack][pci]") {
  auto c = built(0, 0x001d);
  for (int type : {0, kPortRoot, 5, 6}) {
    c.bytes[0x42] = static_cast<std::uint8_t>(type << 4 | 0x2);  // capability version 2 in bits 3:0
    CHECK(port_type(c) == std::optional<int>(type));
  }
  c.bytes[0x34] = 0;  // no capability list: no PCIe capability
  CHECK_FALSE(port_type(c).has_value());
}

TEST_CASE("MaxReadReq is 128 << Device Control bits 14:12, found by walking the list", "[stack][pci]") {
  for (int n = 0; n <= 5; ++n) CHECK(max_read_request(built(static_cast<std::uint16_t>(n << 12), {})) == (128 << n));
  CHECK(max_payload(built(0x0020, {})) == 256);
  CHECK(find_capability(built(0, {}), 0x01) == std::optional<std::size_t>(0x50));
}

TEST_CASE("ACS control is read behind a null extended capability and its redirecting bits named", "[stack][pci]") {
  CHECK(acs_control(built(0, std::uint16_t{0x001d})) == std::optional<std::uint16_t>(0x001d));
  CHECK_FALSE(acs_control(built(0, {})).has_value());
  CHECK(acs_redirecting(0x001d) == "SrcValid,ReqRedir,CmpltRedir,UpstreamFwd");
  CHECK(acs_redirecting(0x0002).empty());  // Translation Blocking alone does not redirect
  CHECK(acs_redirecting(0x0004) == "ReqRedir");
}

TEST_CASE("a header-only config space (what non-root reads) yields nothing past the header", "[stack][pci]") {
  auto c = built(0x5000, std::uint16_t{0x001d});
  c.bytes.resize(64);
  CHECK_FALSE(c.readable());
  CHECK_FALSE(max_read_request(c).has_value());
  CHECK_FALSE(acs_control(c).has_value());
  CHECK_FALSE(read_config(kSysfs + "/no/such/config").readable());
}

TEST_CASE("broken capability lists end the walk instead of looping", "[stack][pci]") {
  auto c = built(0, {});
  c.bytes[0x41] = 0x50;  // PCIe -> PM -> PCIe ...
  CHECK_FALSE(find_capability(c, 0x05).has_value());
  c.bytes[0x34] = 0x10;  // into the header
  CHECK_FALSE(find_capability(c, kCapPcie).has_value());
  auto e = built(0, {});
  e.bytes[0x103] = 0x10;  // the extended list points to itself
  CHECK_FALSE(find_ext_capability(e, kExtCapAcs).has_value());
}

TEST_CASE("PCIe generations from sysfs link speeds", "[stack][pci]") {
  CHECK(pcie_gen("32.0 GT/s PCIe") == 5);
  CHECK(pcie_gen("16.0 GT/s PCIe") == 4);
  CHECK(pcie_gen("2.5 GT/s PCIe") == 1);
  CHECK(pcie_gen("Unknown") == 0);
}
