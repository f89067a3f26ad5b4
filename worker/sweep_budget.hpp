// The time budget of a size sweep (mpi.* and nccl.* group checks): before each size, the group
// estimates how long it will take from the sizes already measured and runs it only when it fits in
// the time left before the check's deadline, less a reserve for reporting. A size that does not fit
// is reported as SKIP with the estimate and the time left, the sizes after it too, and the check
// ends normally with the figures it has: a slow member becomes a low figure and a stated skip, not
// a timeout of the whole group with no figure at all.
//
// Pure arithmetic here (the unit tests check it); the members make the decision together from the
// group's worst estimate and least time left, so that all of them skip the same sizes (see
// the callers: an MPI_Allreduce(MAX) in worker/checks/mpi, a gather and broadcast in nccl).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

namespace kiln::worker::budget {

// Margin on an estimate: the last size's rate is extrapolated, and a loaded host varies.
inline constexpr double kSafety = 2.0;

// A size already run: its bytes, the operations it ran (warm-up included) and the wall seconds
// they took together.
struct Step {
  std::int64_t bytes = 0;
  int ops = 0;
  double seconds = 0;
};

// Seconds `ops` operations of `bytes` are expected to take, from the last measured step: its time
// per operation scaled by the ratio of bytes (time grows about linearly with bytes at large sizes,
// and never falls below the last size's time per operation), times the safety factor. 0 when
// nothing was measured yet: the first size always runs.
inline double estimate_s(const Step& last, std::int64_t bytes, int ops, double safety = kSafety) {
  if (last.ops <= 0 || last.bytes <= 0 || last.seconds <= 0 || ops <= 0) return 0.0;
  const double per_op = last.seconds / last.ops;
  const double scale = std::max(1.0, static_cast<double>(bytes) / static_cast<double>(last.bytes));
  return per_op * scale * ops * safety;
}

struct Decision {
  bool run = true;
  double estimate_s = 0;
  double left_s = 0;
  double reserve_s = 0;
  std::string reason;  // why the size is skipped (empty when it runs)
};

// Whether a size estimated at `estimate` seconds fits in `left` seconds before the deadline, keeping
// `reserve` seconds for reporting. The inputs must be the group's (largest estimate, least time
// left) so that every member decides the same. With no estimate (nothing measured yet) the size
// runs: the first size is never skipped, so a one-size sweep behaves as it did without a budget.
inline Decision decide(std::int64_t bytes, double estimate, double left, double reserve) {
  Decision d;
  d.estimate_s = estimate;
  d.left_s = left;
  d.reserve_s = reserve;
  d.run = estimate <= 0 || estimate + reserve <= left;
  if (!d.run) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "size %lld B skipped: estimated %.3f s, but %.3f s left before the deadline "
                  "(%.3f s kept in reserve for reporting)",
                  static_cast<long long>(bytes), estimate, std::max(0.0, left), reserve);
    d.reason = buf;
  }
  return d;
}

}  // namespace kiln::worker::budget
