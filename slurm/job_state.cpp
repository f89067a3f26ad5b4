#include "slurm/job_state.hpp"

#include <array>

namespace kiln::slurm {

namespace {

// From squeue(1) "JOB STATE CODES" (SLURM 22.05). Kept explicit so that a new state shows up as
// Unknown in a log, not silently as the wrong phase.
constexpr std::array<std::string_view, 7> kPending = {
    "PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD", "RESIZING"};
constexpr std::array<std::string_view, 6> kRunning = {
    "RUNNING", "COMPLETING", "SIGNALING", "STAGE_OUT", "SUSPENDED", "STOPPED"};
constexpr std::array<std::string_view, 11> kTerminal = {
    "COMPLETED", "FAILED",    "TIMEOUT",  "NODE_FAIL", "CANCELLED", "OUT_OF_MEMORY",
    "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REVOKED",   "SPECIAL_EXIT"};

std::string_view first_word(std::string_view s) {
  auto end = s.find_first_of(" +");
  return end == std::string_view::npos ? s : s.substr(0, end);
}

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& set, std::string_view state) {
  for (auto s : set)
    if (s == state) return true;
  return false;
}

}  // namespace

std::string to_string(JobPhase p) {
  switch (p) {
    case JobPhase::Pending: return "pending";
    case JobPhase::Running: return "running";
    case JobPhase::Terminal: return "terminal";
    case JobPhase::Unknown: break;
  }
  return "unknown";
}

bool is_pending_state(std::string_view state) { return contains(kPending, first_word(state)); }
bool is_running_state(std::string_view state) { return contains(kRunning, first_word(state)); }
bool is_terminal_state(std::string_view state) { return contains(kTerminal, first_word(state)); }

JobPhase phase_of(std::string_view state) {
  if (is_pending_state(state)) return JobPhase::Pending;
  if (is_running_state(state)) return JobPhase::Running;
  if (is_terminal_state(state)) return JobPhase::Terminal;
  return JobPhase::Unknown;
}

}  // namespace kiln::slurm
