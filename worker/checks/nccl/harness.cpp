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
#include "worker/checks/nccl/params.hpp"

#if KILN_HAVE_NCCL
#include "worker/checks/nccl/pattern.hpp"
#endif

namespace kiln::worker::nccl {

std::optional<std::string> CollectiveTest::applicable(const NodeInfo& node) const {
#if KILN_HAVE_NCCL
  if (node.gpu_count <= 0)
    return node.gpu_skip_reason.empty() ? std::string("no CUDA GPU visible") : node.gpu_skip_reason;
  if (node.local_size > node.gpu_count)
    return std::to_string(node.local_size) + " ranks on " + node.host + " but only " + std::to_string(node.gpu_count) +
           " GPU(s): NCCL needs one rank per GPU (start as many ranks per node as GPUs)";
  return std::nullopt;
#else
  (void)node;
  return std::string("kiln-worker was built without NCCL (CUDA toolkit or nccl.h not found at configure time)");
#endif
}

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

using Clock = std::chrono::steady_clock;
using mpi_deadline::Exchanger;

// What went wrong on this rank, if anything; decides the result's status and the abort.
enum class Failure : std::int32_t { None = 0, Timeout = 1, NcclError = 2, Drill = 3 };

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

// A failure that ends the sweep on this rank; the harness reports it after the state exchange.
struct SweepStopped {
  Failure failure;
  std::string detail;
};

class DeviceBuffer {
 public:
  // nccl = true: ncclMemAlloc (cuMem memory, as nccl-tests allocates; NCCL falls back to cudaMalloc
  // where cuMem is off). Otherwise cudaMalloc.
  explicit DeviceBuffer(std::size_t bytes, bool nccl = false) : bytes_(bytes), nccl_(nccl) {
    const std::size_t n = std::max<std::size_t>(bytes, 16);
    if (nccl_) {
      ncclResult_t r = ncclMemAlloc(&ptr_, n);
      if (r != ncclSuccess) throw std::runtime_error(std::string("ncclMemAlloc: ") + ncclGetErrorString(r));
    } else {
      KILN_CUDA(cudaMalloc(&ptr_, n));
    }
  }
  ~DeviceBuffer() {
    if (ptr_ && !leak_) {
      if (nccl_) ncclMemFree(ptr_);
      else cudaFree(ptr_);
    }
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  char* get() const { return static_cast<char*>(ptr_); }
  std::size_t bytes() const { return bytes_; }
  // cudaFree waits for the device; after a kernel that would not stop, keep the memory instead.
  void leak() { leak_ = true; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  bool nccl_ = false;
  bool leak_ = false;
};

class Stream {
 public:
  Stream() { KILN_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_ && !leak_) cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void leak() { leak_ = true; }

 private:
  cudaStream_t s_ = nullptr;
  bool leak_ = false;
};

// Waits until a non-blocking communicator leaves ncclInProgress. Returns its state, or
// ncclInProgress when the deadline came first.
ncclResult_t wait_comm(ncclComm_t comm, Clock::time_point deadline) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) return r;
    if (state != ncclInProgress) return state;
    if (Clock::now() >= deadline) return ncclInProgress;
    std::this_thread::yield();
  }
}

// The group's NCCL communicators. Creation is bounded by the deadline: the parent is non-blocking,
// so a member that never arrives cannot hold init forever. The operations themselves run on a
// blocking child split off the parent (the split is done by the non-blocking parent, so it is
// bounded too): NCCL launches every call on a non-blocking communicator from a new thread, which
// adds tens of microseconds per operation and would be measured as latency. A blocking call only
// enqueues work once connections exist, and NCCL_RUNTIME_CONNECT=0 (set by the harness unless the
// operator set it) makes them all at init; the hang is then on the GPU, where the deadline poll
// sees it and ncclCommAbort ends it. Point-to-point peers are still connected on first use inside
// the call, so send/recv and all-to-all keep their operations on the non-blocking parent.
class Communicator {
 public:
  Communicator(const ncclUniqueId& id, int nranks, int rank, bool blocking_ops, bool direct, Clock::time_point deadline) {
    if (direct && blocking_ops) {
      // Benchmark aid (comm = "direct"): one blocking communicator, as nccl-tests makes it. Its
      // init is not bounded by the deadline.
      ncclResult_t r = ncclCommInitRank(&parent_, nranks, id, rank);
      if (r == ncclSuccess) return;
      abort();
      throw SweepStopped{Failure::NcclError, std::string("communicator init: ") + ncclGetErrorString(r)};
    }
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclResult_t r = ncclCommInitRankConfig(&parent_, nranks, id, rank, &cfg);
    if (r == ncclSuccess || r == ncclInProgress) r = wait_comm(parent_, deadline);
    if (r == ncclSuccess && blocking_ops) {
      ncclConfig_t child_cfg = NCCL_CONFIG_INITIALIZER;
      child_cfg.blocking = 1;
      r = ncclCommSplit(parent_, 0, rank, &child_, &child_cfg);
      if (r == ncclSuccess || r == ncclInProgress) r = wait_comm(parent_, deadline);
      if (r == ncclSuccess && child_ == nullptr) r = ncclInternalError;
    }
    if (r == ncclSuccess) return;
    abort();  // the destructor does not run when the constructor throws
    if (r == ncclInProgress) throw SweepStopped{Failure::Timeout, "communicator init did not finish by the deadline"};
    throw SweepStopped{Failure::NcclError, std::string("communicator init: ") + ncclGetErrorString(r)};
  }
  ~Communicator() { abort(); }
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ncclComm_t ops() const { return child_ ? child_ : parent_; }

  void abort() {
    if (child_) ncclCommAbort(child_);
    if (parent_) ncclCommAbort(parent_);
    child_ = parent_ = nullptr;
  }
  // After a good sweep. The blocking child is aborted rather than finalized: its work is done and
  // abort never waits for a peer. Finalizing the parent needs every member; bounded, else abort.
  void close(Clock::time_point deadline) {
    if (child_) ncclCommAbort(child_);
    child_ = nullptr;
    if (!parent_) return;
    ncclResult_t r = ncclCommFinalize(parent_);
    if (r == ncclSuccess || r == ncclInProgress) r = wait_comm(parent_, deadline);
    if (r != ncclSuccess) return abort();
    ncclCommDestroy(parent_);
    parent_ = nullptr;
  }

 private:
  ncclComm_t parent_ = nullptr;
  ncclComm_t child_ = nullptr;
};

// Polls the stream until the enqueued work finished, the communicator reports an error, or the
// deadline passes (nccl-tests' -T loop).
void wait_stream(cudaStream_t stream, ncclComm_t comm, Clock::time_point deadline) {
  for (;;) {
    cudaError_t q = cudaStreamQuery(stream);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) throw SweepStopped{Failure::NcclError, std::string("stream: ") + cudaGetErrorString(q)};
    ncclResult_t state = ncclSuccess;
    ncclCommGetAsyncError(comm, &state);
    if (state != ncclSuccess && state != ncclInProgress)
      throw SweepStopped{Failure::NcclError, std::string("NCCL async error: ") + ncclGetErrorString(state)};
    if (Clock::now() >= deadline) throw SweepStopped{Failure::Timeout, "collective did not complete by the deadline"};
    std::this_thread::yield();
  }
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

}  // namespace

void CollectiveTest::run(Context& ctx, ResultSink& sink) {
  const SweepParams p = parse_sweep_params(ctx.params);
  const auto drill = hang_drill(ctx.faults.spec, key());
  const Coll c = coll();
  const int n = ctx.group_size;
  const int me = ctx.group_rank;
  const int my_world = ctx.node.world_rank;
  if (p.root < 0 || p.root >= n) throw std::invalid_argument("root must be a rank of the group");

  // Keep back time to abort, drain and report after the collective deadline.
  const double grace = std::min(p.abort_grace_s, std::max(0.0, ctx.seconds_left()) * 0.25);
  const auto coll_deadline = ctx.deadline - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace));
  Exchanger ex(ctx.comm);

  RankState st;
  st.world_rank = my_world;
  std::string stop_detail;
  std::vector<double> busbws;
  std::size_t max_reduced_from = 0;

  // Connect everything at init (see Communicator). NCCL reads it once per process.
  ::setenv("NCCL_RUNTIME_CONNECT", "0", /*overwrite=*/0);
  const int device = ctx.node.local_rank % std::max(1, ctx.node.gpu_count);
  KILN_CUDA(cudaSetDevice(device));

  std::optional<Communicator> comm;
  std::optional<Stream> stream;
  std::optional<DeviceBuffer> sendbuf, recvbuf, errors;
  try {
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
    comm.emplace(id, n, me, blocking_ops(), p.comm == "direct", coll_deadline);
    stream.emplace();

    // Buffers as nccl-tests sizes them: send and receive of the largest line each, capped by memory.
    std::vector<std::size_t> ladder = size_ladder(p.min_bytes, p.max_bytes, p.factor);
    std::size_t free_b = 0, total_b = 0;
    KILN_CUDA(cudaMemGetInfo(&free_b, &total_b));
    const std::size_t reserve = std::size_t(1) << 30;
    const std::size_t cap = free_b > reserve ? (free_b - reserve) / 3 : 0;  // send, recv, slack
    if (ladder.back() > cap) {
      max_reduced_from = ladder.back();
      while (!ladder.empty() && ladder.back() > cap) ladder.pop_back();
      if (ladder.empty()) throw std::runtime_error("not enough free GPU memory for min_bytes");
    }
    std::size_t buf_bytes = 0;
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

    // Pass 0 warms every size up once before anything is timed (as nccl-tests does), so the first
    // timed line does not carry first-use costs; pass 1 measures.
    for (int pass = p.warmup > 0 ? 0 : 1; pass < 2; ++pass)
    for (std::size_t size : ladder) {
      const Shape shape = shape_for(c, size, sizeof(float), n);
      if (shape.count == 0) continue;  // the 16-byte chunk rounding left nothing to move
      for (Placement pl : {Placement::OutOfPlace, Placement::InPlace}) {
        if (pass == 0 && pl == Placement::InPlace) continue;
        if (pl == Placement::OutOfPlace && !p.out_of_place && pass == 1) continue;
        if (pl == Placement::InPlace && (!p.in_place || !supports_in_place())) continue;
        st.placement = pl == Placement::InPlace ? 1 : 0;
        st.line_bytes = shape.line_bytes();

        auto launch_at = [&](std::size_t offset) {
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
          ncclResult_t res = enqueue(l);
          if (res == ncclInProgress) res = wait_comm(comm->ops(), coll_deadline);
          if (res == ncclInProgress) throw SweepStopped{Failure::Timeout, "enqueue did not finish by the deadline"};
          if (res != ncclSuccess) throw SweepStopped{Failure::NcclError, std::string("enqueue: ") + ncclGetErrorString(res)};
        };
        auto run_ops = [&](int count, bool rotate) {
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
            launch_at(rotate ? rotation_offset(shape.line_bytes(), buf_bytes, i) : 0);
          st.joined = 1;
          wait_stream(stream->get(), comm->ops(), coll_deadline);
          st.finished = 1;
        };

        if (pass == 0) {
          run_ops(p.warmup, true);
          continue;
        }
        run_ops(std::max(1, p.warmup), true);
        st.phase = kBarrier;
        if (!ex.barrier(coll_deadline))
          throw SweepStopped{Failure::Timeout, "a group member did not reach the barrier before the line by the deadline"};

        // nccl-tests' default timing: host clock from the first launch to the stream's completion,
        // divided by the iterations, then averaged over the ranks.
        const auto t0 = Clock::now();
        run_ops(p.iters, true);
        const double seconds = std::chrono::duration<double>(Clock::now() - t0).count() / p.iters;

        LineReport rep;
        rep.seconds = seconds;
        if (p.check) {
          // Fresh pattern where this placement reads its send data, one operation, then compare.
          float* send_f = pl == Placement::InPlace
                              ? reinterpret_cast<float*>(recvbuf->get() + static_cast<std::size_t>(me) * shape.inplace_send_stride)
                              : reinterpret_cast<float*>(sendbuf->get());
          KILN_CUDA(fill_pattern(send_f, shape.send_bytes / sizeof(float), me, 0, stream->get()));
          run_ops(1, false);
          KILN_CUDA(cudaMemsetAsync(errors->get(), 0, sizeof(unsigned long long), stream->get()));
          CheckSpec cs{c, me, n, shape.count, p.root};
          const float* recv_f = reinterpret_cast<const float*>(
              recvbuf->get() + (pl == Placement::InPlace ? static_cast<std::size_t>(me) * shape.inplace_recv_stride : 0));
          KILN_CUDA(check_pattern(recv_f, shape.recv_bytes / sizeof(float), cs,
                                  reinterpret_cast<unsigned long long*>(errors->get()), stream->get()));
          wait_stream(stream->get(), comm->ops(), coll_deadline);
          unsigned long long wrong = 0;
          KILN_CUDA(cudaMemcpy(&wrong, errors->get(), sizeof wrong, cudaMemcpyDeviceToHost));
          rep.wrong = wrong;
        }

        auto all = ex.gather(&rep, sizeof rep, 0, coll_deadline);
        if (me != 0) continue;
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
    }
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
  if (failed && comm) {
    // Abort first so that kernels spinning on a peer that never comes return; then give the
    // stream a few seconds to drain before freeing anything it may still touch.
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
  const bool silent_drill = drill && drill->silent && drill->world_rank == my_world && failed;
  std::vector<std::optional<std::vector<std::uint8_t>>> states;
  if (!silent_drill) states = ex.gather(&st, sizeof st, 0, ctx.deadline, Exchanger::kFinalTag);

  bool group_failed = failed;
  std::vector<int> unfinished, not_joined, no_reply;
  nlohmann::json per_rank = nlohmann::json::array();
  if (me == 0) {
    for (int r = 0; r < n; ++r) {
      const int wr = ctx.group_world_ranks.empty() ? r : ctx.group_world_ranks[r];
      if (!states[r]) {
        no_reply.push_back(wr);
        unfinished.push_back(wr);
        group_failed = true;
        continue;
      }
      RankState rs;
      std::memcpy(&rs, states[r]->data(), sizeof rs);
      if (rs.failure != 0) group_failed = true;
      if (rs.phase != kDone || !rs.finished) unfinished.push_back(wr);
      if (rs.failure == static_cast<std::int32_t>(Failure::Drill) || (rs.phase <= kRun && !rs.joined))
        not_joined.push_back(wr);
      per_rank.push_back({{"world_rank", wr},
                          {"phase", phase_name(rs.phase)},
                          {"joined", rs.joined != 0},
                          {"finished", rs.finished != 0},
                          {"line_bytes", rs.line_bytes},
                          {"placement", rs.placement ? "in" : "out"},
                          {"failure", rs.failure}});
    }
  }

  if (!failed && !group_failed) {
    if (comm) comm->close(ctx.deadline);
    if (me == 0 && !busbws.empty()) {
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
    return;
  }
  if (comm) comm->abort();

  const bool timeout = st.failure != static_cast<std::int32_t>(Failure::NcclError);
  Result mine;
  mine.metric = "state";
  mine.status = timeout ? Status::Timeout : Status::Error;
  mine.size_bytes = static_cast<std::int64_t>(st.line_bytes);
  std::string summary;
  if (me == 0) {
    // The group's verdict: who had not finished, and who never joined or never answered.
    std::ostringstream os;
    os << key() << " aborted in " << phase_name(st.phase) << " at " << st.line_bytes << " B ("
       << (st.placement ? "in" : "out") << "-of-place)";
    if (!unfinished.empty()) os << "; ranks not finished: [" << join(unfinished) << "]";
    if (!not_joined.empty()) os << "; never joined: [" << join(not_joined) << "]";
    if (!no_reply.empty()) os << "; no reply: [" << join(no_reply) << "]";
    if (!stop_detail.empty()) os << "; rank " << my_world << ": " << stop_detail;
    summary = os.str();
    mine.metric = "hang";
    mine.reason = summary;
    mine.extra = {{"collective", coll_name(c)},    {"unfinished_ranks", unfinished},
                  {"not_joined_ranks", not_joined}, {"no_reply_ranks", no_reply},
                  {"ranks", per_rank},              {"group_world_ranks", ctx.group_world_ranks},
                  {"aborted", true}};
    if (!failed) {
      // The root itself finished but someone else did not: the group still failed.
      mine.status = Status::Timeout;
    }
  } else {
    summary = key() + " stopped on rank " + std::to_string(my_world) + " in " + phase_name(st.phase) + ": " +
              (stop_detail.empty() ? std::string("a group member failed") : stop_detail);
    mine.reason = summary;
    mine.extra = {{"collective", coll_name(c)}, {"joined", st.joined != 0}, {"finished", st.finished != 0},
                  {"placement", st.placement ? "in" : "out"}, {"aborted", true}};
  }
  sink.emit(std::move(mine));
  if (timeout || me == 0) throw DeadlineExceeded(summary);
  throw CheckError(summary);
}

#endif  // KILN_HAVE_NCCL

}  // namespace kiln::worker::nccl
