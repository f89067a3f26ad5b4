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
#include "worker/checks/gpu/gpu_check.hpp"
#include "worker/hw/nvml.hpp"

namespace kiln::worker::gpu {
namespace {

using nlohmann::json;
constexpr const char* kKey = "gpu.burn";

class GpuBurn final : public GpuCheck {
 public:
  std::string key() const override { return kKey; }

 protected:
  bool has_drills() const override { return true; }
  bool watches_xids() const override { return true; }
#if KILN_HAVE_CUDA
  void measure(Context& ctx, ResultSink& sink, const NodeGpus& node) override;
#endif
};

#if KILN_HAVE_CUDA

// What the sampler keeps of one GPU's 1 Hz telemetry for the verdicts.
struct Telemetry {
  std::vector<double> tflops, power_w, temp_c, sm_mhz;
  int samples = 0, abnormal = 0;
  std::map<std::string, int> reasons;
};

// The round's verdict thresholds.
struct Limits {
  double peer_tol = 0.10;
  double min_tflops = 0.0;
  double max_abnormal_frac = 0.05;
  double max_temp = 0.0;
};

double to_seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

BurnConfig parse_config(const Context& ctx) {
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
  return cfg;
}

Limits parse_limits(const Context& ctx) {
  Limits l;
  l.peer_tol = ctx.param("peer_tolerance", 0.10);
  l.min_tflops = ctx.param("min_tflops", 0.0);
  l.max_abnormal_frac = ctx.param("max_throttle_fraction", 0.05);
  l.max_temp = ctx.param("max_temp_c", 0.0);
  return l;
}

// One engine per GPU, each on its own thread. The state is shared with the thread so that an
// engine left behind in the driver (detached) never writes to freed memory.
struct Engines {
  std::vector<std::shared_ptr<BurnState>> states;
  std::vector<std::thread> threads;

  bool all_stopped() const {
    bool all_done = true;
    for (auto& st : states) {
      std::lock_guard<std::mutex> lock(st->mu);
      all_done &= st->done || st->timed_out;
    }
    return all_done;
  }
};

Engines start_engines(const std::vector<GpuInfo>& gpus, const BurnConfig& cfg, const DrillPlan& drill) {
  Engines e;
  for (const auto& g : gpus) {
    auto st = std::make_shared<BurnState>();
    BurnConfig c = cfg;
    c.bitflip = drill.active && drill.bitflip_gpu == g.index;
    if (drill.active && drill.slow_gpu == g.index) c.slow_factor = drill.slow_factor;
    e.states.push_back(st);
    e.threads.emplace_back([g, c, st] { run_burn_engine(g, c, *st); });
  }
  return e;
}

// TFLOP/s over the last second from the engine's completed GPU time; `last` is the previous
// sample's (flops, gpu_ms).
void sample_rate(ResultSink& sink, const BurnState& st, std::pair<double, double>& last,
                 const Entity& ent, const json& base, bool steady, Telemetry& tel) {
  double flops, ms;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    flops = st.flops;
    ms = st.gpu_ms;
  }
  const double d_ms = ms - last.second;
  const double tflops = d_ms > 0 ? (flops - last.first) / (d_ms * 1e-3) / 1e12 : 0.0;
  last = {flops, ms};
  if (d_ms > 0) {
    Result r = make_result(kKey, ent, "tflops_1s", tflops, "TFLOP/s");
    r.extra = base;
    sink.emit(std::move(r));
    if (steady) tel.tflops.push_back(tflops);
  }
}

// Power, temperature, SM clock and throttle reasons of one GPU from NVML.
void sample_nvml(ResultSink& sink, const nvml::Lib& lib, nvml::Device dev, const Entity& ent,
                 const json& base, bool steady, Telemetry& tel) {
  double watts = 0;
  unsigned temp = 0, sm = 0;
  std::uint64_t reasons = 0;
  json x = base;
  if (lib.power_w(dev, &watts) == nvml::kSuccess) {
    Result r = make_result(kKey, ent, "power", watts, "W");
    r.extra = x;
    sink.emit(std::move(r));
    if (steady) tel.power_w.push_back(watts);
  }
  if (lib.temperature_c(dev, &temp) == nvml::kSuccess) {
    Result r = make_result(kKey, ent, "temperature", temp, "C");
    r.extra = x;
    sink.emit(std::move(r));
    if (steady) tel.temp_c.push_back(temp);
  }
  if (lib.clock(dev, 1, &sm, nullptr) == nvml::kSuccess) {
    Result r = make_result(kKey, ent, "sm_clock", sm, "MHz");
    r.extra = x;
    if (lib.throttle_reasons(dev, &reasons) == nvml::kSuccess) {
      r.extra["throttle_reasons"] = throttle::names(reasons);
      if (steady) {
        ++tel.samples;
        if (throttle::abnormal(reasons)) ++tel.abnormal;
        for (const auto& name : throttle::names(reasons)) ++tel.reasons[name];
      }
    }
    sink.emit(std::move(r));
    if (steady) tel.sm_mhz.push_back(sm);
  }
}

// 1 Hz until every engine stopped or the deadline passed: each sample is streamed as telemetry,
// and what falls after the warm-up is kept for the verdicts.
std::vector<Telemetry> sample(const Context& ctx, ResultSink& sink, const NodeGpus& node,
                              const Engines& engines, Clock::time_point t0, double warmup_s) {
  const auto& gpus = node.list;
  const std::size_t n = gpus.size();
  std::vector<Telemetry> tel(n);
  std::vector<std::pair<double, double>> last(n, {0.0, 0.0});
  auto next = t0 + std::chrono::seconds(1);
  for (;;) {
    if (engines.all_stopped() || Clock::now() > ctx.deadline) break;
    std::this_thread::sleep_until(next);
    next += std::chrono::seconds(1);
    const double t = to_seconds(Clock::now() - t0);
    for (std::size_t i = 0; i < n; ++i) {
      const bool steady = t > warmup_s;
      const Entity ent = gpu_entity(node.host, gpus[i].index);
      json base = {{"telemetry", true}, {"t_s", std::round(t * 10) / 10}};
      sample_rate(sink, *engines.states[i], last[i], ent, base, steady, tel[i]);
      if (!node.lib || !gpus[i].nvml) continue;
      sample_nvml(sink, *node.lib, gpus[i].nvml, ent, base, steady, tel[i]);
    }
  }
  return tel;
}

// Engines stop on their own at duration_s or the deadline; one stuck in the driver is left
// behind (detached, it owns its state) and reported as TIMEOUT rather than hanging the worker.
void join_engines(Engines& e, Clock::time_point join_by) {
  for (std::size_t i = 0; i < e.threads.size(); ++i) {
    for (;;) {
      bool done;
      {
        std::lock_guard<std::mutex> lock(e.states[i]->mu);
        done = e.states[i]->done;
      }
      if (done) {
        e.threads[i].join();
        break;
      }
      if (Clock::now() >= join_by) {
        e.threads[i].detach();
        std::lock_guard<std::mutex> lock(e.states[i]->mu);
        e.states[i]->timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

// What the per-GPU verdicts compare each GPU with, once every engine has stopped.
struct NodeFigures {
  std::vector<bool> disagrees;      // first result differs from its class's majority
  std::vector<double> rates;        // sustained TFLOP/s of the GPUs that ran to the end
  std::vector<std::size_t> rated;   // their positions in the GPU list
  std::vector<PeerVerdict> peers;   // for rates
  std::vector<nvml::Xid> xids;      // seen since the engines started
};

// Cross-GPU agreement: GPUs of one model and SM count must produce bit-identical results
// (cuBLAS is deterministic for a given architecture, SM count and version).
std::vector<bool> disagreements(const std::vector<GpuInfo>& gpus, const Engines& e) {
  const std::size_t n = gpus.size();
  std::map<std::string, std::vector<std::size_t>> classes;
  for (std::size_t i = 0; i < n; ++i)
    classes[gpus[i].name + "/" + std::to_string(gpus[i].sm_count)].push_back(i);
  std::vector<bool> disagrees(n, false);
  for (const auto& [cls, members] : classes) {
    std::vector<std::uint64_t> prints;
    std::vector<std::size_t> live;
    for (auto i : members) {
      std::lock_guard<std::mutex> lock(e.states[i]->mu);
      if (e.states[i]->error.empty() && !e.states[i]->timed_out && e.states[i]->gemms > 0) {
        prints.push_back(e.states[i]->golden_checksum);
        live.push_back(i);
      }
    }
    for (auto k : minority(prints)) disagrees[live[k]] = true;
  }
  return disagrees;
}

NodeFigures node_figures(const std::vector<GpuInfo>& gpus, const Engines& e, double peer_tol,
                         double started_unix) {
  NodeFigures f;
  f.disagrees = disagreements(gpus, e);
  // Per-GPU throughput for the peer comparison (only GPUs that ran to the end).
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    std::lock_guard<std::mutex> lock(e.states[i]->mu);
    if (e.states[i]->error.empty() && !e.states[i]->timed_out && e.states[i]->gpu_ms_steady > 0) {
      f.rates.push_back(e.states[i]->flops_steady / (e.states[i]->gpu_ms_steady * 1e-3) / 1e12);
      f.rated.push_back(i);
    }
  }
  f.peers = peer_outliers(f.rates, peer_tol);
  f.xids = nvml::XidWatcher::instance().since(started_unix);
  return f;
}

// The per-GPU verdicts: judge() is called for each GPU with its engine's state locked.
struct Verdicts {
  ResultSink& sink;
  const BurnConfig& cfg;
  const Limits& lim;
  const NodeFigures& fig;
  Clock::time_point t0;

  void judge(const Entity& ent, const GpuInfo& g, std::size_t i, const BurnState& st, const Telemetry& t) const {
    json common = {{"dtype", cfg.dtype_name}, {"size", cfg.n}, {"cuda_ordinal", g.ordinal},
                   {"name", g.name}};
    if (!st.error.empty() || st.timed_out) return stopped(ent, common, st);
    wrong_results(ent, common, g, i, st);
    throughput(ent, common, i, t);
    throttling(ent, common, t);
  }

  // An engine that stopped on an error or never finished has no figures to judge.
  void stopped(const Entity& ent, const json& common, const BurnState& st) const {
    Result r = make_result(kKey, ent, "burn", 0, "");
    r.extra = common;
    if (st.timed_out) {
      r.status = Status::Timeout;
      r.reason = "GPU did not finish its GEMMs before the deadline";
      r.problems.push_back({Code::GpuHang, r.reason});
    } else {
      report_failure(r, {st.error, st.hardware_error});
    }
    sink.emit(std::move(r));
  }

  // Wrong answers: elements that differ from this GPU's first result, a first result that
  // disagrees with the host reference, or one that disagrees with the other GPUs.
  void wrong_results(const Entity& ent, const json& common, const GpuInfo& g, std::size_t i,
                     const BurnState& st) const {
    json xid_list = json::array();
    for (const auto& x : fig.xids)
      if (x.gpu_index == g.index) xid_list.push_back(x.xid);
    Result err = make_result(kKey, ent, "errors", static_cast<double>(st.wrong_elements), "elements");
    err.extra = common;
    err.extra.update({{"verified_gemms", st.checks}, {"gemms", st.gemms},
                      {"bad_checks", st.bad_checks}, {"verify_every", cfg.verify_every},
                      {"golden_checksum", st.golden_checksum},
                      {"host_check", {{"samples", st.host_checked}, {"bad", st.host_bad},
                                      {"max_rel_err", st.host_max_rel_err}}},
                      {"agrees_with_peers", !fig.disagrees[i]}, {"xids", xid_list}});
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
    if (fig.disagrees[i]) why += (why.empty() ? "" : "; ") + std::string("result differs from the other GPUs'");
    if (!why.empty()) err.problems.push_back({Code::GpuSdc, why});
    if (!xid_list.empty()) {
      const std::string xids = std::to_string(xid_list.size()) + " XID error(s) during the burn";
      err.problems.push_back({Code::GpuXid, xids});
      why += (why.empty() ? "" : "; ") + xids;
    }
    if (!why.empty()) {
      err.status = Status::Fail;
      err.reason = why;
    }
    sink.emit(std::move(err));
  }

  // Throughput against peers and spec.
  void throughput(const Entity& ent, const json& common, std::size_t i, const Telemetry& t) const {
    const auto pos = std::find(fig.rated.begin(), fig.rated.end(), i) - fig.rated.begin();
    const double rate = static_cast<std::size_t>(pos) < fig.rated.size() ? fig.rates[pos] : 0.0;
    const double min_tflops = lim.min_tflops;
    Result tf = make_result(kKey, ent, "tflops", rate, "TFLOP/s");
    tf.extra = common;
    tf.extra.update({{"duration_s", to_seconds(Clock::now() - t0)}, {"min_tflops", min_tflops},
                     {"per_second", {{"n", t.tflops.size()}, {"median", median(t.tflops)},
                                     {"min", t.tflops.empty() ? 0.0 : *std::min_element(t.tflops.begin(), t.tflops.end())},
                                     {"max", t.tflops.empty() ? 0.0 : *std::max_element(t.tflops.begin(), t.tflops.end())}}}});
    std::string slow;
    if (static_cast<std::size_t>(pos) < fig.rated.size() && fig.rated.size() > 1) {
      const auto& pv = fig.peers[pos];
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
      tf.problems.push_back({Code::GpuSlow, slow});
    }
    sink.emit(std::move(tf));
  }

  // Throttling other than the normal power cap, and temperature.
  void throttling(const Entity& ent, const json& common, const Telemetry& t) const {
    if (!(t.samples > 0 || !t.power_w.empty())) return;
    const double frac = t.samples ? static_cast<double>(t.abnormal) / t.samples : 0.0;
    Result th = make_result(kKey, ent, "throttle", frac, "fraction");
    th.extra = common;
    th.extra.update({{"samples", t.samples}, {"reasons", t.reasons},
                     {"power_w", {{"median", median(t.power_w)},
                                  {"max", t.power_w.empty() ? 0.0 : *std::max_element(t.power_w.begin(), t.power_w.end())}}},
                     {"temperature_c", {{"median", median(t.temp_c)},
                                        {"max", t.temp_c.empty() ? 0.0 : *std::max_element(t.temp_c.begin(), t.temp_c.end())}}},
                     {"sm_clock_mhz", {{"median", median(t.sm_mhz)},
                                       {"min", t.sm_mhz.empty() ? 0.0 : *std::min_element(t.sm_mhz.begin(), t.sm_mhz.end())}}}});
    std::string hot;
    if (frac > lim.max_abnormal_frac)
      hot = "clocks held down by thermal/hardware slowdown in " + std::to_string(t.abnormal) + " of " +
            std::to_string(t.samples) + " samples";
    const double tmax = t.temp_c.empty() ? 0.0 : *std::max_element(t.temp_c.begin(), t.temp_c.end());
    if (lim.max_temp > 0 && tmax > lim.max_temp)
      hot += (hot.empty() ? "" : "; ") + std::to_string(static_cast<int>(tmax)) + " C exceeds the spec's " +
             std::to_string(static_cast<int>(lim.max_temp)) + " C";
    if (!hot.empty()) {
      th.status = Status::Fail;
      th.reason = hot;
      th.problems.push_back({Code::GpuThrottle, hot});
    }
    sink.emit(std::move(th));
  }
};

void GpuBurn::measure(Context& ctx, ResultSink& sink, const NodeGpus& node) {
  const BurnConfig cfg = parse_config(ctx);
  const Limits lim = parse_limits(ctx);
  const double started_unix = nvml::unix_now();
  const auto t0 = Clock::now();
  Engines engines = start_engines(node.list, cfg, node.drill);
  const std::vector<Telemetry> tel = sample(ctx, sink, node, engines, t0, cfg.warmup_s);
  join_engines(engines, ctx.deadline);
  const NodeFigures fig = node_figures(node.list, engines, lim.peer_tol, started_unix);
  const Verdicts verdicts{sink, cfg, lim, fig, t0};
  for (std::size_t i = 0; i < node.list.size(); ++i) {
    const GpuInfo& g = node.list[i];
    const Entity ent = gpu_entity(node.host, g.index);
    std::lock_guard<std::mutex> lock(engines.states[i]->mu);
    verdicts.judge(ent, g, i, *engines.states[i], tel[i]);
  }
}
#endif  // KILN_HAVE_CUDA

KILN_REGISTER_CHECK(GpuBurn);

}  // namespace
}  // namespace kiln::worker::gpu
