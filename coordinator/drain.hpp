// Taking nodes out of service on a run's findings (kiln drain RUN_DIR, kiln run --drain) and putting
// them back (kiln undrain RUN_DIR): docs/operator-guide.md, "Draining nodes".
//
// Only confirmed isolate-level findings drain: a code whose next step is to take the node out
// (isolates()), severity error or critical, confidence at least kDrainConfidence, about a node or a
// part of one (a GPU, an HCA). Unresolved, inconclusive, link and switch findings never do. Each
// node is drained once, with reason "kiln <code> <run-id>" (its most severe finding's code). What was
// drained is kept in RUN_DIR/drained.json, so that undrain reverses exactly that and nothing else.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/findings.hpp"
#include "slurm/slurm_client.hpp"

namespace kiln::coord {

inline constexpr double kDrainConfidence = 0.9;
inline constexpr const char* kDrainedFile = "drained.json";

// Whether a finding with this code takes its node out of service.
bool isolates(Code c);

struct DrainTarget {
  std::string node;
  std::string reason;              // "kiln node.slow 20261201-080000-abcd12"
  std::vector<std::string> codes;  // every isolate-level finding on the node
};

struct DrainPlan {
  std::string run_id;
  std::vector<DrainTarget> targets;
  std::vector<std::string> held;  // one line per finding that names a node but does not drain it, and why
};

// What report.json (a run's report) says to drain. Throws std::runtime_error on a malformed report.
DrainPlan plan_drain(const nlohmann::json& report);

// The command that drains (or resumes) a node, as an operator would type it.
std::string drain_command(const DrainTarget& t);
std::string resume_command(const std::string& node);

// Prints the plan; with yes, drains every target and records it in RUN_DIR/drained.json. Returns
// the exit code: 0, or 2 when a drain failed (the others are still made and recorded).
int drain_run(const std::filesystem::path& dir, const DrainPlan& plan, bool yes, slurm::SlurmClient& slurm,
              std::ostream& out);

// Resumes the nodes RUN_DIR/drained.json lists that are still drained with this run's reason; a
// node drained since for another reason, or already back, is left alone and named. Without yes it
// prints the commands. Returns 0, or 2 when nothing was recorded or a resume failed.
int undrain_run(const std::filesystem::path& dir, bool yes, slurm::SlurmClient& slurm, std::ostream& out);

}  // namespace kiln::coord
