#include "worker/checks/mpi/sweep.hpp"

#include <algorithm>
#include <stdexcept>

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

void emit_bw(ResultSink& sink, const Context& ctx, std::int64_t bytes, double seconds, double algbw, double busbw,
             bool data_ok) {
  (void)ctx;
  auto make = [&](const char* metric, double v, const char* unit) {
    Result r;
    r.metric = metric;
    r.value = v;
    r.unit = unit;
    r.size_bytes = bytes;
    if (!data_ok) {
      r.status = Status::Fail;
      r.reason = "reduced data is wrong";
    }
    sink.emit(r);
  };
  make("time", seconds * 1e6, "us");
  make("algbw", algbw, "GB/s");
  make("busbw", busbw, "GB/s");
}

}  // namespace kiln::worker
