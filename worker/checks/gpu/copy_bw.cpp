// gpu.copy_bw: copy-engine bandwidth of each GPU and between every pair of GPUs of the node.
// Host->device and device->host from pinned memory, device->device inside one GPU, and a peer
// matrix (cudaMemcpyPeerAsync, source GPU's stream) over NVLink/PCIe. One copy at a time, so each
// figure is what that path gives uncontended (as nvbandwidth's unidirectional copy-engine tests);
// every copy's data is verified once; each figure is checked against its peers and the spec.
#include <algorithm>
#include <cmath>

#include "worker/checks/gpu/common.hpp"
#include "worker/hw/cuda_util.hpp"
#include "worker/checks/gpu/kernels.hpp"
#include "worker/hw/nvml.hpp"

namespace kiln::worker::gpu {
namespace {

using nlohmann::json;
constexpr const char* kKey = "gpu.copy_bw";

class GpuCopyBw final : public Check {
 public:
  std::string key() const override { return kKey; }
  std::string description() const override {
    return "Copy-engine bandwidth: H2D/D2H pinned, D2D, and the GPU peer matrix";
  }
  Scope scope() const override { return Scope::PerNode; }
  double default_deadline_s() const override { return 180.0; }
  std::optional<std::string> applicable(const NodeInfo& node) const override {
    return cuda_skip_reason(node);
  }
  void run(Context& ctx, ResultSink& sink) override;
};

#if !KILN_HAVE_CUDA
void GpuCopyBw::run(Context&, ResultSink& sink) {
  sink.emit(make_result(kKey, {}, "copy_bw", 0, "", Status::Skip, "built without CUDA"));
}
#else

struct Timing {
  int iters = 10;
  Clock::time_point deadline;
};

// Median bandwidth (GB/s, 1e9 B/s) of `iters` timed copies after one untimed warm-up copy.
// `copy` enqueues one copy on the stream of device `dev`.
template <class F>
double time_copies(int dev, cudaStream_t s, std::size_t bytes, const Timing& t, F copy) {
  KILN_CUDA(cudaSetDevice(dev));
  copy();
  std::vector<std::unique_ptr<Event>> ev;
  for (int i = 0; i <= t.iters; ++i) ev.push_back(std::make_unique<Event>(dev));
  KILN_CUDA(cudaEventRecord(ev[0]->get(), s));
  for (int i = 0; i < t.iters; ++i) {
    copy();
    KILN_CUDA(cudaEventRecord(ev[i + 1]->get(), s));
  }
  if (!wait_event(ev.back()->get(), t.deadline)) throw DeadlineExceeded("copy did not finish before the deadline");
  std::vector<double> gbps;
  for (int i = 0; i < t.iters; ++i)
    gbps.push_back(static_cast<double>(bytes) / 1e9 / (elapsed_ms(ev[i]->get(), ev[i + 1]->get()) * 1e-3));
  return median(gbps);
}

// Fills `src` on its device with a random pattern and returns a checker that reads `dst` back on
// its device: the number of words that differ (0 when the copy moved the data intact).
std::uint64_t verify_copy(int dst_dev, const void* dst, std::size_t bytes, std::uint64_t seed,
                          const Timing& t) {
  KILN_CUDA(cudaSetDevice(dst_dev));
  Stream s(dst_dev);
  DeviceBuffer out(dst_dev, sizeof(MemtestOut));
  KILN_CUDA(cudaMemsetAsync(out.get(), 0, sizeof(MemtestOut), s.get()));
  KILN_CUDA(launch_pattern_check(static_cast<const std::uint64_t*>(dst), bytes / 8, Pattern::Random, seed,
                                 out.as<MemtestOut>(), s.get()));
  if (!wait_stream(s.get(), t.deadline)) throw DeadlineExceeded("copy check did not finish before the deadline");
  MemtestOut res{};
  KILN_CUDA(cudaMemcpy(&res, out.get(), sizeof res, cudaMemcpyDeviceToHost));
  return res.errors;
}

void fill_random(int dev, void* p, std::size_t bytes, std::uint64_t seed) {
  KILN_CUDA(cudaSetDevice(dev));
  KILN_CUDA(launch_pattern_fill(static_cast<std::uint64_t*>(p), bytes / 8, Pattern::Random, seed, nullptr));
  KILN_CUDA(cudaDeviceSynchronize());
}

// Flags each value against the others (peer rule) and an optional spec minimum.
std::vector<std::string> judge(const std::vector<double>& v, double tol, double min_spec) {
  const auto pv = peer_outliers(v, tol);
  std::vector<std::string> why(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (pv[i].outlier)
      why[i] = std::to_string(static_cast<int>(std::lround(pv[i].deficit * 100))) + "% below its peers (" +
               std::to_string(static_cast<int>(pv[i].reference)) + " GB/s)";
    if (min_spec > 0 && v[i] < min_spec)
      why[i] += (why[i].empty() ? "" : "; ") + std::string("below the spec's ") +
                std::to_string(static_cast<int>(min_spec)) + " GB/s";
  }
  return why;
}

void GpuCopyBw::run(Context& ctx, ResultSink& sink) {
  const std::string& host = ctx.node.host;
  auto lib = nvml::shared();
  const auto gpus = list_gpus(lib.get());
  const std::size_t bytes = static_cast<std::size_t>(std::max(1, ctx.param("size_mb", 1024))) << 20;
  Timing t;
  t.iters = std::max(1, ctx.param("iters", 10));
  t.deadline = ctx.deadline - std::chrono::seconds(2);
  const double tol = ctx.param("peer_tolerance", 0.15);
  const std::size_t n = gpus.size();

  // Per-GPU paths: host<->device and device-local.
  PinnedBuffer pinned(bytes);
  std::vector<double> h2d(n), d2h(n), d2d(n);
  std::vector<std::uint64_t> corrupt(n, 0);
  // A GPU that fails a copy is reported on its own and left out of the comparisons and pairs.
  std::vector<std::string> failed(n);
  std::vector<bool> hardware(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    try {
      const int dev = gpus[i].ordinal;
      DeviceBuffer a(dev, bytes), b(dev, bytes);
      Stream s(dev);
      h2d[i] = time_copies(dev, s.get(), bytes, t, [&] {
        KILN_CUDA(cudaMemcpyAsync(a.get(), pinned.get(), bytes, cudaMemcpyHostToDevice, s.get()));
      });
      d2h[i] = time_copies(dev, s.get(), bytes, t, [&] {
        KILN_CUDA(cudaMemcpyAsync(pinned.get(), a.get(), bytes, cudaMemcpyDeviceToHost, s.get()));
      });
      const std::uint64_t seed = mix64(42 + i);
      fill_random(dev, a.get(), bytes, seed);
      d2d[i] = time_copies(dev, s.get(), bytes, t, [&] {
        KILN_CUDA(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s.get()));
      });
      corrupt[i] = verify_copy(dev, b.get(), bytes, seed, t);
    } catch (const GpuError& e) {
      failed[i] = e.what();
      hardware[i] = e.hardware;
    }
  }
  auto healthy = [&](const std::vector<double>& v) {
    std::vector<double> out;
    for (std::size_t i = 0; i < n; ++i)
      if (failed[i].empty()) out.push_back(v[i]);
    return out;
  };
  auto spread = [&](const std::vector<std::string>& w) {
    std::vector<std::string> out(n);
    for (std::size_t i = 0, k = 0; i < n; ++i)
      if (failed[i].empty()) out[i] = w[k++];
    return out;
  };
  const auto why_h2d = spread(judge(healthy(h2d), tol, ctx.param("min_h2d_gbps", 0.0)));
  const auto why_d2h = spread(judge(healthy(d2h), tol, ctx.param("min_d2h_gbps", 0.0)));
  const auto why_d2d = spread(judge(healthy(d2d), tol, ctx.param("min_d2d_gbps", 0.0)));
  for (std::size_t i = 0; i < n; ++i) {
    const Entity ent = gpu_entity(host, gpus[i].index);
    if (!failed[i].empty()) {
      Result r = make_result(kKey, ent, "copy", 0, "", hardware[i] ? Status::Fail : Status::Error, failed[i]);
      r.extra = {{"finding", hardware[i] ? "gpu.lost" : "gpu.cuda"}};
      sink.emit(std::move(r));
      continue;
    }
    auto emit = [&](const char* metric, double v, const std::string& why, const char* finding) {
      Result r = make_result(kKey, ent, metric, v, "GB/s", why.empty() ? Status::Pass : Status::Fail,
                             why.empty() ? "" : std::string(metric) + " " + why);
      r.size_bytes = static_cast<std::int64_t>(bytes);
      r.extra = {{"finding", finding}, {"iters", t.iters}, {"cuda_ordinal", gpus[i].ordinal}};
      sink.emit(std::move(r));
    };
    emit("h2d", h2d[i], why_h2d[i], "gpu.pcie_slow");
    emit("d2h", d2h[i], why_d2h[i], "gpu.pcie_slow");
    std::string w = why_d2d[i];
    if (corrupt[i]) w += (w.empty() ? "" : "; ") + std::to_string(corrupt[i]) + " words corrupted by the copy";
    emit("d2d", d2d[i], w, corrupt[i] ? "gpu.memory" : "gpu.memory_bw");
  }

  if (n < 2) {
    sink.emit(make_result(kKey, node_entity(host), "peer_matrix", 0, "GB/s", Status::Skip,
                          "one GPU visible: no peer pairs"));
    return;
  }
  // Peer matrix: row = source, column = destination; the diagonal is left empty (d2d above).
  json matrix = json::array(), p2p = json::array(), index = json::array();
  std::vector<double> cells;
  std::vector<std::pair<std::size_t, std::size_t>> where;
  std::vector<std::uint64_t> cell_corrupt;
  for (std::size_t i = 0; i < n; ++i) index.push_back(gpus[i].index);
  for (std::size_t i = 0; i < n; ++i) {
    json row = json::array(), prow = json::array();
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j || !failed[i].empty() || !failed[j].empty()) {
        row.push_back(nullptr);
        prow.push_back(nullptr);
        continue;
      }
      const int src = gpus[i].ordinal, dst = gpus[j].ordinal;
      const bool direct = enable_peer(src, dst) && enable_peer(dst, src);
      DeviceBuffer a(src, bytes), b(dst, bytes);
      Stream s(src);
      const std::uint64_t seed = mix64(1000 + 17 * i + j);
      fill_random(src, a.get(), bytes, seed);
      const double bw = time_copies(src, s.get(), bytes, t, [&] {
        KILN_CUDA(cudaMemcpyPeerAsync(b.get(), dst, a.get(), src, bytes, s.get()));
      });
      cell_corrupt.push_back(verify_copy(dst, b.get(), bytes, seed, t));
      row.push_back(bw);
      prow.push_back(direct);
      cells.push_back(bw);
      where.emplace_back(i, j);
    }
    matrix.push_back(row);
    p2p.push_back(prow);
  }
  // Every link against the others: one slow or degraded NVLink stands out from the rest.
  if (cells.empty()) return;
  const auto why = judge(cells, tol, ctx.param("min_peer_gbps", 0.0));
  bool any_bad = false;
  for (std::size_t k = 0; k < cells.size(); ++k) {
    const auto [i, j] = where[k];
    std::string w = why[k];
    if (cell_corrupt[k]) w += (w.empty() ? "" : "; ") + std::to_string(cell_corrupt[k]) + " words corrupted by the copy";
    Result r = make_result(kKey, link_entity(host, gpus[i].index, gpus[j].index), "peer_bw", cells[k], "GB/s",
                           w.empty() ? Status::Pass : Status::Fail, w.empty() ? "" : "peer copy " + w);
    r.size_bytes = static_cast<std::int64_t>(bytes);
    r.extra = {{"p2p", p2p[i][j]}, {"finding", "link.slow"}};
    any_bad |= !w.empty();
    sink.emit(std::move(r));
  }
  Result m = make_result(kKey, node_entity(host), "peer_matrix", *std::min_element(cells.begin(), cells.end()),
                         "GB/s", any_bad ? Status::Fail : Status::Pass,
                         any_bad ? "one or more GPU pairs copy slower than the others or the spec" : "");
  m.size_bytes = static_cast<std::int64_t>(bytes);
  m.extra = {{"matrix", matrix}, {"p2p", p2p}, {"gpus", index}, {"rows", "source"},
             {"cols", "destination"}, {"unit", "GB/s"}, {"median", median(cells)}};
  sink.emit(std::move(m));
}
#endif  // KILN_HAVE_CUDA

KILN_REGISTER_CHECK(GpuCopyBw);

}  // namespace
}  // namespace kiln::worker::gpu
