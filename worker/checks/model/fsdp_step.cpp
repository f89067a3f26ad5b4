// model.fsdp_step: one FSDP-shaped training step over the group's GPUs (fsdp_engine.hpp), timed
// overlapped, compute-only and communication-only, then repeated with checksums that must match
// across ranks and steps (fsdp_math.hpp says what is compared).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "common/check.hpp"
#include "common/stats.hpp"
#include "worker/check.hpp"
#include "worker/checks/model/fsdp_math.hpp"
#include "worker/hw/nccl_comm.hpp"

#if KILN_HAVE_NCCL
#include "worker/checks/model/fsdp_engine.hpp"
#include "worker/mpi_deadline.hpp"
#endif

namespace kiln::worker::model {
namespace {

constexpr int kMaxVerify = 8;

struct Params {
  FsdpShape shape;
  int warmup = 3, steps = 10, verify_steps = 2;
  double peak_tflops = 0, abort_grace_s = 5;
};

Params parse(const Context& ctx) {
  Params p;
  p.shape.layers = ctx.param<int>("layers", p.shape.layers);
  p.shape.hidden = ctx.param<std::int64_t>("hidden", p.shape.hidden);
  p.shape.tokens = ctx.param<std::int64_t>("tokens", p.shape.tokens);
  p.shape.ranks = ctx.group_size;
  p.warmup = ctx.param<int>("warmup", p.warmup);
  p.steps = ctx.param<int>("steps", p.steps);
  p.verify_steps = std::min(kMaxVerify, ctx.param<int>("verify_steps", p.verify_steps));
  p.peak_tflops = ctx.param<double>("peak_tflops", p.peak_tflops);
  p.abort_grace_s = ctx.param<double>("abort_grace_s", p.abort_grace_s);
  if (p.shape.hidden % 64 || p.shape.tokens % 64) throw std::invalid_argument("hidden and tokens must be multiples of 64");
  return p;
}

#if KILN_HAVE_NCCL

// What every rank sends the group's root at the end (plain bytes over MPI).
struct RankReport {
  std::int32_t world_rank = -1;
  std::int32_t verified = 0;
  double step_ms = 0, compute_ms = 0, comm_ms = 0;
  std::uint64_t loss[kMaxVerify] = {}, grad[kMaxVerify] = {}, shard[kMaxVerify] = {};
};

// The root's results from every rank's report: the figures, and the determinism verdict.
void report(const Context& ctx, ResultSink& sink, const Params& p, const std::vector<RankReport>& all) {
  StepTimes t;
  std::vector<RankChecksums> sums;
  nlohmann::json per_rank = nlohmann::json::array();
  for (const RankReport& r : all) {
    // A step ends when its slowest rank ends: the group's time is the slowest rank's median.
    t.step_ms = std::max(t.step_ms, r.step_ms);
    t.compute_ms = std::max(t.compute_ms, r.compute_ms);
    t.comm_ms = std::max(t.comm_ms, r.comm_ms);
    RankChecksums c{r.world_rank, {r.loss, r.loss + r.verified}, {r.grad, r.grad + r.verified},
                    {r.shard, r.shard + r.verified}};
    per_rank.push_back({{"world_rank", r.world_rank}, {"step_ms", r.step_ms}, {"compute_ms", r.compute_ms},
                        {"comm_ms", r.comm_ms}, {"loss_checksum", hex(c.loss.empty() ? 0 : c.loss[0])},
                        {"grad_checksum", hex(c.grad.empty() ? 0 : c.grad[0])}});
    sums.push_back(std::move(c));
  }
  const StepFigures f = step_figures(p.shape, t, p.peak_tflops);
  Result res;
  res.metric = "tflops";
  res.value = f.tflops;
  res.unit = "TFLOP/s";
  res.extra = {{"step_ms", t.step_ms},          {"compute_only_ms", t.compute_ms}, {"comm_only_ms", t.comm_ms},
               {"exposed_comm_ms", f.exposed_comm_ms}, {"comm_share", f.comm_share}, {"overlap", f.overlap},
               {"flops_per_step", step_flops(p.shape)}, {"layers", p.shape.layers}, {"hidden", p.shape.hidden},
               {"tokens", p.shape.tokens},      {"nranks", p.shape.ranks},     {"steps", p.steps},
               {"dtype", "bf16"},               {"ranks", per_rank},           {"group_world_ranks", ctx.group_world_ranks}};
  if (f.mfu) res.extra["mfu"] = *f.mfu, res.extra["peak_tflops"] = p.peak_tflops;
  else res.extra["mfu_note"] = f.mfu_note;
  sink.emit(res);

  Result det;
  det.metric = "determinism";
  det.extra = {{"verified_steps", p.verify_steps}, {"nranks", p.shape.ranks}};
  const auto problems = determinism_problems(sums);
  det.value = static_cast<double>(problems.size());
  if (!problems.empty()) {
    det.status = Status::Fail;
    det.reason = "model.fsdp_step is not deterministic: " + problems.front() +
                 (problems.size() > 1 ? " (and " + std::to_string(problems.size() - 1) + " more)" : "");
    det.extra["problems"] = problems;
  }
  sink.emit(det);
}

using nccl::detail::Communicator;
using nccl::detail::SweepStopped;
using Clock = gpu::Clock;

// This rank's part: the timed steps (the three kinds interleaved, so drift affects them alike),
// then the verified ones.
RankReport measure(const Context& ctx, const Params& p, FsdpEngine& engine, Clock::time_point deadline) {
  for (int i = 0; i < p.warmup; ++i) engine.step(StepMode::Full, deadline);
  std::vector<double> full, compute, comm;
  for (int i = 0; i < p.steps; ++i) {
    full.push_back(engine.step(StepMode::Full, deadline));
    compute.push_back(engine.step(StepMode::ComputeOnly, deadline));
    comm.push_back(engine.step(StepMode::CommOnly, deadline));
  }
  RankReport r;
  r.world_rank = ctx.node.world_rank;
  r.step_ms = stats::median(full);
  r.compute_ms = stats::median(compute);
  r.comm_ms = stats::median(comm);
  r.verified = p.verify_steps;
  for (int k = 0; k < p.verify_steps; ++k) {
    const StepSums s = engine.verified_step(deadline);
    r.loss[k] = s.loss, r.grad[k] = s.grad, r.shard[k] = s.shard;
  }
  return r;
}

void check_memory(const FsdpShape& shape) {
  std::size_t free_b = 0, total_b = 0;
  KILN_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const std::int64_t need = device_bytes(shape) + (std::int64_t(1) << 30);  // cuBLAS, NCCL, slack
  if (need > static_cast<std::int64_t>(free_b))
    throw CheckError("the step needs " + std::to_string(need >> 20) + " MiB on the GPU but " +
                     std::to_string(free_b >> 20) + " MiB are free: lower hidden, tokens or layers");
}

void run_group(Context& ctx, ResultSink& sink, const Params& p) {
  ::setenv("NCCL_RUNTIME_CONNECT", "0", /*overwrite=*/0);  // connect at init, as the nccl.* checks
  KILN_CUDA(cudaSetDevice(ctx.node.local_rank % std::max(1, ctx.node.gpu_count)));
  check_memory(p.shape);
  const auto grace = std::chrono::duration<double>(std::min(p.abort_grace_s, std::max(0.0, ctx.seconds_left()) * 0.25));
  const Clock::time_point deadline = ctx.deadline - std::chrono::duration_cast<Clock::duration>(grace);
  mpi_deadline::Exchanger ex(ctx.comm);
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (ctx.group_rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) throw CheckError("ncclGetUniqueId failed");
  if (!ex.broadcast(&id, sizeof id, 0, deadline)) throw DeadlineExceeded("the NCCL id did not arrive from group rank 0");

  std::optional<Communicator> comm;
  std::optional<FsdpEngine> engine;
  RankReport mine;
  try {
    comm.emplace(id, ctx.group_size, ctx.group_rank, true, false, deadline);
    engine.emplace(p.shape, ctx.node.local_rank % std::max(1, ctx.node.gpu_count), ctx.group_rank, comm->ops());
    mine = measure(ctx, p, *engine, deadline);
  } catch (const SweepStopped& s) {
    if (comm) comm->abort();  // first, so that no kernel is left waiting on a peer when buffers go
    engine.reset();
    if (s.failure == nccl::detail::Failure::Timeout) throw DeadlineExceeded("model.fsdp_step: " + s.detail);
    throw CheckError("model.fsdp_step: " + s.detail);
  } catch (...) {  // a CUDA or cuBLAS error: the same order, then the runner reports it
    if (comm) comm->abort();
    engine.reset();
    throw;
  }
  engine.reset();
  comm->close(deadline);
  auto all = ex.gather(&mine, sizeof mine, 0, ctx.deadline, mpi_deadline::Exchanger::kFinalTag);
  if (ctx.group_rank != 0) return;
  std::vector<RankReport> reports;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (!all[r]) throw DeadlineExceeded("group rank " + std::to_string(r) + " did not report its step by the deadline");
    RankReport rr;
    std::memcpy(&rr, all[r]->data(), sizeof rr);
    reports.push_back(rr);
  }
  report(ctx, sink, p, reports);
}

#endif  // KILN_HAVE_NCCL

class FsdpStepCheck final : public Check {
 public:
  std::string key() const override { return "model.fsdp_step"; }
  std::optional<std::string> applicable(const NodeInfo& node) const override { return nccl::skip_reason(node); }
  void run(Context& ctx, ResultSink& sink) override {
    const Params p = parse(ctx);
#if KILN_HAVE_NCCL
    run_group(ctx, sink, p);
#else
    // The runner reports SKIP from applicable() and never gets here without NCCL.
    (void)p, (void)sink;
    throw CheckError(applicable(ctx.node).value_or("built without NCCL"));
#endif
  }
};

KILN_REGISTER_CHECK(FsdpStepCheck);

}  // namespace
}  // namespace kiln::worker::model
