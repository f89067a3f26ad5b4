// What --drain-on-fail and --resume-on-pass do to this node in SLURM, as NHC does: drain it with a
// "kiln-health <code>: <reason>" reason on a fault; resume it on a pass only when it is drained with
// such a reason (a drain an admin or another tool made is left alone). Never on exit 2: a check
// that could not run says nothing about the node. Commands run through slurm::SlurmClient (argv
// vectors, no shell), so a reason is one argument to scontrol whatever it holds.
#pragma once

#include <string>

#include "slurm/slurm_client.hpp"
#include "worker/health/verdict.hpp"

namespace kiln::worker::health {

// The node's SLURM name: SLURMD_NODENAME (slurmd sets it for HealthCheckProgram), else the short
// host name.
std::string slurm_node_name();

// Drains `node` on a fault; returns the line saying what it did (or why nothing). Throws
// slurm::SlurmError when scontrol fails.
std::string drain_on_fault(slurm::SlurmClient& client, const std::string& node, const Verdict& v);
// Resumes `node` when it passed and SLURM shows it drained with a kiln-health reason.
std::string resume_on_pass(slurm::SlurmClient& client, const std::string& node, const Verdict& v);

}  // namespace kiln::worker::health
