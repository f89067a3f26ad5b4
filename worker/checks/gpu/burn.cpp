// gpu.burn: every GPU of the node busy at once with verified cuBLAS tensor-core GEMMs (one host
// thread per GPU, burn_engine.cpp), TFLOP/s and NVML power/temperature/clock/throttle sampled at
// 1 Hz and streamed as telemetry, then per-GPU verdicts: wrong results, slower than its peers or
// the spec, abnormal throttling.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <thread>

#include "worker/checks/gpu/burn_engine.hpp"
#include "worker/checks/gpu/common.hpp"
#include "worker/hw/nvml.hpp"

namespace kiln::worker::gpu {
namespace {

using nlohmann::json;
constexpr const char* kKey = "gpu.burn";

class GpuBurn final : public Check {
 public:
  std::string key() const override { return kKey; }
  std::string description() const override {
    return "Verified cuBLAS tensor-core GEMM burn on every GPU at once, with 1 Hz telemetry";
  }
  Scope scope() const override { return Scope::PerNode; }
  double default_deadline_s() const override { return 900.0; }
  std::optional<std::string> applicable(const NodeInfo& node) const override {
    return cuda_skip_reason(node);
  }
  void run(Context& ctx, ResultSink& sink) override;
};

#if !KILN_HAVE_CUDA
void GpuBurn::run(Context&, ResultSink& sink) {
  sink.emit(make_result(kKey, {}, "burn", 0, "", Status::Skip, "built without CUDA"));
}
#else

// What the sampler keeps of one GPU's 1 Hz telemetry for the verdicts.
struct Telemetry {
  std::vector<double> tflops, power_w, temp_c, sm_mhz;
  int samples = 0, abnormal = 0;
  std::map<std::string, int> reasons;
};

double to_seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

void GpuBurn::run(Context& ctx, ResultSink& raw_sink) {
  LockedSink sink(raw_sink);
  const std::string& host = ctx.node.host;
  const DrillPlan drill = parse_drill(ctx.faults.spec, kKey, host);
  auto lib = nvml::shared();
  if (lib) nvml::XidWatcher::instance().start(lib, nullptr);
  const auto gpus = list_gpus(lib.get());
  if (gpus.empty()) {
    sink.emit(make_result(kKey, node_entity(host), "burn", 0, "", Status::Skip, "no GPU visible to CUDA"));
    return;
  }

  BurnConfig cfg;
  cfg.dtype_name = ctx.param<std::string>("dtype", "bf16");
  cfg.dtype = parse_dtype(cfg.dtype_name);
  cfg.n = ctx.param("size", 8192);
  if (cfg.n < 256 || cfg.n % 64 != 0) throw std::invalid_argument("size must be a multiple of 64, >= 256");
  cfg.warmup_s = ctx.param("warmup_s", 3.0);
  cfg.verify_every = std::max(1, ctx.param("verify_every", 8));
  cfg.host_samples = ctx.param("host_samples", 64);
  // Leave time after the loop for the verdicts; the GEMM loop itself stops on the host clock.
  cfg.duration_s = std::min(ctx.param("duration_s", 60.0), std::max(1.0, ctx.seconds_left() - 20.0));
  cfg.deadline = ctx.deadline - std::chrono::seconds(5);
  const double peer_tol = ctx.param("peer_tolerance", 0.10);
  const double min_tflops = ctx.param("min_tflops", 0.0);
  const double max_abnormal_frac = ctx.param("max_throttle_fraction", 0.05);
  const double max_temp = ctx.param("max_temp_c", 0.0);

  const std::size_t n = gpus.size();
  std::vector<std::shared_ptr<BurnState>> states;
  std::vector<std::thread> threads;
  const double started_unix = nvml::unix_now();
  const auto t0 = Clock::now();
  for (const auto& g : gpus) {
    auto st = std::make_shared<BurnState>();
    BurnConfig c = cfg;
    c.bitflip = drill.active && drill.bitflip_gpu == g.index;
    if (drill.active && drill.slow_gpu == g.index) c.slow_factor = drill.slow_factor;
    states.push_back(st);
    threads.emplace_back([g, c, st] { run_burn_engine(g, c, *st); });
  }

  // 1 Hz sampler: TFLOP/s from each engine's completed GPU time, power/temperature/clock/throttle
  // from NVML, streamed as telemetry and kept for the verdicts.
  std::vector<Telemetry> tel(n);
  std::vector<std::pair<double, double>> last(n, {0.0, 0.0});
  auto next = t0 + std::chrono::seconds(1);
  for (;;) {
    bool all_done = true;
    for (auto& st : states) {
      std::lock_guard<std::mutex> lock(st->mu);
      all_done &= st->done || st->timed_out;
    }
    if (all_done || Clock::now() > ctx.deadline) break;
    std::this_thread::sleep_until(next);
    next += std::chrono::seconds(1);
    const double t = to_seconds(Clock::now() - t0);
    for (std::size_t i = 0; i < n; ++i) {
      double flops, ms;
      {
        std::lock_guard<std::mutex> lock(states[i]->mu);
        flops = states[i]->flops;
        ms = states[i]->gpu_ms;
      }
      const double d_ms = ms - last[i].second;
      const double tflops = d_ms > 0 ? (flops - last[i].first) / (d_ms * 1e-3) / 1e12 : 0.0;
      last[i] = {flops, ms};
      const bool steady = t > cfg.warmup_s;
      const Entity ent = gpu_entity(host, gpus[i].index);
      json base = {{"telemetry", true}, {"t_s", std::round(t * 10) / 10}};
      if (d_ms > 0) {
        Result r = make_result(kKey, ent, "tflops_1s", tflops, "TFLOP/s");
        r.extra = base;
        sink.emit(std::move(r));
        if (steady) tel[i].tflops.push_back(tflops);
      }
      if (!lib || !gpus[i].nvml) continue;
      double watts = 0;
      unsigned temp = 0, sm = 0;
      std::uint64_t reasons = 0;
      json x = base;
      if (lib->power_w(gpus[i].nvml, &watts) == nvml::kSuccess) {
        Result r = make_result(kKey, ent, "power", watts, "W");
        r.extra = x;
        sink.emit(std::move(r));
        if (steady) tel[i].power_w.push_back(watts);
      }
      if (lib->temperature_c(gpus[i].nvml, &temp) == nvml::kSuccess) {
        Result r = make_result(kKey, ent, "temperature", temp, "C");
        r.extra = x;
        sink.emit(std::move(r));
        if (steady) tel[i].temp_c.push_back(temp);
      }
      if (lib->clock(gpus[i].nvml, 1, &sm, nullptr) == nvml::kSuccess) {
        Result r = make_result(kKey, ent, "sm_clock", sm, "MHz");
        r.extra = x;
        if (lib->throttle_reasons(gpus[i].nvml, &reasons) == nvml::kSuccess) {
          r.extra["throttle_reasons"] = throttle::names(reasons);
          if (steady) {
            ++tel[i].samples;
            if (throttle::abnormal(reasons)) ++tel[i].abnormal;
            for (const auto& name : throttle::names(reasons)) ++tel[i].reasons[name];
          }
        }
        sink.emit(std::move(r));
        if (steady) tel[i].sm_mhz.push_back(sm);
      }
    }
  }
  // Engines stop on their own at duration_s or the deadline; one stuck in the driver is left
  // behind (detached, it owns its state) and reported as TIMEOUT rather than hanging the worker.
  const auto join_by = ctx.deadline;
  for (std::size_t i = 0; i < n; ++i) {
    for (;;) {
      bool done;
      {
        std::lock_guard<std::mutex> lock(states[i]->mu);
        done = states[i]->done;
      }
      if (done) {
        threads[i].join();
        break;
      }
      if (Clock::now() >= join_by) {
        threads[i].detach();
        std::lock_guard<std::mutex> lock(states[i]->mu);
        states[i]->timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // Cross-GPU agreement: GPUs of one model and SM count must produce bit-identical results
  // (cuBLAS is deterministic for a given architecture, SM count and version).
  std::map<std::string, std::vector<std::size_t>> classes;
  for (std::size_t i = 0; i < n; ++i)
    classes[gpus[i].name + "/" + std::to_string(gpus[i].sm_count)].push_back(i);
  std::vector<bool> disagrees(n, false);
  for (const auto& [cls, members] : classes) {
    std::vector<std::uint64_t> prints;
    std::vector<std::size_t> live;
    for (auto i : members) {
      std::lock_guard<std::mutex> lock(states[i]->mu);
      if (states[i]->error.empty() && !states[i]->timed_out && states[i]->gemms > 0) {
        prints.push_back(states[i]->golden_checksum);
        live.push_back(i);
      }
    }
    for (auto k : minority(prints)) disagrees[live[k]] = true;
  }

  // Per-GPU throughput for the peer comparison (only GPUs that ran to the end).
  std::vector<double> rates;
  std::vector<std::size_t> rated;
  for (std::size_t i = 0; i < n; ++i) {
    std::lock_guard<std::mutex> lock(states[i]->mu);
    if (states[i]->error.empty() && !states[i]->timed_out && states[i]->gpu_ms_steady > 0) {
      rates.push_back(states[i]->flops_steady / (states[i]->gpu_ms_steady * 1e-3) / 1e12);
      rated.push_back(i);
    }
  }
  const auto peers = peer_outliers(rates, peer_tol);
  const auto xids = nvml::XidWatcher::instance().since(started_unix);

  for (std::size_t i = 0; i < n; ++i) {
    const GpuInfo& g = gpus[i];
    const Entity ent = gpu_entity(host, g.index);
    std::lock_guard<std::mutex> lock(states[i]->mu);
    const BurnState& st = *states[i];
    json common = {{"dtype", cfg.dtype_name}, {"size", cfg.n}, {"cuda_ordinal", g.ordinal},
                   {"name", g.name}};
    if (!st.error.empty() || st.timed_out) {
      Result r = make_result(kKey, ent, "burn", 0, "",
                             st.timed_out ? Status::Timeout
                                          : (st.hardware_error ? Status::Fail : Status::Error),
                             st.timed_out ? "GPU did not finish its GEMMs before the deadline" : st.error);
      r.extra = common;
      r.extra["finding"] = st.timed_out ? "gpu.hang" : (st.hardware_error ? "gpu.lost" : "gpu.cuda");
      sink.emit(std::move(r));
      continue;
    }
    // Wrong answers: elements that differ from this GPU's first result, a first result that
    // disagrees with the host reference, or one that disagrees with the other GPUs.
    json xid_list = json::array();
    for (const auto& x : xids)
      if (x.gpu_index == g.index) xid_list.push_back(x.xid);
    Result err = make_result(kKey, ent, "errors", static_cast<double>(st.wrong_elements), "elements");
    err.extra = common;
    err.extra.update({{"verified_gemms", st.checks}, {"gemms", st.gemms},
                      {"bad_checks", st.bad_checks}, {"verify_every", cfg.verify_every},
                      {"golden_checksum", st.golden_checksum},
                      {"host_check", {{"samples", st.host_checked}, {"bad", st.host_bad},
                                      {"max_rel_err", st.host_max_rel_err}}},
                      {"agrees_with_peers", !disagrees[i]}, {"xids", xid_list},
                      {"finding", "gpu.sdc"}});
    if (st.first_bad_gemm >= 0)
      err.extra.update({{"first_bad_gemm", st.first_bad_gemm}, {"first_bad_element", st.first_bad_element}});
    std::string why;
    if (st.wrong_elements)
      why = std::to_string(st.wrong_elements) + " wrong element(s) in " + std::to_string(st.bad_checks) +
            " of " + std::to_string(st.checks) + " verified GEMMs (first at GEMM " +
            std::to_string(st.first_bad_gemm) + ")";
    if (st.host_bad)
      why += (why.empty() ? "" : "; ") + std::to_string(st.host_bad) + " of " +
             std::to_string(st.host_checked) + " sampled outputs differ from the float64 reference";
    if (disagrees[i]) why += (why.empty() ? "" : "; ") + std::string("result differs from the other GPUs'");
    if (!xid_list.empty()) {
      why += (why.empty() ? "" : "; ") + std::to_string(xid_list.size()) + " XID error(s) during the burn";
      err.extra["finding"] = "gpu.xid";
    }
    if (!why.empty()) {
      err.status = Status::Fail;
      err.reason = why;
    }
    sink.emit(std::move(err));

    // Throughput against peers and spec.
    const auto pos = std::find(rated.begin(), rated.end(), i) - rated.begin();
    const double rate = static_cast<std::size_t>(pos) < rated.size() ? rates[pos] : 0.0;
    Result tf = make_result(kKey, ent, "tflops", rate, "TFLOP/s");
    const Telemetry& t = tel[i];
    tf.extra = common;
    tf.extra.update({{"duration_s", to_seconds(Clock::now() - t0)}, {"min_tflops", min_tflops},
                     {"per_second", {{"n", t.tflops.size()}, {"median", median(t.tflops)},
                                     {"min", t.tflops.empty() ? 0.0 : *std::min_element(t.tflops.begin(), t.tflops.end())},
                                     {"max", t.tflops.empty() ? 0.0 : *std::max_element(t.tflops.begin(), t.tflops.end())}}},
                     {"finding", "gpu.slow"}});
    std::string slow;
    if (static_cast<std::size_t>(pos) < rated.size() && rated.size() > 1) {
      const auto& pv = peers[pos];
      tf.extra["peer_reference"] = pv.reference;
      tf.extra["peer_deficit"] = pv.deficit;
      if (pv.outlier) {
        slow = std::to_string(static_cast<int>(std::lround(pv.deficit * 100))) + "% slower than its peers (" +
               std::to_string(static_cast<int>(rate)) + " vs " + std::to_string(static_cast<int>(pv.reference)) + " TFLOP/s)";
        tf.extra["outlier"] = true;
      }
    }
    if (min_tflops > 0 && rate < min_tflops)
      slow += (slow.empty() ? "" : "; ") + std::to_string(static_cast<int>(rate)) + " TFLOP/s is below the spec's " +
              std::to_string(static_cast<int>(min_tflops));
    if (!slow.empty()) {
      tf.status = Status::Fail;
      tf.reason = slow;
    }
    sink.emit(std::move(tf));

    // Throttling other than the normal power cap, and temperature.
    if (t.samples > 0 || !t.power_w.empty()) {
      const double frac = t.samples ? static_cast<double>(t.abnormal) / t.samples : 0.0;
      Result th = make_result(kKey, ent, "throttle", frac, "fraction");
      th.extra = common;
      th.extra.update({{"samples", t.samples}, {"reasons", t.reasons},
                       {"power_w", {{"median", median(t.power_w)},
                                    {"max", t.power_w.empty() ? 0.0 : *std::max_element(t.power_w.begin(), t.power_w.end())}}},
                       {"temperature_c", {{"median", median(t.temp_c)},
                                          {"max", t.temp_c.empty() ? 0.0 : *std::max_element(t.temp_c.begin(), t.temp_c.end())}}},
                       {"sm_clock_mhz", {{"median", median(t.sm_mhz)},
                                         {"min", t.sm_mhz.empty() ? 0.0 : *std::min_element(t.sm_mhz.begin(), t.sm_mhz.end())}}},
                       {"finding", "gpu.throttle"}});
      std::string hot;
      if (frac > max_abnormal_frac)
        hot = "clocks held down by thermal/hardware slowdown in " + std::to_string(t.abnormal) + " of " +
              std::to_string(t.samples) + " samples";
      const double tmax = t.temp_c.empty() ? 0.0 : *std::max_element(t.temp_c.begin(), t.temp_c.end());
      if (max_temp > 0 && tmax > max_temp)
        hot += (hot.empty() ? "" : "; ") + std::to_string(static_cast<int>(tmax)) + " C exceeds the spec's " +
               std::to_string(static_cast<int>(max_temp)) + " C";
      if (!hot.empty()) {
        th.status = Status::Fail;
        th.reason = hot;
      }
      sink.emit(std::move(th));
    }
  }
}
#endif  // KILN_HAVE_CUDA

KILN_REGISTER_CHECK(GpuBurn);

}  // namespace
}  // namespace kiln::worker::gpu
