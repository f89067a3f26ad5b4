// What every check declares: its key, what it does, how it runs (scope, default deadline), its
// parameters (name, type, default, bounds, one line of help) and its figure of merit (the metric
// that localization and judgement read, its unit, and which way is better).
//
// The declarations are data in common/ so that the coordinator, which never links the worker's
// check code, can print them (`kiln catalog`) and validate `--params` before anything launches.
// A worker check (worker/checks/<prefix>/<name>.cpp) is registered under its key, and a unit test
// fails when the worker's registry and this table disagree.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln {

enum class Scope {
  PerRank,  // every rank runs it alone (comm = MPI_COMM_SELF)
  PerNode,  // one rank speaks for its node (inventory, GPU burn of the whole node)
  Group,    // all members of each group of the round run it together on the group's communicator
};
std::string to_string(Scope s);

enum class ParamType {
  Int,     // a JSON integer
  Number,  // any finite JSON number
  Bool,
  String,  // with `choices`, one of them
  Bytes,   // a non-negative integer, or a size string such as "64K", "8M", "1G"
};
std::string to_string(ParamType t);

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::Number;
  nlohmann::json fallback;  // the default; null: optional, absent unless given
  std::optional<double> min, max;
  std::vector<std::string> choices;  // String only; empty = any
  std::string help;
};

struct FigureSpec {
  std::string metric;  // e.g. "busbw"
  std::string unit;    // e.g. "GB/s"
  bool higher_is_better = true;
  // Sweeps report the figure at several sizes; localization reads it at its message size.
  bool per_size = false;
};

struct CheckSpec {
  std::string key;  // e.g. "gpu.burn"; the prefix names the folder under worker/checks/
  std::string description;
  Scope scope = Scope::PerRank;
  double default_deadline_s = 120.0;
  std::vector<ParamSpec> params;  // `deadline_s` is accepted by every check and not listed
  std::optional<FigureSpec> figure;
  // Further figures the check measures, judged like its figure of merit by the fleet comparison and
  // by a spec (storage.fio: read, write and IOPS per path). Localization reads only `figure`.
  std::vector<FigureSpec> more_figures = {};

  // `figure` or one of `more_figures` by metric; nullptr when the metric is none of them.
  const FigureSpec* figure_for(std::string_view metric) const;
};

const std::vector<CheckSpec>& check_catalog();
// nullptr when no check has this key.
const CheckSpec* find_check(std::string_view key);

// Parses a size: an integer, or a string with an optional K/M/G/T suffix (powers of 1024).
// Throws std::invalid_argument.
std::int64_t parse_size(const nlohmann::json& v);

// Checks `params` against `spec` (unknown names, types, bounds, choices) and returns them with
// every default filled in and every Bytes value as an integer. Throws std::invalid_argument with
// "<key>: <param>: <what is wrong>" on the first problem.
nlohmann::json validate_params(const CheckSpec& spec, const nlohmann::json& params);

// Every check with its scope, deadline, figure and parameters, for --list-tests and kiln catalog.
// `only`: just these keys (those a worker build registers); empty: all.
std::string describe_checks(const std::vector<std::string>& only = {});

}  // namespace kiln
