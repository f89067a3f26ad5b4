#include "worker/hw/pci_config.hpp"

#include <fstream>
#include <iterator>

namespace kiln::worker::pci {

namespace {
constexpr std::size_t kMaxConfig = 4096;
constexpr std::size_t kExtStart = 0x100;
constexpr int kMaxWalk = 48;  // more entries than fit: the list loops
constexpr std::uint16_t kStatusCapList = 1u << 4;
constexpr std::size_t kDevCtl = 0x08;  // Device Control, from the PCIe capability
}  // namespace

std::optional<std::uint8_t> ConfigSpace::u8(std::size_t at) const {
  if (at >= bytes.size()) return std::nullopt;
  return bytes[at];
}

std::optional<std::uint16_t> ConfigSpace::u16(std::size_t at) const {
  if (at + 2 > bytes.size()) return std::nullopt;
  return static_cast<std::uint16_t>(bytes[at] | (bytes[at + 1] << 8));
}

std::optional<std::uint32_t> ConfigSpace::u32(std::size_t at) const {
  const auto lo = u16(at), hi = u16(at + 2);
  if (!lo || !hi) return std::nullopt;
  return static_cast<std::uint32_t>(*lo) | (static_cast<std::uint32_t>(*hi) << 16);
}

ConfigSpace read_config(const std::filesystem::path& file) {
  ConfigSpace c;
  std::ifstream in(file, std::ios::binary);
  if (!in) return c;
  c.bytes.resize(kMaxConfig);
  in.read(reinterpret_cast<char*>(c.bytes.data()), static_cast<std::streamsize>(kMaxConfig));
  c.bytes.resize(static_cast<std::size_t>(in.gcount()));
  return c;
}

std::optional<std::size_t> find_capability(const ConfigSpace& c, std::uint8_t id) {
  const auto status = c.u16(0x06);
  if (!c.readable() || !status || !(*status & kStatusCapList)) return std::nullopt;
  auto next = c.u8(0x34);
  for (int i = 0; next && i < kMaxWalk; ++i) {
    const std::size_t at = *next & 0xfcu;  // the low two bits are reserved
    if (at < kHeaderBytes) return std::nullopt;
    const auto cap = c.u8(at);
    if (!cap) return std::nullopt;
    if (*cap == id) return at;
    next = c.u8(at + 1);
  }
  return std::nullopt;
}

std::optional<std::size_t> find_ext_capability(const ConfigSpace& c, std::uint16_t id) {
  std::size_t at = kExtStart;
  for (int i = 0; i < kMaxWalk; ++i) {
    const auto head = c.u32(at);
    if (!head || *head == 0 || *head == 0xffffffffu) return std::nullopt;  // none, or not readable
    if ((*head & 0xffffu) == id) return at;
    at = (*head >> 20) & 0xffcu;
    if (at < kExtStart) return std::nullopt;
  }
  return std::nullopt;
}

namespace {
std::optional<int> devctl_size(const ConfigSpace& c, int shift) {
  const auto cap = find_capability(c, kCapPcie);
  if (!cap) return std::nullopt;
  const auto ctl = c.u16(*cap + kDevCtl);
  if (!ctl) return std::nullopt;
  return 128 << ((*ctl >> shift) & 0x7);
}
}  // namespace

std::optional<int> max_read_request(const ConfigSpace& c) { return devctl_size(c, 12); }
std::optional<int> max_payload(const ConfigSpace& c) { return devctl_size(c, 5); }

std::optional<int> port_type(const ConfigSpace& c) {
  const auto cap = find_capability(c, kCapPcie);
  if (!cap) return std::nullopt;
  const auto reg = c.u16(*cap + 2);
  if (!reg) return std::nullopt;
  return (*reg >> 4) & 0xf;
}

std::optional<std::uint16_t> acs_control(const ConfigSpace& c) {
  const auto cap = find_ext_capability(c, kExtCapAcs);
  if (!cap) return std::nullopt;
  return c.u16(*cap + 6);
}

std::string acs_redirecting(std::uint16_t control) {
  static const std::pair<int, const char*> bits[] = {{0, "SrcValid"}, {2, "ReqRedir"}, {3, "CmpltRedir"}, {4, "UpstreamFwd"}};
  std::string out;
  for (const auto& [bit, name] : bits)
    if (control & (1u << bit)) out += (out.empty() ? "" : ",") + std::string(name);
  return out;
}

}  // namespace kiln::worker::pci
