// Node-wide telemetry during every check (docs/telemetry.md): one sampler thread per node, in the
// node's lowest local rank, reads the host (/proc, HCA sysfs) and every GPU (NVML, when loadable)
// once per interval while a check runs, streams each reading as a result of that check (metric
// "telemetry", about the node), and at the check's end its summary (metric "telemetry_summary":
// [min, median, max] of every field). Results that always pass: the coordinator stores them and
// never keeps them in memory for judgement; report.html plots them.
//
// Threading: the sampler's own thread reads and emits; begin()/end() are called by the runner's
// thread between checks. The emit function must be safe to call from both (the Runner's is).
#pragma once

#include "common/telemetry_metrics.hpp"

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/types.hpp"
#include "worker/hw/nvml.hpp"
#include "worker/hw/proc_stats.hpp"

namespace kiln::worker::telemetry {

using Fields = std::map<std::string, double>;  // field name -> finite value

// One reading of the node.
struct Sample {
  double t_s = 0;            // seconds since the check began
  Fields node;               // cpu_pct, mem_used_gib, mem_used_pct, ib_rx_MB_s, ib_tx_MB_s
  std::vector<Fields> gpus;  // by NVML index: power_w, temp_c, sm_mhz, mem_mhz, throttle, ...
};

// [min, median, max] of every field over a check's samples; a field some samples lack (NVML
// refused it once) is summarised over the samples that have it.
using Span = std::array<double, 3>;
struct Summary {
  int samples = 0;
  std::map<std::string, Span> node;
  std::vector<std::map<std::string, Span>> gpus;
};
Summary summarize(const std::vector<Sample>& samples);

inline constexpr const char* kSampleMetric = kiln::kTelemetryMetric;
inline constexpr const char* kSummaryMetric = kiln::kTelemetrySummaryMetric;

// As results: value is the sample's t_s (unit s), or the summary's sample count; the fields go in
// extra ({"node": {...}, "gpus": [{...}, ...]}, plus "t_s", the check's length, in a summary),
// non-finite values left out. Who, when and which check are the sampler's to fill in.
Result sample_record(const Sample& s);
Result summary_record(const Summary& s, double t_s);

// Reads the node; keeps the previous counters so that the next reading can give rates.
class Reader {
 public:
  Reader(std::filesystem::path proc, std::filesystem::path ib_root, std::shared_ptr<gpu::nvml::Lib> nvml);
  virtual ~Reader() = default;
  // A reading now. Rates (CPU %, throughputs) need a previous reading: the first has none. It may
  // block as long as NVML does on a sick GPU (virtual so that a test can stand in such a reader).
  virtual Sample read(double t_s);

 private:
  struct GpuCounters {
    std::optional<std::pair<std::uint64_t, std::uint64_t>> nvlink_kib;  // tx, rx
  };
  void read_host(Fields& out, double dt);
  Fields read_gpu(gpu::nvml::Device d, GpuCounters& c, double dt) const;
  std::filesystem::path proc_, ib_root_;
  std::shared_ptr<gpu::nvml::Lib> nvml_;
  std::vector<gpu::nvml::Device> devices_;
  std::vector<GpuCounters> gpu_prev_;
  std::optional<host::CpuTimes> cpu_prev_;
  std::optional<host::IbBytes> ib_prev_;
  double last_s_ = -1;  // steady-clock seconds of the previous reading
};

class Sampler {
 public:
  using Emit = std::function<void(const Record&)>;
  // interval_s > 0. The reader is used by the sampler's thread only, and never under mu_: begin()
  // and end() run on the check's thread, and a reading that hangs (NVML on a sick GPU) must not
  // stall the start or end of every check.
  Sampler(double interval_s, std::unique_ptr<Reader> reader, const NodeInfo& node, Emit emit);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;
  void begin(const std::string& test, std::int64_t round_id);  // a check starts
  // The check ended: a last reading (waited for up to kTailWait), then its summary.
  void end();
  static constexpr std::chrono::milliseconds kTailWait{2000};

 private:
  void loop();
  // Called with l holding mu_: reads with mu_ released, then keeps and emits the reading unless
  // the check it was taken for has been summarized meanwhile (gen_ moved on).
  void take(std::unique_lock<std::mutex>& l, double t_s);
  Result stamped(Result r) const;
  double interval_s_;
  std::unique_ptr<Reader> reader_;
  const NodeInfo& node_;
  Emit emit_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool active_ = false;
  std::uint64_t gen_ = 0;      // moves on at every begin() and at every summary
  bool baseline_due_ = false;  // begin() asks the thread for the rates' baseline reading
  bool tail_due_ = false;      // end() asks the thread for the last reading...
  bool tail_done_ = false;     // ...and waits for this
  double tail_t_ = 0;          // when end() was called, from the check's start
  std::string test_;
  std::int64_t round_ = -1;
  double t0_ = 0;
  std::vector<Sample> samples_;
  std::thread thread_;
};

// Kept in memory per check for its summary: a day at 1 Hz. Past it, readings still stream but the
// summary covers the first day.
inline constexpr std::size_t kMaxKeptSamples = 86400;

// The node's sampler, or nullptr when telemetry is off (interval 0) or this rank is not the node's
// lowest local rank. Reads /proc, KILN_IB_SYSFS_ROOT (else /sys/class/infiniband) and NVML.
std::unique_ptr<Sampler> node_sampler(double interval_s, const NodeInfo& node, Sampler::Emit emit);

}  // namespace kiln::worker::telemetry
