// A PCI function's configuration space as sysfs gives it (the binary `config` file): the walk of
// the standard capability list (from 0x34) and of the extended list (from 0x100), and the few
// registers the stack checks read. Pure functions over bytes, so the unit tests feed recorded and
// edited config spaces. A non-root reader gets only the first 64 bytes (the header): then nothing
// past it can be read, and the callers report that rather than guessing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kiln::worker::pci {

inline constexpr std::uint8_t kCapPcie = 0x10;    // PCI Express capability
inline constexpr std::uint16_t kExtCapAcs = 0x000d;  // Access Control Services
inline constexpr std::size_t kHeaderBytes = 64;

struct ConfigSpace {
  std::vector<std::uint8_t> bytes;

  // More than the header: what root reads (256 bytes for conventional PCI, 4096 for PCIe).
  bool readable() const { return bytes.size() > kHeaderBytes; }
  std::optional<std::uint8_t> u8(std::size_t at) const;
  std::optional<std::uint16_t> u16(std::size_t at) const;  // little-endian, as config space is
  std::optional<std::uint32_t> u32(std::size_t at) const;
};

// The file's bytes (at most 4096); empty when it cannot be read.
ConfigSpace read_config(const std::filesystem::path& file);

// Offset of the standard capability `id`; nullopt when absent, unreadable, or the list is broken
// (a pointer into the header, or a loop: the walk stops after 48 entries).
std::optional<std::size_t> find_capability(const ConfigSpace& c, std::uint8_t id);
// Offset of the extended capability `id` (from 0x100); nullopt as above.
std::optional<std::size_t> find_ext_capability(const ConfigSpace& c, std::uint16_t id);

// Max_Read_Request_Size in bytes: 128 << Device Control bits 14:12 of the PCIe capability.
std::optional<int> max_read_request(const ConfigSpace& c);
// Max_Payload_Size in bytes: 128 << Device Control bits 7:5.
std::optional<int> max_payload(const ConfigSpace& c);

// Device/Port Type of the PCIe Capabilities register (bits 7:4): 4 a root port, 5 a switch's
// upstream port, 6 a switch's downstream port; nullopt without a PCIe capability.
inline constexpr int kPortRoot = 4;
std::optional<int> port_type(const ConfigSpace& c);

// The ACS Control register (ACS capability + 6); nullopt when the function has no ACS capability.
std::optional<std::uint16_t> acs_control(const ConfigSpace& c);

// ACS controls that send peer-to-peer traffic up to the root complex: Source Validation (bit 0),
// P2P Request Redirect (2), P2P Completion Redirect (3), Upstream Forwarding (4). Their names,
// comma-separated ("SrcValid,ReqRedir"); empty when none is on.
std::string acs_redirecting(std::uint16_t control);

}  // namespace kiln::worker::pci
