// `kiln spec from-run RUN_DIR`: a spec written from a known-good run, the way a site baselines its
// own hardware. Each check's figure of merit becomes an expected figure: the median over the run's
// GPUs or nodes (per-GPU and per-node checks), or over its groups at each message size of 64 MiB or
// more, inside one node (intra) or across nodes (inter), with the group size measured. Hardware
// (GPU model and count) comes from the ranks' hellos, and the class selects the run's hosts.
#pragma once

#include <string>

#include "coordinator/run_dir.hpp"

namespace kiln::coord {

struct BaselineOptions {
  std::string name = "baseline";  // the class name
  double tolerance = 0.10;        // for every figure
  std::string run_dir;            // named in each figure's source
};

// The spec's TOML text. Throws std::runtime_error when the run has no figure to baseline.
std::string baseline_spec(const LoadedRun& run, const BaselineOptions& opts);

}  // namespace kiln::coord
