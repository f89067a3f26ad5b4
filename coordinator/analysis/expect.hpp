// Judgement against expectations (docs/spec.md): each node's class from the spec (or the shipped
// profile its GPUs match), the checks the class requires that did not run to a verdict there
// (not.tested), the figures a measurement fell short of (spec.below), and the hardware and
// software the node reports against the class's. Pure: the spec arrives parsed, the records typed.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/spec.hpp"
#include "common/types.hpp"
#include "coordinator/analysis/judge.hpp"

namespace kiln::analysis {

// Where the expectations come from: a spec file (--spec FILE), the shipped profiles matched by
// each node's GPUs (no --spec), or nowhere (--spec none).
enum class ExpectMode { Off, Spec, Profiles };

struct Expectations {
  ExpectMode mode = ExpectMode::Off;
  std::string label;               // the spec as the operator named it (its path)
  std::vector<spec::Spec> specs;   // the spec (Spec mode) or the profiles (Profiles mode)
  std::set<std::string> optional;  // kiln run --optional, on top of each class's own list
  std::string partition;           // the campaign's SLURM partition, for partition selectors
  std::vector<std::string> planned;  // the plan's checks, to tell "not in the plan" from "never ran"
};

// One node as the campaign saw it.
struct NodeSeen {
  std::string host;
  std::vector<int> ranks;
  std::set<int> lost;  // of those, lost mid-campaign
  NodeInfo info;
};

struct ExpectOutcome {
  std::vector<Finding> findings;
  // One line: what the figures were judged against ("judged against profile hgx-h200-8gpu
  // (detected: 8 x NVIDIA H200)", or that nothing was).
  std::string line;
  std::string source;                     // spec | profile | none | off
  std::vector<std::pair<std::string, std::string>> classes;  // host -> "spec:class", in host order
};

// Whether a live campaign keeps `r` for this judgement (a result some figure, at the message size
// it names, the driver or the kernel requirement reads), on top of analysis::kept_for_judgement.
// Memory then grows with the ranks and the figures a spec names, not with the results.
bool kept_for_expectations(const Expectations& e, const Result& r);

// Every finding the expectations give for these nodes over the plan's rounds (finished plan
// rounds only; localization rounds are the planner's).
ExpectOutcome judge_expectations(const Expectations& e, const std::vector<NodeSeen>& nodes,
                                 const std::vector<RoundRecord>& rounds);

// What a healthy group of these nodes reaches in `check`'s `metric` at `size_bytes`, in groups of
// `scope` (inter: across nodes; intra: inside one): the figure every node's class gives for it with
// no `ranks` (so for any group size), the least demanding where classes differ; nothing when a node
// has no class or its class no such figure. Localization judges a round that is slow as a whole
// against it (OutlierConfig::reference).
struct GroupReference {
  double value = 0;
  std::string scope;   // "inter" or "intra"
  std::string source;  // "spec.toml: class gpu-a, 40 GB/s (from ...)"
};
std::optional<GroupReference> group_reference(const Expectations& e, const std::vector<NodeSeen>& nodes,
                                              const std::string& check, const std::string& metric,
                                              std::int64_t size_bytes, spec::GroupScope scope);

// The verdict of a campaign that ran: fail for any finding of severity error or critical other
// than not.tested, else incomplete for any not.tested, else fail for any other finding, else pass.
std::string verdict_of(const std::vector<Finding>& findings);

}  // namespace kiln::analysis
