#include "worker/hw/proc_stats.hpp"

#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

namespace kiln::worker::host {

std::optional<CpuTimes> parse_proc_stat(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cpu ", 0) != 0) continue;
    std::istringstream fields(line.substr(4));
    std::vector<std::uint64_t> v;
    std::uint64_t x = 0;
    while (v.size() < 8 && fields >> x) v.push_back(x);
    if (v.size() < 4) return std::nullopt;  // user nice system idle at the least
    CpuTimes t;
    for (auto n : v) t.total += n;
    const std::uint64_t idle = v[3] + (v.size() > 4 ? v[4] : 0);
    t.busy = t.total - idle;
    return t;
  }
  return std::nullopt;
}

std::optional<double> cpu_percent(const CpuTimes& before, const CpuTimes& after) {
  if (after.total <= before.total || after.busy < before.busy) return std::nullopt;
  const double busy = static_cast<double>(after.busy - before.busy);
  return 100.0 * busy / static_cast<double>(after.total - before.total);
}

std::optional<MemInfo> parse_meminfo(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  MemInfo m;
  bool total = false, avail = false;
  while (in >> key >> kib) {
    std::getline(in, unit);  // " kB" or nothing
    if (key == "MemTotal:") total = (m.total_kib = kib, true);
    else if (key == "MemAvailable:") avail = (m.available_kib = kib, true);
  }
  if (!total || !avail || m.available_kib > m.total_kib) return std::nullopt;
  return m;
}

std::optional<std::string> read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {
std::optional<std::uint64_t> read_counter(const std::filesystem::path& p) {
  const auto text = read_file(p);
  if (!text) return std::nullopt;
  try {
    return std::stoull(*text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}
}  // namespace

IbBytes read_ib_bytes(const std::filesystem::path& root) {
  IbBytes b;
  std::error_code ec;
  for (const auto& dev : std::filesystem::directory_iterator(root, ec)) {
    std::error_code ec2;
    for (const auto& port : std::filesystem::directory_iterator(dev.path() / "ports", ec2)) {
      const auto rx = read_counter(port.path() / "counters" / "port_rcv_data");
      const auto tx = read_counter(port.path() / "counters" / "port_xmit_data");
      if (!rx || !tx) continue;
      b.rx += *rx * 4;
      b.tx += *tx * 4;
      ++b.ports;
    }
  }
  return b;
}

std::optional<double> rate(std::uint64_t before, std::uint64_t after, double seconds) {
  if (after < before || seconds <= 0) return std::nullopt;
  return static_cast<double>(after - before) / seconds;
}

}  // namespace kiln::worker::host
