#include "worker/checks/rdma/pair_test.hpp"

#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "worker/mpi_deadline.hpp"
#include "worker/pair_runner.hpp"
#include "worker/pairings.hpp"
#include "worker/checks/rdma/memory.hpp"
#include "worker/checks/rdma/rails.hpp"
#include "worker/hw/ib_sysfs.hpp"

#if KILN_HAVE_IBVERBS
#include <infiniband/verbs.h>
#endif

namespace kiln::worker::rdma {
namespace {

using Clock = std::chrono::steady_clock;

std::filesystem::path sysfs_root(const nlohmann::json& params) {
  if (auto it = params.find("sysfs_root"); it != params.end()) return it->get<std::string>();
  return ib_root_from_env();
}

nlohmann::json to_json(const PortInfo& p) {
  return {{"device", p.device}, {"port", p.port}, {"state", p.state},
          {"rate_gbps", p.rate_gbps}, {"width", p.width}, {"link_layer", p.link_layer}};
}

PortInfo port_from_json(const nlohmann::json& j) {
  PortInfo p;
  p.device = j.at("device").get<std::string>();
  p.port = j.at("port").get<int>();
  p.state = j.at("state").get<std::string>();
  p.rate_gbps = j.at("rate_gbps").get<double>();
  p.width = j.at("width").get<int>();
  p.link_layer = j.at("link_layer").get<std::string>();
  return p;
}

}  // namespace

std::optional<std::string> PairTest::applicable(const NodeInfo&) const {
#if !KILN_HAVE_IBVERBS
  return std::string("kiln-worker was built without libibverbs");
#else
  if (active_ports(list_ports(sysfs_root({}))).empty())
    return std::string("no RDMA device: no active HCA port under ") + kDefaultSysfsRoot;
  return std::nullopt;
#endif
}

#if !KILN_HAVE_IBVERBS

void PairTest::run(Context& ctx, ResultSink& sink) {
  Result r;
  r.metric = "bw";
  r.status = Status::Skip;
  r.reason = *applicable(ctx.node);
  sink.emit(r);
}

#else

namespace {

template <class T, int (*Free)(T*)>
struct VerbsDeleter {
  void operator()(T* p) const {
    if (p) Free(p);
  }
};
using ContextPtr = std::unique_ptr<ibv_context, VerbsDeleter<ibv_context, ibv_close_device>>;
using PdPtr = std::unique_ptr<ibv_pd, VerbsDeleter<ibv_pd, ibv_dealloc_pd>>;
using MrPtr = std::unique_ptr<ibv_mr, VerbsDeleter<ibv_mr, ibv_dereg_mr>>;
using CqPtr = std::unique_ptr<ibv_cq, VerbsDeleter<ibv_cq, ibv_destroy_cq>>;
using QpPtr = std::unique_ptr<ibv_qp, VerbsDeleter<ibv_qp, ibv_destroy_qp>>;

// What one side tells the other to reach its queue pair and memory (plain bytes over MPI).
struct QpInfo {
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;
  std::uint32_t rkey = 0;
  std::uint32_t mtu = 0;  // enum ibv_mtu
  std::uint64_t addr = 0;
  std::uint16_t lid = 0;
  std::uint8_t gid[16] = {};
};

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

struct RailRun {
  Rail rail;
  ContextPtr ctx;
  PdPtr pd;
  std::unique_ptr<MemoryRegion> mem;  // before mr: deregistration first, then free
  MrPtr mr;
  CqPtr cq;
  QpPtr qp;
  QpInfo local, remote;
  bool global = false;  // RoCE, or IB across subnets: address by GID
  std::uint64_t posted = 0, completed = 0;
  double done_s = 0;
};

ContextPtr open_device(const std::string& name) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) fail("ibv_get_device_list failed");
  ibv_context* c = nullptr;
  for (int i = 0; i < n && !c; ++i)
    if (name == ibv_get_device_name(list[i])) c = ibv_open_device(list[i]);
  ibv_free_device_list(list);
  if (!c) fail("cannot open RDMA device " + name);
  return ContextPtr(c);
}

void setup(RailRun& r, const std::string& memory, std::size_t bytes, int depth, int gpu, int gid_index,
           std::uint32_t psn) {
  const int port = r.rail.local.port;
  r.ctx = open_device(r.rail.local.device);
  r.pd.reset(ibv_alloc_pd(r.ctx.get()));
  if (!r.pd) fail("ibv_alloc_pd failed on " + r.rail.local.id());
  r.mem = allocate(memory, bytes, gpu);
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (r.mem->dmabuf_fd() >= 0)
    r.mr.reset(ibv_reg_dmabuf_mr(r.pd.get(), 0, bytes, reinterpret_cast<std::uint64_t>(r.mem->data()),
                                 r.mem->dmabuf_fd(), access));
  if (!r.mr) r.mr.reset(ibv_reg_mr(r.pd.get(), r.mem->data(), bytes, access));
  if (!r.mr)
    fail("memory registration failed on " + r.rail.local.id() + " for " + r.mem->kind() +
         " memory (GPU memory needs dma-buf support or the nvidia-peermem module)");
  r.cq.reset(ibv_create_cq(r.ctx.get(), 2 * depth + 16, nullptr, nullptr, 0));
  if (!r.cq) fail("ibv_create_cq failed on " + r.rail.local.id());
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = r.cq.get();
  init.cap.max_send_wr = init.cap.max_recv_wr = static_cast<std::uint32_t>(depth + 1);
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 1;
  r.qp.reset(ibv_create_qp(r.pd.get(), &init));
  if (!r.qp) fail("ibv_create_qp failed on " + r.rail.local.id());
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = static_cast<std::uint8_t>(port);
  a.qp_access_flags = access;
  if (ibv_modify_qp(r.qp.get(), &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    fail("QP to INIT failed on " + r.rail.local.id());
  ibv_port_attr pa{};
  if (ibv_query_port(r.ctx.get(), static_cast<std::uint8_t>(port), &pa)) fail("ibv_query_port failed");
  ibv_gid gid{};
  ibv_query_gid(r.ctx.get(), static_cast<std::uint8_t>(port), gid_index, &gid);
  r.global = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
  r.local.qpn = r.qp->qp_num;
  r.local.psn = psn & 0xffffff;
  r.local.rkey = r.mr->rkey;
  r.local.addr = reinterpret_cast<std::uint64_t>(r.mem->data());
  r.local.lid = pa.lid;
  r.local.mtu = pa.active_mtu;
  std::memcpy(r.local.gid, gid.raw, sizeof r.local.gid);
}

void connect(RailRun& r, int gid_index, int max_rd_atomic) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = static_cast<ibv_mtu>(std::min(r.local.mtu, r.remote.mtu));
  a.dest_qp_num = r.remote.qpn;
  a.rq_psn = r.remote.psn;
  a.max_dest_rd_atomic = static_cast<std::uint8_t>(max_rd_atomic);
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = r.remote.lid;
  a.ah_attr.port_num = static_cast<std::uint8_t>(r.rail.local.port);
  if (r.global) {
    a.ah_attr.is_global = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, r.remote.gid, sizeof r.remote.gid);
    a.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(gid_index);
    a.ah_attr.grh.hop_limit = 64;
  }
  if (ibv_modify_qp(r.qp.get(), &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    fail("QP to RTR failed on " + r.rail.local.id());
  ibv_qp_attr s{};
  s.qp_state = IBV_QPS_RTS;
  s.timeout = 14;
  s.retry_cnt = 7;
  s.rnr_retry = 7;
  s.sq_psn = r.local.psn;
  s.max_rd_atomic = static_cast<std::uint8_t>(max_rd_atomic);
  if (ibv_modify_qp(r.qp.get(), &s,
                    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                        IBV_QP_MAX_QP_RD_ATOMIC))
    fail("QP to RTS failed on " + r.rail.local.id());
}

void post(RailRun& r, RdmaOp op, std::size_t bytes) {
  ibv_sge sge{reinterpret_cast<std::uint64_t>(r.mem->data()), static_cast<std::uint32_t>(bytes), r.mr->lkey};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = r.posted;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.opcode = op == RdmaOp::Write ? IBV_WR_RDMA_WRITE : op == RdmaOp::Read ? IBV_WR_RDMA_READ : IBV_WR_SEND;
  if (op != RdmaOp::SendLatency) {
    wr.wr.rdma.remote_addr = r.remote.addr;
    wr.wr.rdma.rkey = r.remote.rkey;
  }
  if (ibv_post_send(r.qp.get(), &wr, &bad)) fail("ibv_post_send failed on " + r.rail.local.id());
  ++r.posted;
}

void post_recv(RailRun& r, std::size_t bytes) {
  ibv_sge sge{reinterpret_cast<std::uint64_t>(r.mem->data()), static_cast<std::uint32_t>(bytes), r.mr->lkey};
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (ibv_post_recv(r.qp.get(), &wr, &bad)) fail("ibv_post_recv failed on " + r.rail.local.id());
}

// Polls until one completion arrives or the deadline passes.
ibv_wc poll_one(RailRun& r, Clock::time_point deadline) {
  ibv_wc wc{};
  for (;;) {
    int n = ibv_poll_cq(r.cq.get(), 1, &wc);
    if (n < 0) fail("ibv_poll_cq failed on " + r.rail.local.id());
    if (n == 1) {
      if (wc.status != IBV_WC_SUCCESS)
        fail(std::string("work completion error on ") + r.rail.local.id() + ": " + ibv_wc_status_str(wc.status));
      return wc;
    }
    if (Clock::now() >= deadline) throw DeadlineExceeded("no completion on " + r.rail.local.id() + " by the deadline");
  }
}

// All rails at once: keep `depth` operations in flight on each until `iters` completed.
void run_bandwidth(std::vector<RailRun>& rails, RdmaOp op, std::size_t bytes, int iters, int depth,
                   Clock::time_point deadline) {
  const auto t0 = Clock::now();
  for (auto& r : rails)
    while (r.posted < static_cast<std::uint64_t>(std::min(depth, iters))) post(r, op, bytes);
  std::size_t finished = 0;
  ibv_wc wc[32];
  while (finished < rails.size()) {
    for (auto& r : rails) {
      if (r.completed == static_cast<std::uint64_t>(iters)) continue;
      int n = ibv_poll_cq(r.cq.get(), 32, wc);
      if (n < 0) fail("ibv_poll_cq failed on " + r.rail.local.id());
      for (int i = 0; i < n; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS)
          fail(std::string("work completion error on ") + r.rail.local.id() + ": " + ibv_wc_status_str(wc[i].status));
        ++r.completed;
        if (r.posted < static_cast<std::uint64_t>(iters)) post(r, op, bytes);
      }
      if (r.completed == static_cast<std::uint64_t>(iters)) {
        r.done_s = std::chrono::duration<double>(Clock::now() - t0).count();
        ++finished;
      }
    }
    if (finished < rails.size() && Clock::now() >= deadline)
      throw DeadlineExceeded("RDMA traffic did not complete by the deadline");
  }
}

struct PairParams {
  bool latency = false;
  std::string memory;
  std::size_t bytes = 0;
  int iters = 0;
  int depth = 1;
  int gid_index = 0;
};

PairParams parse_params(const Context& ctx, bool latency) {
  PairParams p;
  p.latency = latency;
  p.memory = ctx.param<std::string>("memory", "host");
  p.bytes = ctx.param<std::size_t>("message_bytes", latency ? 8 : (1u << 20));
  p.iters = ctx.param<int>("iters", latency ? 10000 : 2000);
  p.depth = std::max(1, ctx.param<int>("depth", latency ? 1 : 64));
  p.gid_index = ctx.param<int>("gid_index", 0);
  if (p.bytes == 0 || p.iters < 1) throw std::invalid_argument("message_bytes and iters must be positive");
  return p;
}

struct PairPlan {
  RailPlan plan;
  std::string peer_host;
  std::string ports_how, peer_ports_how;  // which ports each side drives, and why (choose_ports)
};

int rank_gpu(const Context& ctx) { return ctx.node.gpu_count > 0 ? ctx.node.local_rank % ctx.node.gpu_count : 0; }

// Swaps port lists (length first, then the JSON text) and plans the rails the same way on both.
// Each side sends the ports its `device` parameter chooses (by default the HCA nearest its GPU).
// A `device` this node does not have is sent as an error, so that both sides stop at once rather
// than one waiting for the other's list until the deadline.
PairPlan exchange_ports(const Context& ctx, mpi_deadline::Exchanger& ex, int peer) {
  PortChoice choice;
  std::string bad_device;
  try {
    choice = choose_ports(list_ports(sysfs_root(ctx.params)), ctx.param<std::string>("device", "nearest"), ctx.node.hca,
                          rank_gpu(ctx), ctx.node.local_size);
  } catch (const std::invalid_argument& e) {
    bad_device = e.what();
  }
  nlohmann::json mine = {{"host", ctx.node.host}, {"ports", nlohmann::json::array()}, {"how", choice.how}};
  if (!bad_device.empty()) mine["error"] = bad_device;
  for (const auto& p : choice.ports) mine["ports"].push_back(to_json(p));
  const std::string text = mine.dump();
  std::uint32_t my_len = static_cast<std::uint32_t>(text.size()), peer_len = 0;
  if (!ex.swap(peer, &my_len, &peer_len, sizeof my_len, ctx.deadline))
    throw DeadlineExceeded("the peer did not send its port list by the deadline");
  std::string peer_text(peer_len, '\0');
  if (!ex.swap(peer, text.data(), peer_text.data(), static_cast<int>(std::max(my_len, peer_len)), ctx.deadline))
    throw DeadlineExceeded("the peer did not send its port list by the deadline");
  const auto theirs = nlohmann::json::parse(peer_text);
  if (!bad_device.empty()) throw std::invalid_argument(bad_device);
  if (theirs.contains("error"))
    throw std::runtime_error("the peer " + theirs.value("host", std::string("?")) + " cannot choose its ports: " +
                             theirs["error"].get<std::string>());
  std::vector<PortInfo> local_ports, peer_ports;
  for (const auto& j : mine["ports"]) local_ports.push_back(port_from_json(j));
  for (const auto& j : theirs["ports"]) peer_ports.push_back(port_from_json(j));
  PairPlan out;
  out.peer_host = theirs.value("host", std::string("?"));
  out.ports_how = choice.how;
  out.peer_ports_how = theirs.value("how", std::string("?"));
  out.plan = plan_rails(local_ports, peer_ports);
  return out;
}

// Reported by group rank 0 alone: an active port the other side has no partner for.
void report_unpaired(const Context& ctx, ResultSink& sink, const PairPlan& pp) {
  const std::string& peer_host = pp.peer_host;
  for (const auto& p : pp.plan.unpaired_local) {
    Result r;
    r.entity = {"hca", ctx.node.host + "/" + p.id()};
    r.metric = "rail";
    r.status = Status::Fail;
    r.reason = "active port with no partner on " + peer_host + " (fewer active ports there)";
    sink.emit(r);
  }
  for (const auto& p : pp.plan.unpaired_peer) {
    Result r;
    // The peer's port, seen from here: reported as the link to it (a rank speaks for its own node).
    r.entity = {"link", ctx.node.host + "<->" + peer_host + "/" + p.id()};
    r.metric = "rail";
    r.status = Status::Fail;
    r.reason = "active port with no partner on " + ctx.node.host + " (fewer active ports here)";
    sink.emit(r);
  }
}

// A connected RC queue pair on every rail, its details swapped with the peer rail by rail.
std::vector<RailRun> connect_rails(const Context& ctx, mpi_deadline::Exchanger& ex, int peer,
                                   const RailPlan& plan, const PairParams& p) {
  const int gpu = rank_gpu(ctx);
  std::vector<RailRun> rails(plan.rails.size());
  for (std::size_t i = 0; i < rails.size(); ++i) {
    rails[i].rail = plan.rails[i];
    setup(rails[i], p.memory, p.bytes, p.depth, gpu, p.gid_index,
          static_cast<std::uint32_t>(ctx.node.world_rank * 4099 + static_cast<int>(i) * 131 + 1));
    if (!ex.swap(peer, &rails[i].local, &rails[i].remote, sizeof(QpInfo), ctx.deadline))
      throw DeadlineExceeded("the peer did not send its queue pair details by the deadline");
    connect(rails[i], p.gid_index, 16);
  }
  return rails;
}

// Ping-pong rail by rail: group rank 0 sends, rank 1 answers; each rail's done_s is the whole
// exchange (half a round trip per iteration is reported).
void run_latency(std::vector<RailRun>& rails, mpi_deadline::Exchanger& ex, int me, const PairParams& p,
                 Clock::time_point deadline) {
  const std::size_t bytes = p.bytes;
  for (auto& r : rails) {
    for (int i = 0; i < std::min(p.depth, p.iters); ++i) post_recv(r, bytes);
    if (!ex.barrier(deadline)) throw DeadlineExceeded("the peer did not reach the start barrier");
    const auto t0 = Clock::now();
    for (int i = 0; i < p.iters; ++i) {
      if (me == 0) {
        post(r, RdmaOp::SendLatency, bytes);
        for (int got = 0; got < 2;) {  // our send's completion and the answer
          ibv_wc wc = poll_one(r, deadline);
          if (wc.opcode == IBV_WC_RECV) post_recv(r, bytes);
          ++got;
        }
      } else {
        ibv_wc wc = poll_one(r, deadline);
        while (wc.opcode != IBV_WC_RECV) wc = poll_one(r, deadline);
        post_recv(r, bytes);
        post(r, RdmaOp::SendLatency, bytes);
        while (poll_one(r, deadline).opcode != IBV_WC_SEND) {
        }
      }
    }
    r.done_s = std::chrono::duration<double>(Clock::now() - t0).count();
  }
}

// Group rank 0's results: one per rail, and for bandwidth the pair's total.
void report_rails(const Context& ctx, ResultSink& sink, const std::vector<RailRun>& rails,
                  const PairPlan& pp, const PairParams& p) {
  const bool latency = p.latency;
  const std::size_t bytes = p.bytes;
  const int iters = p.iters;
  const std::string& memory = p.memory;
  const int me = ctx.group_rank;
  auto link_id = [&](const Rail& r) {
    const std::string a = ctx.node.host + "/" + r.local.id(), b = pp.peer_host + "/" + r.peer.id();
    return me == 0 ? a + "<->" + b : b + "<->" + a;
  };
  double total_bytes = 0, slowest = 0, line_total = 0;
  for (const auto& r : rails) {
    Result res;
    res.entity = {"link", link_id(r.rail)};
    res.size_bytes = static_cast<std::int64_t>(bytes);
    res.extra = {{"memory", memory}, {"iters", iters}, {"depth", p.depth},
                 {"local_port", r.rail.local.id()}, {"peer_port", r.rail.peer.id()},
                 {"line_rate_gbps", r.rail.line_rate_gbps()}, {"link_layer", r.rail.local.link_layer},
                 {"rail", r.rail.index}, {"ports", pp.ports_how},
                 {"peer_ports", pp.peer_ports_how}};
    if (latency) {
      res.metric = "lat";
      res.unit = "us";
      res.value = r.done_s / iters / 2 * 1e6;
    } else {
      const double gbps = gbits_per_s(static_cast<std::uint64_t>(bytes) * static_cast<std::uint64_t>(iters), r.done_s);
      res.metric = "bw";
      res.unit = "Gb/s";
      res.value = gbps;
      res.extra["efficiency"] = rail_efficiency(gbps, r.rail.line_rate_gbps());
      total_bytes += static_cast<double>(bytes) * iters;
      slowest = std::max(slowest, r.done_s);
      line_total += r.rail.line_rate_gbps();
    }
    sink.emit(std::move(res));
  }
  if (!latency) {
    Result all;
    all.metric = "bw_total";
    all.unit = "Gb/s";
    all.value = slowest > 0 ? total_bytes * 8 / 1e9 / slowest : 0;
    all.size_bytes = static_cast<std::int64_t>(bytes);
    all.extra = {{"rails", rails.size()}, {"line_rate_gbps", line_total}, {"memory", memory},
                 {"peer_host", pp.peer_host}, {"ports", pp.ports_how}, {"peer_ports", pp.peer_ports_how}};
    sink.emit(std::move(all));
  }
}

}  // namespace

void PairTest::run(Context& ctx, ResultSink& sink) {
  // A group of one (a one-node run, or a lone rank left over) has no peer to test against: nothing
  // of the fabric was measured, so it is a SKIP, as net.pair_bw and the NCCL collectives say it.
  if (ctx.group_size < 2) {
    Result r;
    r.metric = "bw";
    r.status = Status::Skip;
    r.reason = key() + " needs a group of at least two ranks (this group has " + std::to_string(ctx.group_size) + ")";
    sink.emit(r);
    return;
  }
  const int rounds = pairings::count(ctx.group_size, ctx.param<int>("partners", 7));
  run_pairings(ctx, sink, rounds, [&](Context& pair) { run_pair(pair, sink); });
}

void PairTest::run_pair(Context& ctx, ResultSink& sink) {
  const PairParams p = parse_params(ctx, op() == RdmaOp::SendLatency);
  const int me = ctx.group_rank, peer = 1 - me;
  mpi_deadline::Exchanger ex(ctx.comm);

  const PairPlan pp = exchange_ports(ctx, ex, peer);
  if (me == 0) report_unpaired(ctx, sink, pp);
  if (pp.plan.rails.empty())
    throw std::runtime_error("no rail: the pair shares no active port of the same link layer (" + ctx.node.host + ": " +
                             pp.ports_how + "; " + pp.peer_host + ": " + pp.peer_ports_how + ")");
  std::vector<RailRun> rails = connect_rails(ctx, ex, peer, pp.plan, p);

  if (p.latency) {
    run_latency(rails, ex, me, p, ctx.deadline);
  } else {
    if (!ex.barrier(ctx.deadline)) throw DeadlineExceeded("the peer did not reach the start barrier");
    if (me == 0) run_bandwidth(rails, op(), p.bytes, p.iters, p.depth, ctx.deadline);
  }
  // The target must keep its queue pairs until the initiator is done.
  if (!ex.barrier(ctx.deadline)) throw DeadlineExceeded("the peer did not reach the end barrier");
  if (me != 0) return;
  report_rails(ctx, sink, rails, pp, p);
}

#endif  // KILN_HAVE_IBVERBS

}  // namespace kiln::worker::rdma
