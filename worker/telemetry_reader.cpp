// The node telemetry's readings (worker/telemetry.hpp): host figures from /proc and the HCAs'
// sysfs, per-GPU figures from NVML. A figure that cannot be read is left out of the reading (a
// missing NVML symbol costs that field only); nothing here throws.
#include <chrono>

#include "worker/telemetry.hpp"

namespace kiln::worker::telemetry {

namespace nv = gpu::nvml;

namespace {
double steady_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
constexpr double kGiB = 1024.0 * 1024 * 1024;
}  // namespace

Reader::Reader(std::filesystem::path proc, std::filesystem::path ib_root, std::shared_ptr<nv::Lib> nvml)
    : proc_(std::move(proc)), ib_root_(std::move(ib_root)), nvml_(std::move(nvml)) {
  if (!nvml_) return;
  const int n = nvml_->count();
  for (int i = 0; i < n; ++i) {
    int rc = 0;
    devices_.push_back(nvml_->handle(static_cast<unsigned>(i), &rc));  // nullptr: a GPU NVML cannot reach
  }
  gpu_prev_.resize(devices_.size());
}

void Reader::read_host(Fields& out, double dt) {
  if (const auto text = host::read_file(proc_ / "stat")) {
    if (const auto cpu = host::parse_proc_stat(*text)) {
      if (cpu_prev_ && dt > 0)
        if (const auto pct = host::cpu_percent(*cpu_prev_, *cpu)) out["cpu_pct"] = *pct;
      cpu_prev_ = cpu;
    }
  }
  if (const auto text = host::read_file(proc_ / "meminfo")) {
    if (const auto m = host::parse_meminfo(*text); m && m->total_kib > 0) {
      const double used = static_cast<double>(m->total_kib - m->available_kib);
      out["mem_used_gib"] = used * 1024 / kGiB;
      out["mem_used_pct"] = 100.0 * used / static_cast<double>(m->total_kib);
    }
  }
  const auto ib = host::read_ib_bytes(ib_root_);
  if (ib.ports == 0) return;
  if (ib_prev_ && ib_prev_->ports == ib.ports) {
    if (const auto r = host::rate(ib_prev_->rx, ib.rx, dt)) out["ib_rx_MB_s"] = *r / 1e6;
    if (const auto r = host::rate(ib_prev_->tx, ib.tx, dt)) out["ib_tx_MB_s"] = *r / 1e6;
  }
  ib_prev_ = ib;
}

Fields Reader::read_gpu(nv::Device d, GpuCounters& c, double dt) const {
  Fields f;
  double w = 0;
  if (nvml_->power_w(d, &w) == nv::kSuccess) f["power_w"] = w;
  unsigned u = 0;
  if (nvml_->temperature_c(d, &u) == nv::kSuccess) f["temp_c"] = u;
  if (nvml_->clock(d, /*SM*/ 1, &u, nullptr) == nv::kSuccess) f["sm_mhz"] = u;
  if (nvml_->clock(d, /*memory*/ 2, &u, nullptr) == nv::kSuccess) f["mem_mhz"] = u;
  std::uint64_t v = 0;
  if (nvml_->throttle_reasons(d, &v) == nv::kSuccess) f["throttle"] = static_cast<double>(v);
  if (nvml_->ecc_count(d, /*corrected*/ 0, /*volatile*/ 0, &v) == nv::kSuccess) f["ecc_corr"] = static_cast<double>(v);
  if (nvml_->ecc_count(d, /*uncorrected*/ 1, /*volatile*/ 0, &v) == nv::kSuccess) f["ecc_unc"] = static_cast<double>(v);
  if (nvml_->pcie_throughput_kbps(d, /*tx*/ 0, &u) == nv::kSuccess) f["pcie_tx_MB_s"] = u / 1000.0;
  if (nvml_->pcie_throughput_kbps(d, /*rx*/ 1, &u) == nv::kSuccess) f["pcie_rx_MB_s"] = u / 1000.0;
  std::uint64_t tx = 0, rx = 0;
  if (nvml_->nvlink_data_kib(d, &tx, &rx) == nv::kSuccess) {
    if (c.nvlink_kib && dt > 0) {
      if (const auto r = host::rate(c.nvlink_kib->first, tx, dt)) f["nvlink_tx_MB_s"] = *r * 1024 / 1e6;
      if (const auto r = host::rate(c.nvlink_kib->second, rx, dt)) f["nvlink_rx_MB_s"] = *r * 1024 / 1e6;
    }
    c.nvlink_kib = std::make_pair(tx, rx);
  }
  return f;
}

Sample Reader::read(double t_s) {
  const double now = steady_now();
  const double dt = last_s_ < 0 ? 0 : now - last_s_;
  last_s_ = now;
  Sample s;
  s.t_s = t_s;
  read_host(s.node, dt);
  for (std::size_t i = 0; i < devices_.size(); ++i)
    s.gpus.push_back(devices_[i] ? read_gpu(devices_[i], gpu_prev_[i], dt) : Fields{});
  return s;
}

}  // namespace kiln::worker::telemetry
