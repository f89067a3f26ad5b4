// `--params`: kiln::validate_params for every declared check on arbitrary JSON, and parse_size.
//
// The input is tried two ways: as one check's parameters ({"iters": 5}) against every declared
// check, and as kiln run's --params ({"nccl.all_reduce": {"iters": 5}}), each key's object
// against that check.
//
// Expected: std::invalid_argument is the only exception (kiln run and the worker's runner catch
// it); what validate_params accepts is complete and within the declaration (every default filled,
// integers integral, sizes non-negative integers, numbers finite and within bounds, strings one of
// the choices), and validating it again changes nothing. Inputs nested deeper than kMaxDepth are
// skipped.
#include <algorithm>
#include <cmath>
#include <string>

#include "common/checks.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace fz = kiln::fuzz;
using nlohmann::json;
using kiln::ParamSpec;
using kiln::ParamType;

namespace {

void check_value(const std::string& where, const ParamSpec& ps, const json& v) {
  switch (ps.type) {
    case ParamType::Bool: fz::expect(v.is_boolean(), where.c_str(), "not a bool: " + v.dump()); return;
    case ParamType::String:
      fz::expect(v.is_string(), where.c_str(), "not a string");
      fz::expect(ps.choices.empty() || std::count(ps.choices.begin(), ps.choices.end(), v.get<std::string>()),
                 where.c_str(), "not one of the choices");
      return;
    case ParamType::Bytes:
      fz::expect(v.is_number_integer() && v.get<std::int64_t>() >= 0, where.c_str(), "size not a count: " + v.dump());
      break;
    case ParamType::Int: fz::expect(v.is_number_integer(), where.c_str(), "not an integer: " + v.dump()); break;
    case ParamType::Number: fz::expect(v.is_number(), where.c_str(), "not a number: " + v.dump()); break;
  }
  const double x = v.get<double>();
  fz::expect(std::isfinite(x), where.c_str(), "not finite");
  fz::expect(!ps.min || x >= *ps.min, where.c_str(), "below its minimum: " + v.dump());
  fz::expect(!ps.max || x <= *ps.max, where.c_str(), "above its maximum: " + v.dump());
}

void check_accepted(const kiln::CheckSpec& spec, const json& out) {
  const std::string where = "validate_params(" + spec.key + ")";
  fz::expect(out.is_object(), where.c_str(), "returned a non-object");
  for (const auto& ps : spec.params) {
    if (!out.contains(ps.name)) {
      fz::expect(ps.fallback.is_null(), where.c_str(), "default of '" + ps.name + "' not filled in");
      continue;
    }
    check_value(where + ": " + ps.name, ps, out.at(ps.name));
  }
  try {
    fz::expect(kiln::validate_params(spec, out) == out, where.c_str(), "not idempotent: " + out.dump());
  } catch (const std::exception& e) {
    fz::fail(where.c_str(), std::string("refuses its own output (") + e.what() + "): " + out.dump());
  }
}

void try_validate(const kiln::CheckSpec& spec, const json& params) {
  json out;
  try {
    out = kiln::validate_params(spec, params);
  } catch (const std::invalid_argument&) {
    return;
  } catch (const std::exception& e) {
    fz::uncaught("validate_params", e);
  }
  check_accepted(spec, out);
}

void try_parse_size(const json& v) {
  try {
    fz::expect(kiln::parse_size(v) >= 0, "parse_size", "negative size from " + v.dump());
  } catch (const std::invalid_argument&) {
  } catch (const std::exception& e) {
    fz::uncaught("parse_size", e);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto j = fz::parse_json(fz::as_text(data, size));
  if (!j) return 0;
  try_parse_size(*j);
  for (const auto& spec : kiln::check_catalog()) {
    try_validate(spec, *j);
    if (j->is_object() && j->contains(spec.key)) try_validate(spec, j->at(spec.key));
  }
  if (j->is_object())
    for (const auto& [k, v] : j->items()) try_parse_size(v);
  return 0;
}
