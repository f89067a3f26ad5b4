#include "worker/checks/nccl/harness.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <thread>
#include <vector>

#include "common/check.hpp"
#include "worker/hw/cuda_util.hpp"  // KILN_CUDA: the worker's one CUDA check macro
#include "worker/mpi_deadline.hpp"
#include "worker/sweep_budget.hpp"
#include "worker/hw/nccl_comm.hpp"
#include "worker/checks/nccl/params.hpp"

#if KILN_HAVE_NCCL
#include "worker/checks/nccl/pattern.hpp"
#endif

namespace kiln::worker::nccl {

std::optional<std::string> CollectiveTest::applicable(const NodeInfo& node) const { return skip_reason(node); }

#if !KILN_HAVE_NCCL

void CollectiveTest::run(Context&, ResultSink& sink) {
  Result r;
  r.metric = "busbw";
  r.status = Status::Skip;
  r.reason = *applicable(NodeInfo{});
  sink.emit(r);
}

#else

namespace {

using detail::Clock;
using detail::Communicator;
using detail::DeviceBuffer;
using detail::Failure;
using detail::Stream;
using detail::SweepStopped;
using detail::wait_comm;
using detail::wait_stream;
using mpi_deadline::Exchanger;

// This rank's state as sent to the group's root at the end (plain bytes over MPI).
struct RankState {
  std::int32_t world_rank = -1;
  std::int32_t failure = 0;      // Failure
  std::int32_t phase = 0;        // Phase
  std::int32_t joined = 1;       // enqueued every operation of the step it stopped in
  std::int32_t finished = 1;     // that step completed on its GPU
  std::int32_t placement = 0;    // 0 out, 1 in
  std::uint64_t line_bytes = 0;  // the line it stopped in
};

enum Phase : std::int32_t { kBootstrap = 0, kInit = 1, kBarrier = 2, kRun = 3, kDone = 4, kReport = 5 };

const char* phase_name(std::int32_t p) {
  switch (p) {
    case kBootstrap: return "bootstrap (NCCL id exchange)";
    case kInit: return "communicator init";
    case kBarrier: return "barrier before a line";
    case kRun: return "collective";
    case kDone: return "done";
    case kReport: return "report";
  }
  return "?";
}

struct LineReport {
  double seconds = 0;
  std::uint64_t wrong = 0;
};

// What the root learns from the closing state exchange (elsewhere only `failed`, this rank's).
struct GroupVerdict {
  bool failed = false;
  std::vector<int> unfinished, not_joined, no_reply;
  nlohmann::json per_rank = nlohmann::json::array();
};

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// One run of a collective test on this rank, phase by phase. Members keep the names the
// KILN_CUDA expressions quote in error reasons, and are released in reverse order: buffers and
// stream before the communicator, all of them before the exchanger.
class Sweep {
 public:
  Sweep(const CollectiveTest& check, Context& context, ResultSink& out, const SweepParams& params,
        const std::optional<HangDrill>& hang)
      : test(check),
        ctx(context),
        sink(out),
        p(params),
        drill(hang),
        c(test.coll()),
        n(ctx.group_size),
        me(ctx.group_rank),
        my_world(ctx.node.world_rank),
        // Keep back time to abort, drain and report after the collective deadline.
        coll_deadline(ctx.deadline - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                         std::min(p.abort_grace_s, std::max(0.0, ctx.seconds_left()) * 0.25)))),
        ex(ctx.comm) {
    st.world_rank = my_world;
  }

  void run();

 private:
  void connect();
  void allocate();
  void sweep();
  void measure_line(std::size_t size, const Shape& shape, Placement pl);
  bool admit(const Shape& shape, Placement pl, int ops);
  void emit_budget_skip(const Shape& shape, Placement pl, const std::string& reason);
  void launch_at(const Shape& shape, Placement pl, std::size_t offset);
  void run_ops(std::size_t size, const Shape& shape, Placement pl, int count, bool rotate);
  std::uint64_t check_line(std::size_t size, const Shape& shape, Placement pl);
  void report_line(const Shape& shape, Placement pl, const LineReport& rep);
  void stop_gpu_work();
  GroupVerdict exchange_states(bool failed);
  void emit_average();
  [[noreturn]] void report_abort(bool failed, const GroupVerdict& g);

  const CollectiveTest& test;
  Context& ctx;
  ResultSink& sink;
  const SweepParams p;
  const std::optional<HangDrill> drill;
  const Coll c;
  const int n;
  const int me;
  const int my_world;
  const Clock::time_point coll_deadline;
  Exchanger ex;

  RankState st;
  std::string stop_detail;
  std::vector<double> busbws;
  std::size_t max_reduced_from = 0;
  // The time budget of the measured pass (worker/sweep_budget.hpp).
  budget::Step last_line;
  bool budget_stopped = false;
  budget::Decision budget_stop;
  std::size_t budget_stop_bytes = 0;

  std::optional<Communicator> comm;
  std::optional<Stream> stream;
  std::optional<DeviceBuffer> sendbuf, recvbuf, errors;
  std::vector<std::size_t> ladder;
  std::size_t buf_bytes = 0;
};

void Sweep::run() {
  // Connect everything at init (see Communicator). NCCL reads it once per process.
  ::setenv("NCCL_RUNTIME_CONNECT", "0", /*overwrite=*/0);
  const int device = ctx.node.local_rank % std::max(1, ctx.node.gpu_count);
  KILN_CUDA(cudaSetDevice(device));

  try {
    connect();
    allocate();
    sweep();
    st.phase = kDone;
    st.joined = st.finished = 1;
  } catch (const SweepStopped& s) {
    st.failure = static_cast<std::int32_t>(s.failure);
    stop_detail = s.detail;
  } catch (const std::exception& e) {
    // A CUDA or memory failure on this rank: still abort and tell the group, so the others are
    // not left to time out without knowing why.
    st.failure = static_cast<std::int32_t>(Failure::NcclError);
    stop_detail = e.what();
  }

  const bool failed = st.failure != static_cast<std::int32_t>(Failure::None);
  if (failed && comm) stop_gpu_work();
  const GroupVerdict g = exchange_states(failed);
  if (!failed && !g.failed) {
    if (comm) comm->close(ctx.deadline);
    if (me == 0 && !busbws.empty()) emit_average();
    return;
  }
  if (comm) comm->abort();
  report_abort(failed, g);
}

// The NCCL id from group rank 0, then the communicators and the stream.
void Sweep::connect() {
  st.phase = kBootstrap;
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (me == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) throw SweepStopped{Failure::NcclError, std::string("ncclGetUniqueId: ") + ncclGetErrorString(r)};
  }
  if (!ex.broadcast(&id, sizeof id, 0, coll_deadline))
    throw SweepStopped{Failure::Timeout, "the NCCL id did not arrive from group rank 0 by the deadline"};

  st.phase = kInit;
  comm.emplace(id, n, me, test.blocking_ops(), p.comm == "direct", coll_deadline);
  stream.emplace();
}

// Buffers as nccl-tests sizes them: send and receive of the largest line each, capped by memory.
void Sweep::allocate() {
  ladder = size_ladder(p.min_bytes, p.max_bytes, p.factor);
  std::size_t free_b = 0, total_b = 0;
  KILN_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const std::size_t reserve = std::size_t(1) << 30;
  const std::size_t cap = free_b > reserve ? (free_b - reserve) / 3 : 0;  // send, recv, slack
  if (ladder.back() > cap) {
    max_reduced_from = ladder.back();
    while (!ladder.empty() && ladder.back() > cap) ladder.pop_back();
    if (ladder.empty()) throw std::runtime_error("not enough free GPU memory for min_bytes");
  }
  buf_bytes = 0;
  for (std::size_t s : ladder) buf_bytes = std::max(buf_bytes, shape_for(c, s, sizeof(float), n).line_bytes());
  buf_bytes = std::max(buf_bytes, ladder.back());
  sendbuf.emplace(buf_bytes, p.buffers == "nccl");
  recvbuf.emplace(buf_bytes, p.buffers == "nccl");
  errors.emplace(sizeof(unsigned long long));
  const std::size_t buf_count = buf_bytes / sizeof(float);
  // Never time on zeros or on whatever cudaMalloc left: fill both with the pattern once.
  KILN_CUDA(fill_pattern(reinterpret_cast<float*>(sendbuf->get()), buf_count, me, 0, stream->get()));
  KILN_CUDA(fill_pattern(reinterpret_cast<float*>(recvbuf->get()), buf_count, me, 0, stream->get()));
  wait_stream(stream->get(), comm->ops(), coll_deadline);
}

// Pass 0 warms every size up once before anything is timed (as nccl-tests does), so the first
// timed line does not carry first-use costs; pass 1 measures.
void Sweep::sweep() {
  for (int pass = p.warmup > 0 ? 0 : 1; pass < 2; ++pass)
  for (std::size_t size : ladder) {
    const Shape shape = shape_for(c, size, sizeof(float), n);
    if (shape.count == 0) continue;  // the 16-byte chunk rounding left nothing to move
    for (Placement pl : {Placement::OutOfPlace, Placement::InPlace}) {
      if (pass == 0 && pl == Placement::InPlace) continue;
      if (pl == Placement::OutOfPlace && !p.out_of_place && pass == 1) continue;
      if (pl == Placement::InPlace && (!p.in_place || !test.supports_in_place())) continue;
      st.placement = pl == Placement::InPlace ? 1 : 0;
      st.line_bytes = shape.line_bytes();
      if (pass == 0) {
        run_ops(size, shape, pl, p.warmup, true);
        continue;
      }
      // A measured line runs its warm-up, the timed iterations and the data check.
      const int ops = std::max(1, p.warmup) + p.iters + (p.check ? 1 : 0);
      if (!admit(shape, pl, ops)) continue;
      const auto started = Clock::now();
      measure_line(size, shape, pl);
      last_line = {static_cast<std::int64_t>(shape.line_bytes()), ops,
                   std::chrono::duration<double>(Clock::now() - started).count()};
    }
  }
}

// Whether the group measures this line within the time left before the collective deadline, less
// budget_reserve_s: every member's estimate and time left go to the root, which sends back the
// largest estimate and the least time left, so that all members decide alike. The warm-up pass is
// not budgeted (it runs each size a few times, a small part of the sweep).
bool Sweep::admit(const Shape& shape, Placement pl, int ops) {
  const auto bytes = static_cast<std::int64_t>(shape.line_bytes());
  if (budget_stopped) {
    emit_budget_skip(shape, pl,
                     "size " + std::to_string(bytes) + " B skipped: the sweep stopped at " +
                         std::to_string(budget_stop_bytes) + " B (" + budget_stop.reason + ")");
    return false;
  }
  struct Ask {
    double estimate_s;
    double left_s;
  } ask{budget::estimate_s(last_line, bytes, ops), std::chrono::duration<double>(coll_deadline - Clock::now()).count()};
  st.phase = kBarrier;
  auto all = ex.gather(&ask, sizeof ask, 0, coll_deadline);
  if (me == 0) {
    for (int r = 0; r < n; ++r) {
      if (!all[r]) throw SweepStopped{Failure::Timeout, "a group member did not answer the time-budget exchange by the deadline"};
      Ask a;
      std::memcpy(&a, all[r]->data(), sizeof a);
      ask.estimate_s = std::max(ask.estimate_s, a.estimate_s);
      ask.left_s = std::min(ask.left_s, a.left_s);
    }
  }
  if (!ex.broadcast(&ask, sizeof ask, 0, coll_deadline))
    throw SweepStopped{Failure::Timeout, "the time-budget decision did not arrive from group rank 0 by the deadline"};
  const budget::Decision d = budget::decide(bytes, ask.estimate_s, ask.left_s, p.budget_reserve_s);
  if (d.run) return true;
  budget_stopped = true;
  budget_stop = d;
  budget_stop_bytes = shape.line_bytes();
  emit_budget_skip(shape, pl, d.reason);
  return false;
}

// The root reports a skipped line (as it reports the measured ones).
void Sweep::emit_budget_skip(const Shape& shape, Placement pl, const std::string& reason) {
  if (me != 0) return;
  Result res;
  res.metric = "busbw";
  res.unit = "GB/s";
  res.size_bytes = static_cast<std::int64_t>(shape.line_bytes());
  res.status = Status::Skip;
  res.reason = reason;
  res.extra = {{"collective", coll_name(c)},           {"placement", placement_name(pl)},
               {"budget", true},                        {"estimate_s", budget_stop.estimate_s},
               {"left_s", budget_stop.left_s},          {"reserve_s", budget_stop.reserve_s},
               {"stopped_at_bytes", budget_stop_bytes}, {"group_world_ranks", ctx.group_world_ranks}};
  sink.emit(std::move(res));
}

void Sweep::measure_line(std::size_t size, const Shape& shape, Placement pl) {
  run_ops(size, shape, pl, std::max(1, p.warmup), true);
  st.phase = kBarrier;
  if (!ex.barrier(coll_deadline))
    throw SweepStopped{Failure::Timeout, "a group member did not reach the barrier before the line by the deadline"};

  // nccl-tests' default timing: host clock from the first launch to the stream's completion,
  // divided by the iterations, then averaged over the ranks.
  const auto t0 = Clock::now();
  run_ops(size, shape, pl, p.iters, true);
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count() / p.iters;

  LineReport rep;
  rep.seconds = seconds;
  if (p.check) rep.wrong = check_line(size, shape, pl);
  report_line(shape, pl, rep);
}

void Sweep::launch_at(const Shape& shape, Placement pl, std::size_t offset) {
  Launch l;
  char* r = recvbuf->get() + offset;
  if (pl == Placement::InPlace) {
    l.send = r + static_cast<std::size_t>(me) * shape.inplace_send_stride;
    l.recv = r + static_cast<std::size_t>(me) * shape.inplace_recv_stride;
  } else {
    l.send = sendbuf->get() + offset;
    l.recv = r;
  }
  l.count = shape.count;
  l.rank = me;
  l.nranks = n;
  l.root = p.root;
  l.comm = comm->ops();
  l.stream = stream->get();
  ncclResult_t res = test.enqueue(l);
  if (res == ncclInProgress) res = wait_comm(comm->ops(), coll_deadline);
  if (res == ncclInProgress) throw SweepStopped{Failure::Timeout, "enqueue did not finish by the deadline"};
  if (res != ncclSuccess) throw SweepStopped{Failure::NcclError, std::string("enqueue: ") + ncclGetErrorString(res)};
}

// `count` operations of a line of nominal `size`, then waits for them on the GPU.
void Sweep::run_ops(std::size_t size, const Shape& shape, Placement pl, int count, bool rotate) {
  st.phase = kRun;
  st.joined = 0;
  st.finished = 0;
  if (drill && drill->world_rank == my_world && size >= drill->at_bytes) {
    // Drill: this rank never joins; it sits as a stuck rank would until the deadline.
    while (Clock::now() < coll_deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (drill->silent) {
      while (!ctx.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    throw SweepStopped{Failure::Drill, "drill: this rank did not join the collective (KILN_FAULT nccl.hang_rank)"};
  }
  for (int i = 0; i < count; ++i)
    launch_at(shape, pl, rotate ? rotation_offset(shape.line_bytes(), buf_bytes, i) : 0);
  st.joined = 1;
  wait_stream(stream->get(), comm->ops(), coll_deadline);
  st.finished = 1;
}

// Fresh pattern where this placement reads its send data, one operation, then compare.
std::uint64_t Sweep::check_line(std::size_t size, const Shape& shape, Placement pl) {
  float* send_f = pl == Placement::InPlace
                      ? reinterpret_cast<float*>(recvbuf->get() + static_cast<std::size_t>(me) * shape.inplace_send_stride)
                      : reinterpret_cast<float*>(sendbuf->get());
  KILN_CUDA(fill_pattern(send_f, shape.send_bytes / sizeof(float), me, 0, stream->get()));
  run_ops(size, shape, pl, 1, false);
  KILN_CUDA(cudaMemsetAsync(errors->get(), 0, sizeof(unsigned long long), stream->get()));
  CheckSpec cs{c, me, n, shape.count, p.root};
  const float* recv_f = reinterpret_cast<const float*>(
      recvbuf->get() + (pl == Placement::InPlace ? static_cast<std::size_t>(me) * shape.inplace_recv_stride : 0));
  KILN_CUDA(check_pattern(recv_f, shape.recv_bytes / sizeof(float), cs,
                          reinterpret_cast<unsigned long long*>(errors->get()), stream->get()));
  wait_stream(stream->get(), comm->ops(), coll_deadline);
  unsigned long long wrong = 0;
  KILN_CUDA(cudaMemcpy(&wrong, errors->get(), sizeof wrong, cudaMemcpyDeviceToHost));
  return wrong;
}

// Every rank's timing to the root, which reports the line: the mean time over the ranks that
// answered, as nccl-tests averages it.
void Sweep::report_line(const Shape& shape, Placement pl, const LineReport& rep) {
  auto all = ex.gather(&rep, sizeof rep, 0, coll_deadline);
  if (me != 0) return;
  double sum = 0, worst = 0;
  std::uint64_t wrong = 0;
  std::vector<int> silent;
  for (int r = 0; r < n; ++r) {
    if (!all[r]) {
      silent.push_back(ctx.group_world_ranks.empty() ? r : ctx.group_world_ranks[r]);
      continue;
    }
    LineReport lr;
    std::memcpy(&lr, all[r]->data(), sizeof lr);
    sum += lr.seconds;
    worst = std::max(worst, lr.seconds);
    wrong += lr.wrong;
  }
  const int answered = n - static_cast<int>(silent.size());
  const Bandwidth bw = bandwidth(c, shape, sum / std::max(1, answered), n);
  Result res;
  res.metric = "busbw";
  res.value = bw.busbw_gbs;
  res.unit = "GB/s";
  res.size_bytes = static_cast<std::int64_t>(shape.line_bytes());
  res.extra = {{"collective", coll_name(c)}, {"placement", placement_name(pl)},
               {"time_us", bw.time_us},       {"algbw_gbs", bw.algbw_gbs},
               {"time_us_max", worst * 1e6},  {"count", shape.count},
               {"dtype", "float"},            {"op", "sum"},
               {"nranks", n},                 {"iters", p.iters},
               {"group_world_ranks", ctx.group_world_ranks}};
  if (p.check) res.extra["wrong_elements"] = wrong;
  if (wrong) {
    res.status = Status::Fail;
    res.reason = std::to_string(wrong) + " received elements differ from the expected result";
  }
  if (!silent.empty()) {
    res.extra["ranks_without_timing"] = silent;
  }
  busbws.push_back(bw.busbw_gbs);
  sink.emit(std::move(res));
}

// Abort first so that kernels spinning on a peer that never comes return; then give the
// stream a few seconds to drain before freeing anything it may still touch.
void Sweep::stop_gpu_work() {
  comm->abort();
  const auto drain = Clock::now() + std::chrono::seconds(10);
  while (stream && cudaStreamQuery(stream->get()) == cudaErrorNotReady && Clock::now() < drain)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (stream && cudaStreamQuery(stream->get()) == cudaErrorNotReady) {
    stream->leak();
    if (sendbuf) sendbuf->leak();
    if (recvbuf) recvbuf->leak();
    if (errors) errors->leak();
    stop_detail += "; the GPU work did not stop after ncclCommAbort (buffers kept; restart the worker)";
  }
}

// Everyone tells the root how it ended; a rank that does not answer by the round's deadline is
// reported as such (it is stuck in host code or gone).
GroupVerdict Sweep::exchange_states(bool failed) {
  const bool silent_drill = drill && drill->silent && drill->world_rank == my_world && failed;
  std::vector<std::optional<std::vector<std::uint8_t>>> states;
  if (!silent_drill) states = ex.gather(&st, sizeof st, 0, ctx.deadline, Exchanger::kFinalTag);

  GroupVerdict g;
  g.failed = failed;
  if (me != 0) return g;
  for (int r = 0; r < n; ++r) {
    const int wr = ctx.group_world_ranks.empty() ? r : ctx.group_world_ranks[r];
    if (!states[r]) {
      g.no_reply.push_back(wr);
      g.unfinished.push_back(wr);
      g.failed = true;
      continue;
    }
    RankState rs;
    std::memcpy(&rs, states[r]->data(), sizeof rs);
    if (rs.failure != 0) g.failed = true;
    if (rs.phase != kDone || !rs.finished) g.unfinished.push_back(wr);
    if (rs.failure == static_cast<std::int32_t>(Failure::Drill) || (rs.phase <= kRun && !rs.joined))
      g.not_joined.push_back(wr);
    g.per_rank.push_back({{"world_rank", wr},
                          {"phase", phase_name(rs.phase)},
                          {"joined", rs.joined != 0},
                          {"finished", rs.finished != 0},
                          {"line_bytes", rs.line_bytes},
                          {"placement", rs.placement ? "in" : "out"},
                          {"failure", rs.failure}});
  }
  return g;
}

void Sweep::emit_average() {
  double sum = 0;
  for (double b : busbws) sum += b;
  Result res;
  res.metric = "avg_busbw";
  res.value = sum / busbws.size();
  res.unit = "GB/s";
  res.extra = {{"collective", coll_name(c)}, {"lines", busbws.size()}, {"nranks", n}};
  if (max_reduced_from) res.extra["max_bytes_reduced_from"] = max_reduced_from;
  sink.emit(std::move(res));
}

// This rank's result of a failed sweep, and the exception that makes it the test's status: at the
// root the group's verdict (who had not finished, who never joined or never answered), elsewhere
// what stopped this rank.
void Sweep::report_abort(bool failed, const GroupVerdict& g) {
  const bool timeout = st.failure != static_cast<std::int32_t>(Failure::NcclError);
  Result mine;
  mine.metric = "state";
  mine.status = timeout ? Status::Timeout : Status::Error;
  mine.size_bytes = static_cast<std::int64_t>(st.line_bytes);
  std::string summary;
  if (me == 0) {
    std::ostringstream os;
    os << test.key() << " aborted in " << phase_name(st.phase) << " at " << st.line_bytes << " B ("
       << (st.placement ? "in" : "out") << "-of-place)";
    if (!g.unfinished.empty()) os << "; ranks not finished: [" << join(g.unfinished) << "]";
    if (!g.not_joined.empty()) os << "; never joined: [" << join(g.not_joined) << "]";
    if (!g.no_reply.empty()) os << "; no reply: [" << join(g.no_reply) << "]";
    if (!stop_detail.empty()) os << "; rank " << my_world << ": " << stop_detail;
    summary = os.str();
    mine.metric = "hang";
    mine.reason = summary;
    mine.extra = {{"collective", coll_name(c)},      {"unfinished_ranks", g.unfinished},
                  {"not_joined_ranks", g.not_joined}, {"no_reply_ranks", g.no_reply},
                  {"ranks", g.per_rank},              {"group_world_ranks", ctx.group_world_ranks},
                  {"aborted", true}};
    if (!failed) {
      // The root itself finished but someone else did not: the group still failed.
      mine.status = Status::Timeout;
    }
  } else {
    summary = test.key() + " stopped on rank " + std::to_string(my_world) + " in " + phase_name(st.phase) + ": " +
              (stop_detail.empty() ? std::string("a group member failed") : stop_detail);
    mine.reason = summary;
    mine.extra = {{"collective", coll_name(c)}, {"joined", st.joined != 0}, {"finished", st.finished != 0},
                  {"placement", st.placement ? "in" : "out"}, {"aborted", true}};
  }
  sink.emit(std::move(mine));
  if (timeout || me == 0) throw DeadlineExceeded(summary);
  throw CheckError(summary);
}

}  // namespace

void CollectiveTest::run(Context& ctx, ResultSink& sink) {
  const SweepParams p = parse_sweep_params(ctx.params);
  if (ctx.group_size < 2) {
    // A collective over one GPU moves nothing between GPUs: all-reduce, all-gather, reduce-scatter
    // and all-to-all read a busbw of 0 (the n-1 factor), which a report showed as a 0.00 GB/s
    // headline that passed; broadcast and send/recv would time a copy inside one GPU. Nothing of
    // the fabric was measured, so it is a SKIP.
    Result r;
    r.metric = "busbw";
    r.unit = "GB/s";
    r.status = Status::Skip;
    r.reason = "one rank in the group: a collective needs two or more GPUs to move data";
    sink.emit(r);
    return;
  }
  const auto drill = hang_drill(ctx.faults.spec, key());
  if (p.root < 0 || p.root >= ctx.group_size) throw std::invalid_argument("root must be a rank of the group");
  Sweep(*this, ctx, sink, p, drill).run();
}

#endif  // KILN_HAVE_NCCL

}  // namespace kiln::worker::nccl
