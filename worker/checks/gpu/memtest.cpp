// gpu.memtest: pattern test over most of each GPU's free memory, all GPUs at once (one host
// thread each). Patterns: address-in-address, walking ones, walking zeros, random. Each pass
// writes the whole buffer with one kernel and reads it back with another that counts wrong words
// and records the first failing addresses; both kernels are timed, which gives the achieved
// write and read bandwidth.
#include <algorithm>
#include <cstdio>
#include <thread>

#include "worker/checks/gpu/gpu_check.hpp"
#include "worker/hw/cuda_util.hpp"
#include "worker/checks/gpu/kernels.hpp"
#include "worker/hw/nvml.hpp"

namespace kiln::worker::gpu {
namespace {

using nlohmann::json;
constexpr const char* kKey = "gpu.memtest";

class GpuMemtest final : public GpuCheck {
 public:
  std::string key() const override { return kKey; }

 protected:
  bool has_drills() const override { return true; }
#if KILN_HAVE_CUDA
  void measure(Context& ctx, ResultSink& sink, const NodeGpus& node) override;
#endif
};

#if KILN_HAVE_CUDA

struct Pass {
  Pattern pattern;
  std::uint64_t param;
  const char* name;
};

struct MemtestReport {
  std::size_t bytes = 0;
  std::uint64_t errors = 0;
  json first = json::array();  // first failing words across passes
  std::vector<double> write_gbps, read_gbps;
  json passes = json::array();
  GpuFailure failure;
  bool timed_out = false;
};

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Allocates as much of `fraction` of the free memory as the driver will give, backing off when
// another process (or fragmentation) takes some first.
DeviceBuffer allocate_most(int dev, double fraction, std::size_t* bytes) {
  KILN_CUDA(cudaSetDevice(dev));
  std::size_t free_b = 0, total_b = 0;
  KILN_CUDA(cudaMemGetInfo(&free_b, &total_b));
  std::size_t want = static_cast<std::size_t>(static_cast<double>(free_b) * fraction);
  for (int attempt = 0; attempt < 8; ++attempt) {
    want &= ~static_cast<std::size_t>((2u << 20) - 1);  // whole 2 MiB pages
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, want);
    if (e == cudaSuccess) {
      *bytes = want;
      return DeviceBuffer::adopt(dev, p, want);
    }
    if (e != cudaErrorMemoryAllocation) KILN_CUDA(e);
    cudaGetLastError();
    want = want / 100 * 95;
  }
  throw GpuError("could not allocate memory for the memory test", cudaErrorMemoryAllocation, false);
}

void memtest_gpu(const GpuInfo& g, const std::vector<Pass>& passes, double fraction,
                 bool corrupt, Clock::time_point deadline, MemtestReport& rep) {
  const int dev = g.ordinal;
  DeviceBuffer buf = allocate_most(dev, fraction, &rep.bytes);
  Stream stream(dev);
  Event e0(dev), e1(dev), e2(dev);
  DeviceBuffer out(dev, sizeof(MemtestOut));
  auto* words = buf.as<std::uint64_t>();
  const std::size_t n = rep.bytes / 8;
  for (const Pass& p : passes) {
    if (Clock::now() >= deadline) {
      rep.timed_out = true;
      return;
    }
    KILN_CUDA(cudaMemsetAsync(out.get(), 0, sizeof(MemtestOut), stream.get()));
    KILN_CUDA(cudaEventRecord(e0.get(), stream.get()));
    KILN_CUDA(launch_pattern_fill(words, n, p.pattern, p.param, stream.get()));
    KILN_CUDA(cudaEventRecord(e1.get(), stream.get()));
    if (corrupt) {
      // Drill: one word that no pattern writes, somewhere in the middle of the buffer.
      const std::uint64_t bad = pattern_word(p.pattern, p.param, reinterpret_cast<std::uint64_t>(words), n / 2) ^ 0x10;
      KILN_CUDA(cudaMemcpyAsync(words + n / 2, &bad, sizeof bad, cudaMemcpyHostToDevice, stream.get()));
      KILN_CUDA(cudaStreamSynchronize(stream.get()));
      KILN_CUDA(cudaEventRecord(e1.get(), stream.get()));
    }
    KILN_CUDA(launch_pattern_check(words, n, p.pattern, p.param, out.as<MemtestOut>(), stream.get()));
    KILN_CUDA(cudaEventRecord(e2.get(), stream.get()));
    if (!wait_event(e2.get(), deadline)) {
      rep.timed_out = true;
      return;
    }
    MemtestOut res{};
    KILN_CUDA(cudaMemcpy(&res, out.get(), sizeof res, cudaMemcpyDeviceToHost));
    const double gb = static_cast<double>(rep.bytes) / 1e9;
    const double w = corrupt ? 0.0 : gb / (elapsed_ms(e0.get(), e1.get()) * 1e-3);
    const double r = gb / (elapsed_ms(e1.get(), e2.get()) * 1e-3);
    if (!corrupt) rep.write_gbps.push_back(w);
    rep.read_gbps.push_back(r);
    rep.errors += res.errors;
    rep.passes.push_back({{"pattern", p.name}, {"param", p.param}, {"errors", res.errors},
                          {"write_gbps", w}, {"read_gbps", r}});
    const unsigned rec = std::min<unsigned>(res.recorded, kMaxRecordedErrors);
    for (unsigned k = 0; k < rec && rep.first.size() < kMaxRecordedErrors; ++k)
      rep.first.push_back({{"pattern", p.name}, {"address", hex(res.addr[k])},
                           {"offset", hex(res.addr[k] - reinterpret_cast<std::uint64_t>(words))},
                           {"expected", hex(res.expected[k])}, {"actual", hex(res.actual[k])}});
  }
}

std::vector<Pass> build_passes(const Context& ctx) {
  const int walk = std::clamp(ctx.param("walk_passes", 16), 1, 64);
  const int random = std::max(1, ctx.param("random_passes", 4));
  const int rounds = std::max(1, ctx.param("rounds", 1));
  std::vector<Pass> out;
  for (int r = 0; r < rounds; ++r) {
    out.push_back({Pattern::Address, mix64(1000 + r), "address"});
    // Spread the walking bit's start positions over all 64 so that, with 64 passes, every word
    // holds every bit position once.
    for (int k = 0; k < walk; ++k) out.push_back({Pattern::WalkingOnes, static_cast<std::uint64_t>(k * 64 / walk), "walking_ones"});
    for (int k = 0; k < walk; ++k) out.push_back({Pattern::WalkingZeros, static_cast<std::uint64_t>(k * 64 / walk), "walking_zeros"});
    for (int k = 0; k < random; ++k) out.push_back({Pattern::Random, mix64(7000 + 100 * r + k), "random"});
  }
  return out;
}

// The ECC corrected-error counters before the test, so that the report gives the test's own.
std::vector<std::uint64_t> ecc_counts(const NodeGpus& node) {
  std::vector<std::uint64_t> ecc_before(node.list.size(), 0);
  for (std::size_t i = 0; i < node.list.size(); ++i)
    if (node.lib && node.list[i].nvml) node.lib->ecc_count(node.list[i].nvml, 0, 0, &ecc_before[i]);
  return ecc_before;
}

// Every GPU at once, one host thread each.
std::vector<MemtestReport> test_all(const NodeGpus& node, const std::vector<Pass>& passes,
                                    double fraction, Clock::time_point deadline) {
  const auto& gpus = node.list;
  const DrillPlan& drill = node.drill;
  std::vector<MemtestReport> reps(gpus.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const bool corrupt = drill.active && drill.corrupt_gpu == gpus[i].index;
    threads.emplace_back([&, i, corrupt] {
      reps[i].failure = on_gpu_thread([&] { memtest_gpu(gpus[i], passes, fraction, corrupt, deadline, reps[i]); });
    });
  }
  for (auto& t : threads) t.join();
  return reps;
}

// The verdicts of one GPU: wrong words, then write and read bandwidth, the read against the
// GPUs that finished (reads[pos], peers[pos]).
struct Verdicts {
  ResultSink& sink;
  const NodeGpus& node;
  const std::vector<std::uint64_t>& ecc_before;
  const std::vector<double>& reads;
  const std::vector<std::size_t>& ok;
  const std::vector<PeerVerdict>& peers;
  double min_read;

  void judge(std::size_t i, const MemtestReport& rep) const {
    const Entity ent = gpu_entity(node.host, node.list[i].index);
    if (rep.failure.failed() || rep.timed_out) return stopped(ent, rep);
    errors(ent, i, rep);
    Result wr = make_result(kKey, ent, "write_bw", median(rep.write_gbps), "GB/s");
    wr.size_bytes = static_cast<std::int64_t>(rep.bytes);
    sink.emit(std::move(wr));
    read_bw(ent, i, rep);
  }

  void stopped(const Entity& ent, const MemtestReport& rep) const {
    Result r = make_result(kKey, ent, "errors", 0, "words");
    report_failure(r, rep.failure);
    if (rep.timed_out) {
      r.status = Status::Timeout;
      r.reason = "memory test did not finish before the deadline";
    }
    r.extra["passes"] = rep.passes;
    sink.emit(std::move(r));
  }

  void errors(const Entity& ent, std::size_t i, const MemtestReport& rep) const {
    const GpuInfo& g = node.list[i];
    Result err = make_result(kKey, ent, "errors", static_cast<double>(rep.errors), "words");
    err.size_bytes = static_cast<std::int64_t>(rep.bytes);
    err.extra = {{"bytes_tested", rep.bytes}, {"total_bytes", g.total_mem},
                 {"passes", rep.passes.size()}, {"first_failures", rep.first}};
    if (node.lib && g.nvml) {
      std::uint64_t after = 0;
      if (node.lib->ecc_count(g.nvml, 0, 0, &after) == nvml::kSuccess)
        err.extra["ecc_corrected_during_test"] = after - ecc_before[i];
    }
    if (rep.errors) {
      err.status = Status::Fail;
      err.reason = std::to_string(rep.errors) + " word(s) read back wrong, first at offset " +
                   rep.first[0]["offset"].get<std::string>() + " (" + rep.first[0]["pattern"].get<std::string>() + ")";
      err.problems.push_back({Code::GpuMemory, err.reason});
    }
    sink.emit(std::move(err));
  }

  void read_bw(const Entity& ent, std::size_t i, const MemtestReport& rep) const {
    const auto pos = static_cast<std::size_t>(std::find(ok.begin(), ok.end(), i) - ok.begin());
    Result rd = make_result(kKey, ent, "read_bw", reads[pos], "GB/s");
    rd.size_bytes = static_cast<std::int64_t>(rep.bytes);
    std::string why;
    if (peers[pos].outlier)
      why = std::to_string(static_cast<int>(std::lround(peers[pos].deficit * 100))) + "% below its peers";
    if (min_read > 0 && reads[pos] < min_read)
      why += (why.empty() ? "" : "; ") + std::string("below the spec's ") + std::to_string(static_cast<int>(min_read)) + " GB/s";
    if (!why.empty()) {
      rd.status = Status::Fail;
      rd.reason = "memory read bandwidth " + why;
      rd.problems.push_back({Code::GpuMemoryBw, rd.reason});
    }
    sink.emit(std::move(rd));
  }
};

void GpuMemtest::measure(Context& ctx, ResultSink& sink, const NodeGpus& node) {
  const double fraction = std::clamp(ctx.param("mem_fraction", 0.90), 0.01, 0.98);
  const auto passes = build_passes(ctx);
  const auto deadline = ctx.deadline - std::chrono::seconds(3);

  const std::vector<std::uint64_t> ecc_before = ecc_counts(node);
  const std::vector<MemtestReport> reps = test_all(node, passes, fraction, deadline);

  std::vector<double> reads;
  std::vector<std::size_t> ok;
  for (std::size_t i = 0; i < reps.size(); ++i)
    if (!reps[i].failure.failed() && !reps[i].read_gbps.empty()) {
      reads.push_back(median(reps[i].read_gbps));
      ok.push_back(i);
    }
  const auto peers = peer_outliers(reads, ctx.param("peer_tolerance", 0.10));
  const double min_read = ctx.param("min_read_gbps", 0.0);

  const Verdicts verdicts{sink, node, ecc_before, reads, ok, peers, min_read};
  for (std::size_t i = 0; i < reps.size(); ++i) verdicts.judge(i, reps[i]);
}
#endif  // KILN_HAVE_CUDA

KILN_REGISTER_CHECK(GpuMemtest);

}  // namespace
}  // namespace kiln::worker::gpu
