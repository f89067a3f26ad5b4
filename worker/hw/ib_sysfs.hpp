// HCA ports as the kernel shows them under /sys/class/infiniband/<dev>/ports/<n>/. Pure file
// reading with a configurable root, so the unit tests read a fixture tree (tests/data/ib/) and the
// worker reads the real one. No libibverbs needed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::worker::rdma {

inline constexpr const char* kDefaultSysfsRoot = "/sys/class/infiniband";

// The root the worker reads HCAs from when no check parameter names one: env KILN_IB_SYSFS_ROOT
// (the tests point it at a fixture tree), else kDefaultSysfsRoot.
inline std::filesystem::path ib_root_from_env() {
  if (const char* env = std::getenv("KILN_IB_SYSFS_ROOT"); env && *env) return env;
  return kDefaultSysfsRoot;
}

// Counters that only grow when something is wrong. An increase during a campaign is a finding.
inline const std::vector<std::string>& error_counter_names() {
  static const std::vector<std::string> names = {
      "symbol_error",
      "link_error_recovery",
      "link_downed",
      "port_rcv_errors",
      "port_rcv_remote_physical_errors",
      "port_rcv_switch_relay_errors",
      "port_xmit_discards",
      "port_xmit_constraint_errors",
      "port_rcv_constraint_errors",
      "local_link_integrity_errors",
      "excessive_buffer_overrun_errors",
      "VL15_dropped",
  };
  return names;
}

struct PortInfo {
  std::string device;      // mlx5_0
  int port = 0;            // 1-based
  std::string state;       // ACTIVE, DOWN, INIT, ARMED (text after "N: ")
  int state_code = 0;
  std::string phys_state;  // LinkUp, Polling, Disabled, ...
  double rate_gbps = 0;    // 400 for "400 Gb/sec (4X NDR)"
  int width = 0;           // lanes: 4 for "4X"
  std::string speed;       // NDR, HDR, ... (empty when the kernel gives none)
  std::string link_layer;  // InfiniBand | Ethernet
  std::string lid;         // "0x1a" (IB only)
  std::map<std::string, std::uint64_t> counters;  // every readable file under counters/
  bool active() const { return state == "ACTIVE"; }
  std::string id() const { return device + ":" + std::to_string(port); }
};

inline std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

inline std::optional<std::string> read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return trim(ss.str());
}

// "4: ACTIVE" -> {4, "ACTIVE"}; "ACTIVE" -> {0, "ACTIVE"}.
inline std::pair<int, std::string> parse_state(const std::string& text) {
  auto colon = text.find(':');
  if (colon == std::string::npos) return {0, trim(text)};
  int code = 0;
  try {
    code = std::stoi(text.substr(0, colon));
  } catch (...) {
    code = 0;
  }
  return {code, trim(text.substr(colon + 1))};
}

struct Rate {
  double gbps = 0;
  int width = 0;
  std::string speed;
};

// "400 Gb/sec (4X NDR)", "100 Gb/sec (4X EDR)", "25 Gb/sec (1X EDR)", "10 Gb/sec (4X)" (RoCE
// often gives no speed name), "2.5 Gb/sec (1X SDR)". Unknown text gives a zero rate.
inline Rate parse_rate(const std::string& text) {
  Rate r;
  std::istringstream in(text);
  in >> r.gbps;
  if (!in) return Rate{};
  auto open = text.find('(');
  auto close = text.find(')', open == std::string::npos ? 0 : open);
  if (open != std::string::npos && close != std::string::npos) {
    std::istringstream inner(text.substr(open + 1, close - open - 1));
    std::string w;
    inner >> w;
    if (!w.empty() && (w.back() == 'X' || w.back() == 'x')) {
      try {
        r.width = std::stoi(w.substr(0, w.size() - 1));
      } catch (...) {
        r.width = 0;
      }
    }
    inner >> r.speed;
  }
  return r;
}

inline std::optional<PortInfo> read_port(const std::filesystem::path& root, const std::string& device, int port) {
  namespace fs = std::filesystem;
  const fs::path dir = root / device / "ports" / std::to_string(port);
  auto state = read_text(dir / "state");
  if (!state) return std::nullopt;
  PortInfo p;
  p.device = device;
  p.port = port;
  std::tie(p.state_code, p.state) = parse_state(*state);
  if (auto t = read_text(dir / "phys_state")) p.phys_state = parse_state(*t).second;
  if (auto t = read_text(dir / "rate")) {
    Rate r = parse_rate(*t);
    p.rate_gbps = r.gbps;
    p.width = r.width;
    p.speed = r.speed;
  }
  if (auto t = read_text(dir / "link_layer")) p.link_layer = *t;
  if (auto t = read_text(dir / "lid")) p.lid = *t;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir / "counters", ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    auto t = read_text(it->path());
    if (!t || t->empty()) continue;
    try {
      p.counters[it->path().filename().string()] = std::stoull(*t);
    } catch (...) {
      // Some counter files are unreadable without privileges or hold text: leave them out.
    }
  }
  return p;
}

// Every port of every device under root, sorted by device then port (the order rails pair in).
inline std::vector<PortInfo> list_ports(const std::filesystem::path& root = kDefaultSysfsRoot) {
  namespace fs = std::filesystem;
  std::vector<PortInfo> out;
  std::error_code ec;
  for (auto dev = fs::directory_iterator(root, ec); !ec && dev != fs::directory_iterator(); dev.increment(ec)) {
    const std::string name = dev->path().filename().string();
    std::error_code ec2;
    for (auto port = fs::directory_iterator(dev->path() / "ports", ec2); !ec2 && port != fs::directory_iterator();
         port.increment(ec2)) {
      int n = 0;
      try {
        n = std::stoi(port->path().filename().string());
      } catch (...) {
        continue;
      }
      if (auto p = read_port(root, name, n)) out.push_back(std::move(*p));
    }
  }
  std::sort(out.begin(), out.end(), [](const PortInfo& a, const PortInfo& b) {
    return a.device != b.device ? a.device < b.device : a.port < b.port;
  });
  return out;
}

struct CounterChange {
  std::string name;
  std::uint64_t before = 0;
  std::uint64_t after = 0;
  std::uint64_t delta() const { return after >= before ? after - before : 0; }
};

// Error counters that grew between two readings of the same port. A counter that went down was
// reset (or wrapped) in between; it is reported with delta 0 and not counted as an error.
inline std::vector<CounterChange> error_increases(const PortInfo& before, const PortInfo& after) {
  std::vector<CounterChange> out;
  for (const auto& name : error_counter_names()) {
    auto b = before.counters.find(name);
    auto a = after.counters.find(name);
    if (b == before.counters.end() || a == after.counters.end()) continue;
    if (a->second > b->second) out.push_back({name, b->second, a->second});
  }
  return out;
}

}  // namespace kiln::worker::rdma
