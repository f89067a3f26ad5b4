#include "worker/checks/model/fsdp_math.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>

namespace kiln::worker::model {

double step_flops(const FsdpShape& s) {
  const double h = static_cast<double>(s.hidden);
  return 3.0 * 2.0 * static_cast<double>(s.tokens) * h * h * s.layers;
}

std::int64_t shard_elems(const FsdpShape& s) {
  const std::int64_t n = std::max(1, s.ranks);
  const std::int64_t per_rank = (s.hidden * s.hidden + n - 1) / n;
  return (per_rank + 7) / 8 * 8;  // 16-byte aligned shards
}

std::int64_t device_bytes(const FsdpShape& s) {
  constexpr std::int64_t kBf16 = 2;
  const std::int64_t shard = shard_elems(s);
  const std::int64_t full = shard * std::max(1, s.ranks);
  const std::int64_t act = s.tokens * s.hidden;
  const std::int64_t elems = 2 * s.layers * shard  // weight and gradient shards
                             + 4 * full            // two gathered weights, two full gradients
                             + (s.layers + 1) * act  // activations kept for the backward pass
                             + 3 * act;            // top gradient and two activation gradients
  return elems * kBf16;
}

StepFigures step_figures(const FsdpShape& s, const StepTimes& t, double peak_tflops) {
  if (!(t.step_ms > 0)) throw std::invalid_argument("step time must be positive");
  StepFigures f;
  f.tflops = step_flops(s) / (t.step_ms * 1e-3) / 1e12;
  if (peak_tflops > 0) f.mfu = f.tflops / peak_tflops;
  else
    f.mfu_note = "no peak TFLOP/s given (the spec carries none: its gpu.burn figure is an achieved rate); "
                 "set peak_tflops to the GPU's dense bf16 peak";
  f.exposed_comm_ms = std::max(0.0, t.step_ms - t.compute_ms);
  f.comm_share = t.comm_ms / t.step_ms;
  if (t.comm_ms > 0) f.overlap = std::clamp(1.0 - f.exposed_comm_ms / t.comm_ms, 0.0, 1.0);
  return f;
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

namespace {

using Series = std::vector<std::uint64_t> RankChecksums::*;

// A rank whose verified steps disagree with its first one.
void across_steps(const RankChecksums& r, Series field, const char* what, std::vector<std::string>& out) {
  const auto& v = r.*field;
  for (std::size_t k = 1; k < v.size(); ++k) {
    if (v[k] == v[0]) continue;
    out.push_back("rank " + std::to_string(r.world_rank) + ": the " + what + " checksum of verified step " +
                  std::to_string(k) + " (" + hex(v[k]) + ") differs from step 0's (" + hex(v[0]) +
                  "): the same step on the same inputs gave a different result on this GPU");
    return;
  }
}

// Ranks whose first verified value differs from the value most ranks hold.
void across_ranks(const std::vector<RankChecksums>& ranks, Series field, const char* what,
                  std::vector<std::string>& out) {
  std::map<std::uint64_t, int> votes;
  for (const auto& r : ranks)
    if (!(r.*field).empty()) ++votes[(r.*field)[0]];
  if (votes.size() < 2) return;
  auto best = std::max_element(votes.begin(), votes.end(), [](auto& a, auto& b) { return a.second < b.second; });
  const int ties = static_cast<int>(std::count_if(votes.begin(), votes.end(), [&](auto& v) { return v.second == best->second; }));
  if (ties > 1) {
    std::string list;
    for (const auto& r : ranks)
      if (!(r.*field).empty()) list += (list.empty() ? "" : ", ") + std::to_string(r.world_rank) + "=" + hex((r.*field)[0]);
    out.push_back(std::string("the ranks' ") + what + " checksums disagree with no majority (" + list +
                  "): the GPUs computed different results from the same inputs");
    return;
  }
  for (const auto& r : ranks) {
    if ((r.*field).empty() || (r.*field)[0] == best->first) continue;
    out.push_back("rank " + std::to_string(r.world_rank) + ": " + what + " checksum " + hex((r.*field)[0]) +
                  " differs from the " + hex(best->first) + " of " + std::to_string(best->second) + " of " +
                  std::to_string(ranks.size()) + " ranks: its GPU computed a different result from the same inputs");
  }
}

}  // namespace

std::vector<std::string> determinism_problems(const std::vector<RankChecksums>& ranks) {
  std::vector<std::string> out;
  across_ranks(ranks, &RankChecksums::loss, "loss", out);
  across_ranks(ranks, &RankChecksums::grad, "local gradient", out);
  for (const auto& r : ranks) {
    across_steps(r, &RankChecksums::loss, "loss", out);
    across_steps(r, &RankChecksums::grad, "local gradient", out);
    across_steps(r, &RankChecksums::shard, "reduce-scattered gradient", out);
  }
  return out;
}

}  // namespace kiln::worker::model
