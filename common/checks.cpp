#include "common/checks.hpp"
#include "common/ingested.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace kiln {

std::string to_string(Scope s) {
  switch (s) {
    case Scope::PerRank: return "per-rank";
    case Scope::PerNode: return "per-node";
    case Scope::Group: return "group";
  }
  return "?";
}

std::string to_string(ParamType t) {
  switch (t) {
    case ParamType::Int: return "int";
    case ParamType::Number: return "number";
    case ParamType::Bool: return "bool";
    case ParamType::String: return "string";
    case ParamType::Bytes: return "bytes";
  }
  return "?";
}

namespace {

using json = nlohmann::json;
using P = ParamType;
constexpr double kGiB = 1024.0 * 1024 * 1024;
const std::optional<double> none;

ParamSpec p(std::string name, ParamType t, json fallback, std::optional<double> lo, std::optional<double> hi,
            std::string help, std::vector<std::string> choices = {}) {
  return {std::move(name), t, std::move(fallback), lo, hi, std::move(choices), std::move(help)};
}

// The sweeps' time budget (worker/sweep_budget.hpp): a size whose estimate does not fit before the
// deadline less this reserve is skipped, with the estimate and the time left in its reason.
ParamSpec budget_reserve() {
  return p("budget_reserve_s", P::Number, 1.0, 0, 3600,
           "seconds kept back from the deadline for reporting: a size estimated not to finish before the deadline "
           "less this is skipped (SKIP result with the estimate), and so are the larger ones");
}

// The parameters every MPI sweep shares; defaults differ per collective.
std::vector<ParamSpec> mpi_sweep(std::int64_t min_b, std::int64_t max_b, double factor, std::int64_t per_size,
                                 int max_iters) {
  return {p("min_bytes", P::Bytes, min_b, 1, 16 * kGiB, "smallest message of the sweep"),
          p("max_bytes", P::Bytes, max_b, 1, 16 * kGiB, "largest message of the sweep"),
          p("factor", P::Number, factor, 1.01, 1024, "size step multiplier"),
          p("bytes_per_size", P::Bytes, per_size, 1, 1024 * kGiB, "about this many bytes are moved per size"),
          p("max_iters", P::Int, max_iters, 2, 1e6, "timed operations per size at most"),
          budget_reserve()};
}

std::vector<ParamSpec> alltoall_params() {
  auto ps = mpi_sweep(1 << 10, 16 << 20, 4.0, 64 << 20, 20);
  ps.push_back(p("per_peer", P::Bool, true, none, none,
                 "at the largest size, time each peer's block in extra iterations (per-edge figures in the busbw "
                 "result's extra.peers)"));
  ps.push_back(p("peer_block_min", P::Bytes, 64 << 10, 0, 64 << 20,
                 "per-peer timing sends each peer at least this many bytes, however large the group (the largest "
                 "size's own block when that is more)"));
  return ps;
}

std::vector<ParamSpec> nccl_sweep() {
  return {p("min_bytes", P::Bytes, 8, 1, 64 * kGiB, "smallest message of the sweep"),
          p("max_bytes", P::Bytes, 128 << 20, 1, 64 * kGiB, "largest message of the sweep"),
          p("factor", P::Int, 2, 2, 1024, "size step multiplier"),
          p("iters", P::Int, 20, 1, 1e6, "timed iterations per line"),
          p("warmup", P::Int, 5, 0, 1e6, "warm-up iterations per line"),
          p("placement", P::String, "both", none, none, "out of place, in place or both", {"out", "in", "both"}),
          p("check", P::Bool, false, none, none, "verify the received data once per line"),
          p("root", P::Int, 0, 0, 1e6, "broadcast root (group rank)"),
          p("abort_grace_s", P::Number, 5.0, 0, 600, "seconds kept back from the deadline to abort and report"),
          p("buffers", P::String, "nccl", none, none, "ncclMemAlloc (nccl) or cudaMalloc (cuda) buffers",
            {"nccl", "cuda"}),
          p("comm", P::String, "split", none, none, "communicator: deadline-bounded split, or direct (a benchmark aid)",
            {"split", "direct"}),
          budget_reserve()};
}

// The pair checks' schedule in a group of more than two (worker/pairings.hpp).
ParamSpec partners() {
  return p("partners", P::Int, 7, 1, 4096,
           "in a group of more than two, pairings to run (each member meets this many others; capped at the group "
           "size - 1)");
}

std::vector<ParamSpec> rdma_pair(bool latency) {
  return {p("memory", P::String, "host", none, none, "where the buffers live", {"host", "cuda"}),
          p("message_bytes", P::Bytes, latency ? 8 : (1 << 20), 1, 1 * kGiB, "message size"),
          p("iters", P::Int, latency ? 10000 : 2000, 1, 1e8, "operations per rail"),
          p("depth", P::Int, latency ? 1 : 64, 1, 4096, "operations in flight per QP"),
          p("gid_index", P::Int, 0, 0, 255, "GID index (RoCE)"),
          p("device", P::String, "nearest", none, none,
            "HCA ports to drive: nearest (to the rank's GPU), all, or a list such as mlx5_0,mlx5_1:1"),
          p("sysfs_root", P::String, nullptr, none, none, "read HCAs from this tree instead of /sys (tests)"),
          partners()};
}

CheckSpec nccl(std::string key, std::string what) {
  return {std::move(key), std::move(what), Scope::Group, 300, nccl_sweep(), FigureSpec{"busbw", "GB/s", true, true}};
}

CheckSpec rdma(std::string key, std::string what, bool latency) {
  what += "; a larger group meets in disjoint pairs, `partners` pairings one after another";
  return {std::move(key), std::move(what), Scope::Group, 120, rdma_pair(latency),
          latency ? FigureSpec{"lat", "us", false, false} : FigureSpec{"bw", "Gb/s", true, false}};
}

// The stack checks read sysfs and procfs under `root`, so the tests run them on recorded trees.
ParamSpec stack_root() {
  return p("root", P::String, nullptr, none, none,
           "read sysfs and procfs under this directory instead of / (env KILN_SYSFS_ROOT; tests use recorded trees)");
}

std::vector<ParamSpec> version_params() {
  std::vector<ParamSpec> ps{stack_root()};
  for (const char* f : {"driver", "kernel", "hca_fw", "vbios", "mlx5_core"})
    ps.push_back(p(std::string("expected_") + f, P::String, nullptr, none, none,
                   std::string("fail unless the node's ") + f + " version is exactly this"));
  for (const char* f : {"driver", "cuda_driver", "cuda_runtime", "nccl", "rdma_core", "hca_fw", "mlx5_core"})
    ps.push_back(p(std::string("min_") + f, P::String, nullptr, none, none,
                   std::string("fail when the node's ") + f + " version is older (dotted numbers compared)"));
  return ps;
}

std::vector<CheckSpec> stack_checks() {
  return {{"stack.versions",
           "driver, CUDA, NCCL, MPI, rdma-core, mlx5_core, HCA firmware, kernel and VBIOS versions against the spec "
           "and the fleet",
           Scope::PerNode, 30, version_params(), std::nullopt},
          {"stack.pci",
           "PCIe link width/speed (current vs max) and MaxReadReq of every GPU and HCA, ACS on the bridges above them",
           Scope::PerNode, 30,
           {stack_root(), p("min_max_read_request", P::Int, 0, 0, 4096,
                            "fail a GPU or HCA whose Max_Read_Request_Size is below this many bytes (0: no check)")},
           std::nullopt},
          {"stack.system",
           "IOMMU mode, NUMA node of each GPU vs its nearest HCA, locked-memory limit, NVSwitch fabric manager",
           Scope::PerNode, 30, {stack_root()}, std::nullopt}};
}

// storage.fio's figures: sequential read and write bandwidth and random-read IOPS, for each path.
CheckSpec storage_fio() {
  CheckSpec c{"storage.fio",
              "fio on a node-local and a shared path: sequential read and write bandwidth, random-read IOPS, with "
              "latency percentiles",
              Scope::PerNode,
              180,
              {p("local_path", P::String, nullptr, none, none, "node-local directory to test (unset: not tested)"),
               p("shared_path", P::String, nullptr, none, none, "shared file system directory to test (unset: not tested)"),
               p("size", P::Bytes, 256 << 20, 1 << 20, 1024 * kGiB, "file size per path"),
               p("runtime_s", P::Number, 5.0, 1, 3600, "seconds per fio job (three jobs per path)"),
               p("block_size", P::Bytes, 1 << 20, 4096, 64 << 20, "block size of the sequential jobs"),
               p("rand_block_size", P::Bytes, 4096, 512, 1 << 20, "block size of the random-read job"),
               p("iodepth", P::Int, 32, 1, 4096, "I/Os in flight (libaio and io_uring)"),
               p("ioengine", P::String, "auto", none, none, "fio engine; auto: libaio if fio has it, else psync",
                 {"auto", "libaio", "io_uring", "psync"})},
              FigureSpec{"local_seq_read", "GB/s", true, false}};
  for (const char* m : {"local_seq_write", "shared_seq_read", "shared_seq_write"})
    c.more_figures.push_back({m, "GB/s", true, false});
  for (const char* m : {"local_rand_read", "shared_rand_read"}) c.more_figures.push_back({m, "kIOPS", true, false});
  return c;
}

// A user's own training job run by jobs/kiln-user-job.sh, its KILN_METRIC lines read by kiln ingest.
CheckSpec user_job() {
  CheckSpec c{"model.user_job",
              "a user's own job (e.g. PyTorch FSDP) under srun, one task per GPU: the throughput each task printed "
              "(KILN_METRIC lines), read by kiln ingest; not run by kiln-worker",
              Scope::PerRank,
              0,
              {},
              FigureSpec{"tokens_per_s", "tok/s", true, false},
              {{"samples_per_s", "samples/s", true, false}, {"step_time_s", "s", false, false}}};
  return c;
}

}  // namespace

bool ingested_check(std::string_view key) { return key == "model.user_job"; }

namespace {

std::vector<CheckSpec> build() {
  std::vector<CheckSpec> c;
  c.push_back({"host.inventory", "CPUs, memory, kernel, GPUs, CUDA/NCCL/MPI/rdma-core versions of the node",
               Scope::PerNode, 30,
               {p("expected_cpus", P::Int, nullptr, 1, 1e6, "fail when the node has another number of CPUs"),
                p("expected_gpus", P::Int, nullptr, 0, 64, "fail when CUDA sees another number of GPUs")},
               std::nullopt});
  c.push_back({"mpi.all_reduce", "host-memory MPI_Allreduce sweep (float sum): time, algbw, busbw per size",
               Scope::Group, 120, mpi_sweep(8, 64 << 20, 2.0, 256 << 20, 50), FigureSpec{"busbw", "GB/s", true, true}});
  c.push_back({"mpi.alltoall",
               "host-memory MPI_Alltoall sweep over the group: time, algbw, busbw per size (loads every link)",
               Scope::Group, 120, alltoall_params(), FigureSpec{"busbw", "GB/s", true, true}});
  c.push_back({"net.pair_bw",
               "point-to-point bandwidth both ways and latency between pairs: a pair group's two members, or in a "
               "larger group each member with `partners` others, one disjoint pairing after another",
               Scope::Group, 120,
               {p("bytes", P::Bytes, 8 << 20, 1, 4 * kGiB, "message size"),
                p("iters", P::Int, 4, 1, 1e6, "messages each way"),
                p("pings", P::Int, 100, 1, 1e7, "ping-pongs for the latency"),
                partners()},
               FigureSpec{"bw", "GB/s", true, false}});
  c.push_back({"ib.ports", "HCA port state, rate, width and error counters from sysfs (before/after, or over a window)",
               Scope::PerNode, 60,
               {p("phase", P::String, "snapshot", none, none, "label copied into every result (before/after)"),
                p("window_s", P::Number, 0.0, 0, 3600, "when > 0, read the counters twice this far apart"),
                p("expect_rate_gbps", P::Number, 0.0, 0, 1e5, "fail a port below this rate (0: no check)"),
                p("sysfs_root", P::String, nullptr, none, none, "read HCAs from this tree instead of /sys (tests)")},
               std::nullopt});
  for (auto& s : stack_checks()) c.push_back(std::move(s));
  c.push_back(user_job());
  c.push_back({"gpu.health",
               "GPU inventory and NVML health: count/model vs spec, ECC, row remap, PCIe, clocks, throttle, XID",
               Scope::PerNode, 60,
               {p("expected_gpus", P::Int, -1, -1, 64, "GPUs the node must have (-1: no check)"),
                p("expected_gpus_from", P::String, "the spec", none, none,
                  "where expected_gpus came from, for the reason (health-check mode: the PCI bus)"),
                p("expected_model", P::String, "", none, none, "substring the GPU name must contain"),
                p("expected_driver", P::String, "", none, none, "driver version the node must run"),
                p("max_ecc_uncorrected_aggregate", P::Int, -1, -1, 1e12, "lifetime uncorrectable ECC allowed"),
                p("min_pcie_gen_max", P::Int, 0, 0, 7, "lowest PCIe generation the GPU link may be capable of"),
                p("expect_mig", P::Bool, nullptr, none, none, "MIG mode the GPUs must be in"),
                p("require_ecc", P::Bool, true, none, none, "a GPU with ECC off is a finding"),
                p("require_persistence", P::Bool, false, none, none, "a GPU with persistence mode off is a finding"),
                p("min_power_limit_w", P::Number, 0.0, 0, 5000, "lowest allowed enforced power limit (0: default)")},
               std::nullopt});
  c.push_back({"gpu.burn", "Verified cuBLAS tensor-core GEMM burn on every GPU at once, with 1 Hz telemetry",
               Scope::PerNode, 900,
               {p("dtype", P::String, "bf16", none, none, "GEMM data type", {"bf16", "fp16", "tf32", "fp64"}),
                p("size", P::Int, 8192, 256, 65536, "matrix dimension (a multiple of 64)"),
                p("duration_s", P::Number, 60.0, 1, 86400, "burn time (capped by the deadline)"),
                p("warmup_s", P::Number, 3.0, 0, 3600, "seconds before the figures count"),
                p("verify_every", P::Int, 8, 1, 1e6, "verify one GEMM in this many"),
                p("host_samples", P::Int, 64, 1, 1e6, "elements checked on the host per verification"),
                p("peer_tolerance", P::Number, 0.10, 0, 1, "slower than the node's median by this fraction fails"),
                p("min_tflops", P::Number, 0.0, 0, 1e6, "absolute floor (0: none)"),
                p("max_throttle_fraction", P::Number, 0.05, 0, 1, "share of time throttled beyond the power cap"),
                p("max_temp_c", P::Number, 0.0, 0, 200, "hottest allowed (0: no check)")},
               FigureSpec{"tflops", "TFLOP/s", true, false}});
  c.push_back({"gpu.memtest", "Pattern memory test over most of each GPU's free memory, with achieved bandwidth",
               Scope::PerNode, 300,
               {p("walk_passes", P::Int, 16, 1, 64, "walking-bit passes"),
                p("random_passes", P::Int, 4, 1, 1e4, "random-pattern passes"),
                p("rounds", P::Int, 1, 1, 1e4, "repeats of the whole set"),
                p("mem_fraction", P::Number, 0.90, 0.01, 0.98, "share of free memory tested"),
                p("peer_tolerance", P::Number, 0.10, 0, 1, "slower than the node's median by this fraction fails"),
                p("min_read_gbps", P::Number, 0.0, 0, 1e6, "absolute floor (0: none)")},
               FigureSpec{"read_bw", "GB/s", true, false}});
  c.push_back({"gpu.copy_bw", "Copy-engine bandwidth: H2D/D2H pinned, D2D, and the GPU peer matrix", Scope::PerNode,
               180,
               {p("size_mb", P::Int, 1024, 1, 1 << 20, "copy size in MiB"),
                p("iters", P::Int, 10, 1, 1e6, "timed copies"),
                p("peer_tolerance", P::Number, 0.15, 0, 1, "slower than the median by this fraction fails"),
                p("min_h2d_gbps", P::Number, 0.0, 0, 1e6, "absolute floor (0: none)"),
                p("min_d2h_gbps", P::Number, 0.0, 0, 1e6, "absolute floor (0: none)"),
                p("min_d2d_gbps", P::Number, 0.0, 0, 1e6, "absolute floor (0: none)"),
                p("min_peer_gbps", P::Number, 0.0, 0, 1e6, "absolute floor (0: none)")},
               FigureSpec{"peer_bw", "GB/s", true, false}});
  c.push_back(storage_fio());
  c.push_back({"gpu.dcgm", "DCGM's diagnostic (dcgmi diag -r N -j): each DCGM test's result per GPU", Scope::PerNode, 900,
               {p("level", P::Int, 1, 1, 4, "dcgmi diag run level (1 quick ... 4 extended)")}, std::nullopt});
  c.push_back(nccl("nccl.all_reduce",
                   "NCCL all-reduce (float sum) sweep over the group's GPUs: time, algbw, busbw = algbw * 2(n-1)/n"));
  c.push_back(nccl("nccl.all_gather", "NCCL all-gather sweep over the group's GPUs: busbw = algbw * (n-1)/n"));
  c.push_back(nccl("nccl.reduce_scatter",
                   "NCCL reduce-scatter (float sum) sweep over the group's GPUs: busbw = algbw * (n-1)/n"));
  c.push_back(nccl("nccl.alltoall",
                   "NCCL all-to-all sweep over the group's GPUs (every pair carries traffic): busbw = algbw * (n-1)/n"));
  c.push_back(nccl("nccl.broadcast", "NCCL broadcast sweep from the group's root rank: busbw = algbw"));
  c.push_back(nccl("nccl.sendrecv",
                   "NCCL send/recv to the next rank of the group while receiving from the previous one: busbw = algbw"));
  c.push_back({"model.fsdp_step",
               "FSDP-shaped training step over the group's GPUs: per layer NCCL all-gathers the bf16 weight shards, "
               "cuBLAS runs the forward and backward GEMMs, the gradients are reduce-scattered, communication "
               "overlapped on a second stream; step time, TFLOP/s, MFU, exposed communication, and checksums that "
               "must match across ranks and steps",
               Scope::Group, 300,
               {p("layers", P::Int, 8, 1, 128, "Linear layers (hidden x hidden, bf16, no bias)"),
                p("hidden", P::Int, 8192, 64, 65536, "hidden size (a multiple of 64)"),
                p("tokens", P::Int, 8192, 64, 1 << 20, "tokens per rank (a multiple of 64)"),
                p("warmup", P::Int, 3, 0, 1000, "untimed steps first"),
                p("steps", P::Int, 10, 1, 10000, "timed steps of each kind (overlapped, compute-only, comm-only)"),
                p("verify_steps", P::Int, 2, 1, 8, "steps whose checksums are compared across ranks and steps"),
                p("peak_tflops", P::Number, 0.0, 0, 1e6,
                  "the GPU's dense bf16 peak for MFU (0: MFU omitted; the spec carries no peak)"),
                p("abort_grace_s", P::Number, 5.0, 0, 600, "seconds kept back from the deadline to abort and report")},
               FigureSpec{"tflops", "TFLOP/s", true, false}});
  c.push_back(rdma("rdma.write_bw",
                   "RDMA WRITE bandwidth between the pair on all its rails at once (RC QPs, host or GPU memory)", false));
  c.push_back(rdma("rdma.read_bw",
                   "RDMA READ bandwidth between the pair on all its rails at once (RC QPs, host or GPU memory)", false));
  c.push_back(rdma("rdma.send_lat",
                   "RDMA SEND/RECV ping-pong latency between the pair, rail by rail (half the round trip)", true));
  return c;
}

const ParamSpec kDeadline{"deadline_s", ParamType::Number, nullptr, 0.001, 7 * 86400.0, {},
                          "seconds the check may run (default: the round's deadline)"};

json check_value(const std::string& where, const ParamSpec& ps, const json& v) {
  auto bad = [&](const std::string& what) { return std::invalid_argument(where + ": " + what); };
  json out = v;
  double num = 0;
  switch (ps.type) {
    case P::Bool:
      if (!v.is_boolean()) throw bad("must be true or false");
      return out;
    case P::String:
      if (!v.is_string()) throw bad("must be a string");
      if (!ps.choices.empty()) {
        for (const auto& c : ps.choices)
          if (c == v.get<std::string>()) return out;
        std::string list;
        for (const auto& c : ps.choices) list += (list.empty() ? "" : ", ") + c;
        throw bad("must be one of " + list);
      }
      if (v.get<std::string>().size() > 4096) throw bad("is longer than 4096 characters");
      return out;
    case P::Int:
      if (!v.is_number_integer()) throw bad("must be an integer");
      num = v.get<double>();
      break;
    case P::Number:
      if (!v.is_number()) throw bad("must be a number");
      num = v.get<double>();
      if (!std::isfinite(num)) throw bad("must be finite");
      break;
    case P::Bytes: {
      // The integer itself, not a double cast back: near INT64_MAX that cast overflowed (UB).
      const std::int64_t bytes = parse_size(v);
      num = static_cast<double>(bytes);
      out = bytes;
      break;
    }
  }
  if (ps.min && num < *ps.min) throw bad("must be at least " + json(*ps.min).dump());
  if (ps.max && num > *ps.max) throw bad("must be at most " + json(*ps.max).dump());
  return out;
}

}  // namespace

const FigureSpec* CheckSpec::figure_for(std::string_view metric) const {
  if (figure && figure->metric == metric) return &*figure;
  for (const auto& f : more_figures)
    if (f.metric == metric) return &f;
  return nullptr;
}

const std::vector<CheckSpec>& check_catalog() {
  static const std::vector<CheckSpec> table = build();
  return table;
}

const CheckSpec* find_check(std::string_view key) {
  for (const auto& c : check_catalog())
    if (c.key == key) return &c;
  return nullptr;
}

std::int64_t parse_size(const json& v) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
      throw std::invalid_argument("size too large");
    if (v.get<long long>() < 0) throw std::invalid_argument("must not be negative");
    return v.get<std::int64_t>();
  }
  if (!v.is_string()) throw std::invalid_argument("must be a byte count or a size such as \"64M\"");
  const auto text = v.get<std::string>();
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 15) throw std::invalid_argument("bad size '" + text.substr(0, 40) + "'");
  std::int64_t n = std::stoll(text.substr(0, digits));
  std::string suffix = text.substr(digits);
  if (suffix.size() == 2 && (suffix[1] == 'B' || suffix[1] == 'b')) suffix.pop_back();
  int shift = 0;
  if (suffix.empty()) shift = 0;
  else if (suffix == "k" || suffix == "K") shift = 10;
  else if (suffix == "m" || suffix == "M") shift = 20;
  else if (suffix == "g" || suffix == "G") shift = 30;
  else if (suffix == "t" || suffix == "T") shift = 40;
  else throw std::invalid_argument("bad size suffix in '" + text.substr(0, 40) + "'");
  if (n > (std::numeric_limits<std::int64_t>::max() >> shift)) throw std::invalid_argument("size too large");
  return n << shift;
}

namespace {
void describe_figure(std::ostream& os, const char* label, const FigureSpec& f) {
  os << "      " << label << ": " << f.metric << " [" << f.unit << "], "
     << (f.higher_is_better ? "higher is better" : "lower is better") << (f.per_size ? ", per message size" : "")
     << "\n";
}
}  // namespace

std::string describe_checks(const std::vector<std::string>& only) {
  std::ostringstream os;
  for (const auto& c : check_catalog()) {
    if (!only.empty() && std::find(only.begin(), only.end(), c.key) == only.end()) continue;
    os << "  " << c.key << "  (" << to_string(c.scope) << ", ";
    if (ingested_check(c.key)) os << "read by kiln ingest";
    else os << "deadline " << c.default_deadline_s << " s";
    os << ")\n      "
       << c.description << "\n";
    if (c.figure) describe_figure(os, "figure", *c.figure);
    for (const auto& f : c.more_figures) describe_figure(os, "also", f);
    for (const auto& ps : c.params) {
      os << "      " << ps.name << " (" << to_string(ps.type);
      if (!ps.fallback.is_null()) os << ", default " << ps.fallback.dump();
      if (ps.min || ps.max)
        os << ", " << (ps.min ? json(*ps.min).dump() : std::string("..")) << ".."
           << (ps.max ? json(*ps.max).dump() : std::string(""));
      if (!ps.choices.empty()) {
        os << ", one of";
        for (const auto& ch : ps.choices) os << " " << ch;
      }
      os << "): " << ps.help << "\n";
    }
  }
  return os.str();
}

json validate_params(const CheckSpec& spec, const json& params) {
  if (!params.is_object()) throw std::invalid_argument(spec.key + ": parameters must be a JSON object");
  json out = json::object();
  for (const auto& [name, v] : params.items()) {
    const ParamSpec* ps = name == kDeadline.name ? &kDeadline : nullptr;
    for (const auto& cand : spec.params)
      if (cand.name == name) ps = &cand;
    if (!ps) {
      std::string known;
      for (const auto& cand : spec.params) known += (known.empty() ? "" : ", ") + cand.name;
      throw std::invalid_argument(spec.key + ": unknown parameter '" + name.substr(0, 64) + "' (known: " +
                                  (known.empty() ? "none" : known) + ", deadline_s)");
    }
    out[name] = check_value(spec.key + ": " + name, *ps, v);
  }
  for (const auto& ps : spec.params)
    if (!out.contains(ps.name) && !ps.fallback.is_null()) out[ps.name] = ps.fallback;
  return out;
}

}  // namespace kiln
