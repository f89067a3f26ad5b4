// kiln-worker --health-check: checks this node in well under a minute, for slurmd's
// HealthCheckProgram (docs/operator-guide.md, "Health checks"). No coordinator and no launcher:
// the checks run in this process (MPI as a singleton), except NCCL inside the node, whose harness
// needs one rank per GPU and is started with a local mpirun.
#pragma once

#include <string>

#include "common/types.hpp"
#include "worker/check.hpp"

namespace kiln::worker::health {

struct Options {
  bool drain_on_fail = false;
  bool resume_on_pass = false;
  bool json = false;
  std::string spec;     // spec file: the GPU count/model and HCA rate the node must have
  double budget_s = 50;  // the whole check, all parts
};

// Runs the parts, prints one line each and the verdict (or one JSON object), drains or resumes
// when asked. Returns the exit status: 0 healthy, 1 a fault found, 2 the check could not run.
int run_health_check(const Options& o, const NodeInfo& node, const Faults& faults);

}  // namespace kiln::worker::health
