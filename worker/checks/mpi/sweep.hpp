// Shared by the mpi.* checks: the size ladder, iteration counts, and emitting time/algbw/busbw the
// same way for every collective.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "worker/check.hpp"
#include "worker/sweep_budget.hpp"

namespace kiln::worker {

// Sizes from lo to hi (both included) multiplying by factor; throws on a bad range.
std::vector<std::int64_t> sweep_sizes(std::int64_t lo, std::int64_t hi, double factor);
// Enough iterations to move about bytes_budget per size, at least 2 and at most max_iters.
int iterations_for(std::int64_t bytes, std::int64_t bytes_budget, int max_iters);

// The sweep's time budget (worker/sweep_budget.hpp) over MPI. Before each size, admit() agrees
// with the group (one MPI_Iallreduce(MAX) of each member's estimate and of its time left, bounded by
// the check's deadline) on whether the size fits before the deadline less `budget_reserve_s`.
// Every member gets the same two numbers, so all run or all skip the same sizes. A size that does
// not fit, and every size after it, gets a SKIP result naming the estimate and the time left.
class SweepBudget {
 public:
  SweepBudget(Context& ctx, ResultSink& sink);
  // True when the group runs a size of `bytes` with `ops` operations (warm-up included).
  bool admit(std::int64_t bytes, int ops);
  // The same group decision for extra operations at a size already run, without stopping the
  // sweep or reporting a SKIP: the caller says in its own result what it left out and why.
  budget::Decision agree(std::int64_t bytes, int ops);
  // What the admitted size took on this member, in wall seconds.
  void measured(std::int64_t bytes, int ops, double seconds) { last_ = {bytes, ops, seconds}; }
  int skipped() const { return skipped_; }

 private:
  void emit_skip(std::int64_t bytes, const std::string& reason, const budget::Decision& d);
  Context& ctx_;
  ResultSink& sink_;
  double reserve_s_;
  budget::Step last_;
  bool stopped_ = false;
  budget::Decision stop_;
  std::int64_t stop_bytes_ = 0;
  int skipped_ = 0;
};

// time, algbw and busbw results of one size; `busbw_extra` goes into the busbw result's extra.
void emit_bw(ResultSink& sink, const Context& ctx, std::int64_t bytes, double seconds, double algbw, double busbw,
             bool data_ok, const nlohmann::json& busbw_extra = nlohmann::json::object());

}  // namespace kiln::worker
