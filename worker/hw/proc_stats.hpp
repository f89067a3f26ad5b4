// Host figures for the node telemetry, read from /proc and the HCAs' sysfs: pure parsers over text
// (unit-tested on recorded files in tests/data/proc/) and thin readers with a configurable root.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::worker::host {

// The aggregate "cpu" line of /proc/stat, in jiffies since boot.
struct CpuTimes {
  std::uint64_t busy = 0;   // everything but idle and iowait
  std::uint64_t total = 0;  // user..steal (guest time is already inside user)
};
std::optional<CpuTimes> parse_proc_stat(std::string_view text);
// Busy share of the CPUs between two readings, in percent; nullopt when no time passed.
std::optional<double> cpu_percent(const CpuTimes& before, const CpuTimes& after);

struct MemInfo {
  std::uint64_t total_kib = 0;
  std::uint64_t available_kib = 0;  // MemAvailable: what can be had without swapping
};
std::optional<MemInfo> parse_meminfo(std::string_view text);

// The data counters of every HCA port, summed, in bytes (the kernel counts 4-byte words).
struct IbBytes {
  std::uint64_t rx = 0;
  std::uint64_t tx = 0;
  int ports = 0;
};
IbBytes read_ib_bytes(const std::filesystem::path& root);

// A counter's rate between two readings, per second; a counter that went back (reset or wrapped)
// gives nullopt rather than a huge or negative rate.
std::optional<double> rate(std::uint64_t before, std::uint64_t after, double seconds);

std::optional<std::string> read_file(const std::filesystem::path& p);

}  // namespace kiln::worker::host
