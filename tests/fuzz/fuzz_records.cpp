// results.jsonl lines and findings: from_json of kiln::Record (a Result or a CheckEnd, by its
// "record") and of kiln::Finding, on arbitrary JSON.
//
// Expected: only std::exception-derived errors (load_run catches std::exception and counts the
// line as bad); a record that loads is written back (to_json, dump) and loads again unchanged, as
// the store writes it and `kiln judge` reads it. Inputs nested deeper than kMaxDepth are skipped.
#include <string>

#include "common/findings.hpp"
#include "common/types.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace fz = kiln::fuzz;
using nlohmann::json;

namespace {

template <class T>
void check_round_trip(const T& value, const char* what) {
  json first;
  std::string line;
  try {
    first = value;
    line = first.dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (const std::exception& e) {
    fz::uncaught(what, e);
  }
  const json back = json::parse(line, nullptr, false);
  fz::expect(!back.is_discarded(), what, "written as invalid JSON: " + line.substr(0, 300));
  try {
    fz::expect(json(back.get<T>()) == first, what, "changed on a second load: " + line.substr(0, 300));
  } catch (const std::exception& e) {
    fz::fail(what, std::string("a loaded value does not load again (") + e.what() + "): " + line.substr(0, 300));
  }
}

template <class T>
void try_load(const json& j, const char* what) {
  T value;
  try {
    value = j.get<T>();
  } catch (const std::exception&) {
    return;
  } catch (...) {
    fz::fail(what, "threw something that is not a std::exception");
  }
  check_round_trip(value, what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto j = fz::parse_json(fz::as_text(data, size));
  if (!j) return 0;
  try_load<kiln::Record>(*j, "Record");
  try_load<kiln::Finding>(*j, "Finding");
  return 0;
}
