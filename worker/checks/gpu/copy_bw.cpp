// gpu.copy_bw: copy-engine bandwidth of each GPU and between every pair of GPUs of the node.
// Host->device and device->host from pinned memory, device->device inside one GPU, and a peer
// matrix (cudaMemcpyPeerAsync, source GPU's stream) over NVLink/PCIe. One copy at a time, so each
// figure is what that path gives uncontended (as nvbandwidth's unidirectional copy-engine tests);
// every copy's data is verified once; each figure is checked against its peers and the spec.
#include <algorithm>
#include <cmath>

#include "worker/checks/gpu/gpu_check.hpp"
#include "worker/hw/cuda_util.hpp"
#include "worker/checks/gpu/kernels.hpp"
#include "worker/hw/nvml.hpp"

namespace kiln::worker::gpu {
namespace {

using nlohmann::json;
constexpr const char* kKey = "gpu.copy_bw";

class GpuCopyBw final : public GpuCheck {
 public:
  std::string key() const override { return kKey; }

 protected:
#if KILN_HAVE_CUDA
  void measure(Context& ctx, ResultSink& sink, const NodeGpus& node) override;
#endif
};

#if KILN_HAVE_CUDA

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

// One GPU's own paths: host<->device and device-local.
struct GpuCopies {
  double h2d = 0, d2h = 0, d2d = 0;
  std::uint64_t corrupt = 0;
  // A GPU that fails a copy is reported on its own and left out of the comparisons and pairs.
  GpuFailure failure;
};

void copy_on_gpu(int dev, std::size_t i, std::size_t bytes, const PinnedBuffer& pinned,
                 const Timing& t, GpuCopies& out) {
  DeviceBuffer a(dev, bytes), b(dev, bytes);
  Stream s(dev);
  out.h2d = time_copies(dev, s.get(), bytes, t, [&] {
    KILN_CUDA(cudaMemcpyAsync(a.get(), pinned.get(), bytes, cudaMemcpyHostToDevice, s.get()));
  });
  out.d2h = time_copies(dev, s.get(), bytes, t, [&] {
    KILN_CUDA(cudaMemcpyAsync(pinned.get(), a.get(), bytes, cudaMemcpyDeviceToHost, s.get()));
  });
  const std::uint64_t seed = mix64(42 + i);
  fill_random(dev, a.get(), bytes, seed);
  out.d2d = time_copies(dev, s.get(), bytes, t, [&] {
    KILN_CUDA(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s.get()));
  });
  out.corrupt = verify_copy(dev, b.get(), bytes, seed, t);
}

// The per-GPU figures, each judged against those of the GPUs that did not fail.
void report_gpus(const Context& ctx, ResultSink& sink, const NodeGpus& node,
                 const std::vector<GpuCopies>& per, std::size_t bytes, const Timing& t, double tol) {
  const std::size_t n = per.size();
  auto healthy = [&](double GpuCopies::*field) {
    std::vector<double> out;
    for (std::size_t i = 0; i < n; ++i)
      if (!per[i].failure.failed()) out.push_back(per[i].*field);
    return out;
  };
  auto spread = [&](const std::vector<std::string>& w) {
    std::vector<std::string> out(n);
    for (std::size_t i = 0, k = 0; i < n; ++i)
      if (!per[i].failure.failed()) out[i] = w[k++];
    return out;
  };
  const auto why_h2d = spread(judge(healthy(&GpuCopies::h2d), tol, ctx.param("min_h2d_gbps", 0.0)));
  const auto why_d2h = spread(judge(healthy(&GpuCopies::d2h), tol, ctx.param("min_d2h_gbps", 0.0)));
  const auto why_d2d = spread(judge(healthy(&GpuCopies::d2d), tol, ctx.param("min_d2d_gbps", 0.0)));
  for (std::size_t i = 0; i < n; ++i) {
    const Entity ent = gpu_entity(node.host, node.list[i].index);
    if (per[i].failure.failed()) {
      Result r = make_result(kKey, ent, "copy", 0, "");
      report_failure(r, per[i].failure);
      sink.emit(std::move(r));
      continue;
    }
    auto emit = [&](const char* metric, double v, const std::string& why, Code code) {
      Result r = make_result(kKey, ent, metric, v, "GB/s", why.empty() ? Status::Pass : Status::Fail,
                             why.empty() ? "" : std::string(metric) + " " + why);
      r.size_bytes = static_cast<std::int64_t>(bytes);
      if (!why.empty()) r.problems.push_back({code, r.reason});
      r.extra = {{"iters", t.iters}, {"cuda_ordinal", node.list[i].ordinal}};
      sink.emit(std::move(r));
    };
    emit("h2d", per[i].h2d, why_h2d[i], Code::GpuPcieSlow);
    emit("d2h", per[i].d2h, why_d2h[i], Code::GpuPcieSlow);
    std::string w = why_d2d[i];
    if (per[i].corrupt) w += (w.empty() ? "" : "; ") + std::to_string(per[i].corrupt) + " words corrupted by the copy";
    emit("d2d", per[i].d2d, w, per[i].corrupt ? Code::GpuMemory : Code::GpuMemoryBw);
  }
}

// Peer matrix: row = source, column = destination; the diagonal is left empty (d2d is there).
struct PeerMatrix {
  json matrix = json::array(), p2p = json::array(), index = json::array();
  std::vector<double> cells;  // the measured pairs, in row order
  std::vector<std::pair<std::size_t, std::size_t>> where;
  std::vector<std::uint64_t> cell_corrupt;
};

PeerMatrix measure_peers(const std::vector<GpuInfo>& gpus, const std::vector<GpuCopies>& per,
                         std::size_t bytes, const Timing& t) {
  const std::size_t n = gpus.size();
  PeerMatrix m;
  for (std::size_t i = 0; i < n; ++i) m.index.push_back(gpus[i].index);
  for (std::size_t i = 0; i < n; ++i) {
    json row = json::array(), prow = json::array();
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j || per[i].failure.failed() || per[j].failure.failed()) {
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
      m.cell_corrupt.push_back(verify_copy(dst, b.get(), bytes, seed, t));
      row.push_back(bw);
      prow.push_back(direct);
      m.cells.push_back(bw);
      m.where.emplace_back(i, j);
    }
    m.matrix.push_back(row);
    m.p2p.push_back(prow);
  }
  return m;
}

// Every link against the others: one slow or degraded NVLink stands out from the rest.
void report_peers(const Context& ctx, ResultSink& sink, const NodeGpus& node, const PeerMatrix& m,
                  std::size_t bytes, double tol) {
  const auto& gpus = node.list;
  const std::string& host = node.host;
  const auto& cells = m.cells;
  const auto why = judge(cells, tol, ctx.param("min_peer_gbps", 0.0));
  bool any_bad = false;
  for (std::size_t k = 0; k < cells.size(); ++k) {
    const auto [i, j] = m.where[k];
    std::string w = why[k];
    if (m.cell_corrupt[k]) w += (w.empty() ? "" : "; ") + std::to_string(m.cell_corrupt[k]) + " words corrupted by the copy";
    Result r = make_result(kKey, link_entity(host, gpus[i].index, gpus[j].index), "peer_bw", cells[k], "GB/s",
                           w.empty() ? Status::Pass : Status::Fail, w.empty() ? "" : "peer copy " + w);
    r.size_bytes = static_cast<std::int64_t>(bytes);
    // Inside one node: NVLink/NVSwitch (or PCIe peer) advice, not a cable between two nodes.
    if (!w.empty()) r.problems.push_back({m.cell_corrupt[k] ? Code::GpuMemory : Code::NvlinkSlow, r.reason});
    r.extra = {{"p2p", m.p2p[i][j]}};
    any_bad |= !w.empty();
    sink.emit(std::move(r));
  }
  Result mr = make_result(kKey, node_entity(host), "peer_matrix", *std::min_element(cells.begin(), cells.end()),
                          "GB/s", any_bad ? Status::Fail : Status::Pass,
                          any_bad ? "one or more GPU pairs copy slower than the others or the spec" : "");
  mr.size_bytes = static_cast<std::int64_t>(bytes);
  mr.extra = {{"matrix", m.matrix}, {"p2p", m.p2p}, {"gpus", m.index}, {"rows", "source"},
              {"cols", "destination"}, {"unit", "GB/s"}, {"median", median(cells)}};
  sink.emit(std::move(mr));
}

void GpuCopyBw::measure(Context& ctx, ResultSink& sink, const NodeGpus& node) {
  const auto& gpus = node.list;
  const std::size_t bytes = static_cast<std::size_t>(std::max(1, ctx.param("size_mb", 1024))) << 20;
  Timing t;
  t.iters = std::max(1, ctx.param("iters", 10));
  t.deadline = ctx.deadline - std::chrono::seconds(2);
  const double tol = ctx.param("peer_tolerance", 0.15);
  const std::size_t n = gpus.size();

  // Held until the end, as the pairs are measured too.
  PinnedBuffer pinned(bytes);
  std::vector<GpuCopies> per(n);
  for (std::size_t i = 0; i < n; ++i)
    per[i].failure = on_gpu([&] { copy_on_gpu(gpus[i].ordinal, i, bytes, pinned, t, per[i]); });
  report_gpus(ctx, sink, node, per, bytes, t, tol);

  if (n < 2) {
    sink.emit(make_result(kKey, node_entity(node.host), "peer_matrix", 0, "GB/s", Status::Skip,
                          "one GPU visible: no peer pairs"));
    return;
  }
  const PeerMatrix m = measure_peers(gpus, per, bytes, t);
  if (m.cells.empty()) return;
  report_peers(ctx, sink, node, m, bytes, tol);
}
#endif  // KILN_HAVE_CUDA

KILN_REGISTER_CHECK(GpuCopyBw);

}  // namespace
}  // namespace kiln::worker::gpu
