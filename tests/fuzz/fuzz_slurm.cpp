// SLURM command output: every parser in slurm/parsers.hpp and slurm/job_state.hpp on the same
// arbitrary text (sbatch job id, key=value lines, squeue, scontrol show job/hostnames/topology/
// node, sinfo, job state words).
//
// Expected: SlurmError is the only exception (the SLURM client and the launcher catch it); what
// the parsers return holds what their headers promise (a job id is digits, a host name has no
// brackets, every node a topology names is expanded).
#include <algorithm>
#include <string>

#include "slurm/job_state.hpp"
#include "slurm/parsers.hpp"
#include "slurm/slurm_error.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace kiln::slurm;
namespace fz = kiln::fuzz;

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Runs one parser; SlurmError is its documented refusal, anything else escapes its callers.
template <class F>
void run(const char* name, F&& parse) {
  try {
    parse();
  } catch (const SlurmError&) {
  } catch (const std::exception& e) {
    fz::uncaught(name, e);
  }
}

void check_states(const std::string& text) {
  const auto phase = phase_of(text);
  const int sets = is_pending_state(text) + is_running_state(text) + is_terminal_state(text);
  fz::expect(sets <= 1, "phase_of", "a state in two sets: " + text.substr(0, 80));
  fz::expect((phase == JobPhase::Unknown) == (sets == 0), "phase_of", "phase disagrees with the sets");
  fz::expect(!to_string(phase).empty(), "to_string(JobPhase)", "empty");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(fz::as_text(data, size));
  run("parse_job_id", [&] { fz::expect(all_digits(parse_job_id(text)), "parse_job_id", "not digits"); });
  run("parse_key_values", [&] { parse_key_values(text); });
  run("parse_squeue", [&] {
    for (const auto& j : parse_squeue(text)) {
      fz::expect(all_digits(j.id), "parse_squeue", "job id is not digits");
      fz::expect(j.phase == phase_of(j.state), "parse_squeue", "phase disagrees with the state");
    }
  });
  run("parse_scontrol_job", [&] {
    const auto j = parse_scontrol_job(text);
    fz::expect(j.phase == phase_of(j.state), "parse_scontrol_job", "phase disagrees with the state");
  });
  run("parse_hostnames", [&] {
    for (const auto& h : parse_hostnames(text))
      fz::expect(h.find_first_of("[] \t,") == std::string::npos, "parse_hostnames", "name with a bracket: " + h);
  });
  run("parse_topology", [&] {
    for (const auto& s : parse_topology(text))
      fz::expect(s.nodes_expr.empty() == s.nodes.empty(), "parse_topology", "nodes expression not expanded");
  });
  run("parse_sinfo", [&] {
    for (const auto& p : parse_sinfo(text)) fz::expect(p.total_nodes >= 0, "parse_sinfo", "negative node count");
  });
  run("parse_nodes", [&] {
    for (const auto& n : parse_nodes(text)) {
      fz::expect(!n.base_state.empty() || n.state.empty() || !std::isalpha(static_cast<unsigned char>(n.state[0])),
                 "parse_nodes", "lost the base state of '" + n.state + "'");
      (void)n.usable();
    }
  });
  run("parse_first_task_ends", [&] {
    for (const auto& e : parse_first_task_ends(text)) {
      fz::expect(!e.node.empty() && !e.how.empty() && !e.tasks.empty() && e.tasks.size() <= 4096,
                 "parse_first_task_ends", "an empty field or too many tasks");
      for (int t : e.tasks) fz::expect(t >= 0, "parse_first_task_ends", "negative task");
    }
  });
  check_states(text);
  return 0;
}
