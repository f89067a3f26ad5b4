// The spec: what each class of node should have and do (docs/spec.md). A spec file (TOML) names
// one or more node classes; each class has a selector (a partition, a hostlist, or "any node whose
// GPUs match"), hardware and software it must have, expected figures for checks with the tolerance
// and the source of each, and the checks that may be left out. `parse_spec` turns the text into a
// typed `Spec` and collects every problem as one "FILE:LINE:COL: message" line.
//
// The types are plain data: the analysis core may take a Spec; only parse_spec/load_spec read
// TOML and files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/types.hpp"

namespace kiln::spec {

// Compares two versions component by component. Components are split at '.', '-', '+', '_' and
// '~'; two numbers compare as numbers, anything else as text (a number sorts before text); a
// missing component counts as 0. Returns <0, 0 or >0.
int compare_versions(std::string_view a, std::string_view b);

// Whether `v` is a version a spec may name: a digit first, then digits, letters and separators,
// no empty component.
bool valid_version(std::string_view v);

// A software requirement: exactly `version` (its components are a prefix of the actual ones, so
// "13.0" accepts 13.0 and 13.0.88 but not 13.1), or, when `minimum`, that version or a later one.
struct VersionReq {
  std::string version;
  bool minimum = false;
  bool satisfied_by(std::string_view actual) const;
};

struct Hardware {
  std::string gpu_model;  // a substring of the NVML name ("H200" in "NVIDIA H200"); empty: any
  std::optional<int> gpus_per_node;
  std::optional<double> gpu_memory_gib;  // as NVML reports the total
  std::optional<int> nvlinks_per_gpu;
  std::optional<int> pcie_gen;
  std::optional<int> pcie_width;
  std::optional<int> hcas_per_node;
  std::optional<double> hca_rate_gbps;
};

struct Software {
  std::optional<VersionReq> driver, cuda, nccl, mpi, rdma_core, kernel;
};

// Where a group check's figure was measured: the node's own GPUs (intra) or across nodes (inter).
// None for per-node and per-rank checks.
enum class GroupScope { None, Intra, Inter };
std::string to_string(GroupScope s);

// One expected figure: a healthy node of the class reaches `value` (in `unit`); a measurement
// worse by more than `tolerance` (a fraction in (0,1)) is below the spec.
struct Figure {
  std::string check;   // "gpu.burn"
  std::string metric;  // "tflops"
  GroupScope scope = GroupScope::None;
  std::optional<std::int64_t> size_bytes;  // the message size, for per-size metrics
  std::optional<int> ranks;                // the group size it was measured with; none: any
  double value = 0;
  double tolerance = 0;
  std::string source;  // where the figure came from
  std::string unit;
  bool higher_is_better = true;

  // The worst acceptable measurement: value * (1 - tolerance), or value * (1 + tolerance) when
  // lower is better.
  double limit() const;
  bool acceptable(double measured) const;
};

struct NodeClass {
  std::string name;
  std::string description;
  // The selector: exactly one of these.
  std::string partition;
  std::string hosts_text;          // the hostlist as written
  std::vector<std::string> hosts;  // expanded
  bool match_hardware = false;     // any node whose GPUs match gpu_model and gpus_per_node

  Hardware hardware;
  Software software;
  std::vector<Figure> figures;
  std::vector<std::string> optional;  // checks that may be absent or untested
  // Checks a verdict needs: those with a figure, and those the hardware and software fields imply
  // (required_by_fields), less the optional ones; in catalog order.
  std::vector<std::string> required;

  bool is_required(std::string_view check) const;
  // The figure for this check, metric, scope and size; nullptr when the class has none.
  const Figure* figure(std::string_view check, std::string_view metric, GroupScope scope = GroupScope::None,
                       std::optional<std::int64_t> size_bytes = std::nullopt) const;
};

struct Spec {
  std::string path;
  std::string title;
  std::vector<NodeClass> classes;

  // The class of a node: the first whose hostlist names `host`, else the first whose partition
  // is `partition`; nullptr when none. match_hardware classes need the node's NodeInfo
  // (matches_hardware).
  const NodeClass* class_for(std::string_view host, std::string_view partition) const;
  std::size_t figure_count() const;
};

// A metric a spec may give a figure for: each check's declared figure of merit (common/checks.cpp)
// and the extra metrics the check emits that are worth a figure (docs/spec.md lists them).
struct SpecMetric {
  std::string metric;
  std::string unit;
  bool higher_is_better = true;
  bool per_size = false;
};
std::vector<SpecMetric> spec_metrics(std::string_view check);

// The checks a class's hardware and software fields imply: gpu.health for the GPU fields and the
// driver, ib.ports for the HCA fields, host.inventory for the other versions.
std::vector<std::string> required_by_fields(const NodeClass& c);

struct ParseResult {
  std::optional<Spec> spec;         // set when there are no errors
  std::vector<std::string> errors;  // "FILE:LINE:COL: message", in file order
};
// Parses and validates spec text; `path` names it in errors and in Spec::path.
ParseResult parse_spec(std::string_view text, const std::string& path);
// Reads and parses the file at `path`.
ParseResult load_spec(const std::string& path);

// Whether the node's GPUs are the class's: gpu_count equals gpus_per_node (when given) and every
// GPU name contains gpu_model (case-insensitively; when given). A class with neither never matches.
bool matches_hardware(const NodeClass& c, const NodeInfo& node);
// The profile (a spec whose classes select by hardware) for this node: among the classes that
// match, the one with the longest gpu_model, then the one whose hcas_per_node equals the node's
// HCA count, then the first. nullptr when none matches.
const Spec* match_profile(const std::vector<Spec>& profiles, const NodeInfo& node);

}  // namespace kiln::spec
