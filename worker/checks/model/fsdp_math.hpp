// The arithmetic of model.fsdp_step that needs no GPU: the step's FLOP count and memory, the
// figures an operator reads (TFLOP/s, MFU, communication share and the part left exposed), and the
// determinism verdict over every rank's checksums. Unit-tested in tests/unit/test_fsdp_math.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::worker::model {

// The step's shape on one rank: `layers` bf16 Linear layers of hidden x hidden without bias, fed
// `tokens` tokens, the weights sharded over `ranks` GPUs.
struct FsdpShape {
  int layers = 8;
  std::int64_t hidden = 8192;
  std::int64_t tokens = 8192;
  int ranks = 1;
};

// FLOPs of one step on one rank: per layer the forward Y = X W^T and the backward dX = dY W and
// dW = dY^T X, each 2 * tokens * hidden^2.
double step_flops(const FsdpShape& s);

// Elements of one rank's shard of a layer: hidden^2 / ranks rounded up to a multiple of 8 (16
// bytes; the gathered buffer is padded to ranks whole shards, so NCCL moves equal parts).
std::int64_t shard_elems(const FsdpShape& s);

// Device bytes the step allocates on one rank (bf16 everywhere): weight and gradient shards, two
// gathered weight buffers and two full gradient buffers (double-buffered for the overlap), the
// activations kept for the backward pass and the activation gradients.
std::int64_t device_bytes(const FsdpShape& s);

// Median times of one rank's steps, milliseconds: the overlapped step, the same GEMMs with no
// communication, and the same collectives with no GEMMs.
struct StepTimes {
  double step_ms = 0;
  double compute_ms = 0;
  double comm_ms = 0;
};

struct StepFigures {
  double tflops = 0;              // step_flops / step time
  std::optional<double> mfu;      // tflops / peak, when a peak is known
  std::string mfu_note;           // why MFU is absent
  double exposed_comm_ms = 0;     // step - compute-only, at least 0: communication not hidden
  double comm_share = 0;          // comm-only / step
  double overlap = 0;             // share of comm-only time hidden under compute, in [0, 1]
};

// Throws std::invalid_argument on a non-positive step time.
StepFigures step_figures(const FsdpShape& s, const StepTimes& t, double peak_tflops);

// One rank's checksums, one entry per verified step: the final activations (the "loss"), its local
// weight gradients before the reduce-scatter, and the gradient shards it holds after it. Every
// rank feeds the same inputs, so loss and local gradients must match bit for bit across ranks and
// steps; the shards differ between ranks and must match across steps.
struct RankChecksums {
  int world_rank = -1;
  std::vector<std::uint64_t> loss, grad, shard;
};

// One sentence per disagreement, naming the rank; empty when everything matched. Across ranks a
// value is compared with the one most ranks agree on, so the odd GPU is the one named.
std::vector<std::string> determinism_problems(const std::vector<RankChecksums>& ranks);

std::string hex(std::uint64_t v);

}  // namespace kiln::worker::model
