#include "worker/checks/mpi/sweep.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <stdexcept>

#include "worker/mpi_wait.hpp"

namespace kiln::worker {

std::vector<std::int64_t> sweep_sizes(std::int64_t lo, std::int64_t hi, double factor) {
  if (lo < 1 || hi < lo) throw std::invalid_argument("bad size range " + std::to_string(lo) + ".." + std::to_string(hi));
  if (factor <= 1.0) throw std::invalid_argument("size factor must be greater than 1");
  std::vector<std::int64_t> out;
  for (double s = static_cast<double>(lo); s <= static_cast<double>(hi) * 1.0000001; s *= factor) {
    const auto v = static_cast<std::int64_t>(s);
    if (out.empty() || out.back() != v) out.push_back(v);
  }
  if (out.back() != hi) out.push_back(hi);
  return out;
}

int iterations_for(std::int64_t bytes, std::int64_t bytes_budget, int max_iters) {
  const auto n = bytes_budget / std::max<std::int64_t>(1, bytes);
  return static_cast<int>(std::clamp<std::int64_t>(n, 2, std::max(2, max_iters)));
}

SweepBudget::SweepBudget(Context& ctx, ResultSink& sink)
    : ctx_(ctx), sink_(sink), reserve_s_(ctx.param<double>("budget_reserve_s", 1.0)) {}

bool SweepBudget::admit(std::int64_t bytes, int ops) {
  if (stopped_) {
    emit_skip(bytes,
              "size " + std::to_string(bytes) + " B skipped: the sweep stopped at " + std::to_string(stop_bytes_) +
                  " B (" + stop_.reason + ")",
              stop_);
    return false;
  }
  const budget::Decision d = agree(bytes, ops);
  if (d.run) return true;
  stopped_ = true;
  stop_ = d;
  stop_bytes_ = bytes;
  emit_skip(bytes, d.reason, d);
  return false;
}

budget::Decision SweepBudget::agree(std::int64_t bytes, int ops) {
  // {estimate, -left}: MAX gives the group's largest estimate and least time left. Heap buffers,
  // abandoned by wait_request if a member never answers by the deadline.
  auto mine = std::make_unique<std::array<double, 2>>(
      std::array<double, 2>{budget::estimate_s(last_, bytes, ops), -ctx_.seconds_left()});
  auto group = std::make_unique<std::array<double, 2>>(std::array<double, 2>{0.0, 0.0});
  wait_request(ctx_, [&](MPI_Request* r) {
    return MPI_Iallreduce(mine->data(), group->data(), 2, MPI_DOUBLE, MPI_MAX, ctx_.comm, r);
  }, mine, group);
  return budget::decide(bytes, (*group)[0], -(*group)[1], reserve_s_);
}

void SweepBudget::emit_skip(std::int64_t bytes, const std::string& reason, const budget::Decision& d) {
  Result r;
  r.metric = "busbw";
  r.unit = "GB/s";
  r.size_bytes = bytes;
  r.status = Status::Skip;
  r.reason = reason;
  r.extra = {{"budget", true},
             {"estimate_s", d.estimate_s},
             {"left_s", d.left_s},
             {"reserve_s", d.reserve_s},
             {"stopped_at_bytes", stop_bytes_}};
  ++skipped_;
  sink_.emit(std::move(r));
}

void emit_bw(ResultSink& sink, const Context& ctx, std::int64_t bytes, double seconds, double algbw, double busbw,
             bool data_ok, const nlohmann::json& busbw_extra) {
  (void)ctx;
  auto make = [&](const char* metric, double v, const char* unit, const nlohmann::json& extra) {
    Result r;
    r.metric = metric;
    r.value = v;
    r.unit = unit;
    r.size_bytes = bytes;
    r.extra = extra;
    if (!data_ok) {
      r.status = Status::Fail;
      r.reason = "reduced data is wrong";
    }
    sink.emit(r);
  };
  make("time", seconds * 1e6, "us", nlohmann::json::object());
  make("algbw", algbw, "GB/s", nlohmann::json::object());
  make("busbw", busbw, "GB/s", busbw_extra);
}

}  // namespace kiln::worker
