// gpu.dcgm's reader of `dcgmi diag -j` (worker/checks/gpu/dcgm_json), on files written by hand in
// DCGM's documented layouts, old and new (tests/data/dcgm/README.md says where from).
#include <catch2/catch.hpp>

#include <algorithm>

#include "tests/unit/test_data.hpp"
#include "worker/checks/gpu/dcgm_json.hpp"

using namespace kiln::worker::gpu;

namespace {
std::string dcgm_data(const std::string& name) { return test_data("dcgm/" + name); }

const DcgmEntry* find(const DcgmReport& r, const std::string& test, int gpu) {
  for (const auto& e : r.entries)
    if (e.test == test && std::find(e.gpus.begin(), e.gpus.end(), gpu) != e.gpus.end()) return &e;
  return nullptr;
}
}  // namespace

TEST_CASE("DCGM 3.x layout: per-GPU results, warnings as objects, nulls between tests", "[dcgm]") {
  const auto r = parse_dcgm_diag(dcgm_data("v3_level1_pass_warn.json"));
  CHECK(r.version == "3.3.1");
  CHECK(r.runtime_error.empty());
  REQUIRE(r.entries.size() == 4);
  const auto* pm = find(r, "Persistence Mode", 1);
  REQUIRE(pm);
  CHECK(pm->gpus == std::vector<int>{0, 1});
  CHECK(pm->outcome == DcgmOutcome::Warn);
  REQUIRE(pm->warnings.size() == 1);
  CHECK_THAT(pm->warnings[0], Catch::Contains("Persistence mode for GPU 0"));
  const auto* skipped = find(r, "GPU Memory", 1);
  REQUIRE(skipped);
  CHECK(skipped->outcome == DcgmOutcome::Skip);
  CHECK_THAT(skipped->info.at(0), Catch::Contains("ECC is not enabled"));
  CHECK(find(r, "GPU Memory", 0)->outcome == DcgmOutcome::Pass);
  CHECK(find(r, "GPU Memory", 0)->category == "Hardware");
}

TEST_CASE("DCGM 3.x layout: a failed test names the GPU and the reason", "[dcgm]") {
  const auto r = parse_dcgm_diag(dcgm_data("v3_level2_fail.json"));
  const auto* bad = find(r, "PCIe", 1);
  REQUIRE(bad);
  CHECK(bad->outcome == DcgmOutcome::Fail);
  CHECK_THAT(bad->warnings.at(0), Catch::Contains("x8"));
  CHECK(find(r, "PCIe", 0)->outcome == DcgmOutcome::Pass);
}

TEST_CASE("DCGM 4.x layout: entity results, test_summary, metadata version", "[dcgm]") {
  const auto r = parse_dcgm_diag(dcgm_data("v4_level1_fail.json"));
  CHECK(r.version == "4.2.3");
  const auto* mem = find(r, "memory", 1);
  REQUIRE(mem);
  CHECK(mem->outcome == DcgmOutcome::Fail);
  CHECK(mem->gpus == std::vector<int>{1});
  CHECK_THAT(mem->warnings.at(0), Catch::Contains("memory mismatch"));
  CHECK(find(r, "software", 0)->outcome == DcgmOutcome::Pass);
  // pcie has no per-GPU results, only its summary: one node-level entry.
  const DcgmEntry* pcie = nullptr;
  for (const auto& e : r.entries)
    if (e.test == "pcie") pcie = &e;
  REQUIRE(pcie);
  CHECK(pcie->gpus.empty());
  CHECK(pcie->outcome == DcgmOutcome::Skip);
  CHECK_THAT(pcie->info.at(0), Catch::Contains("not supported"));
}

TEST_CASE("DCGM's runtime_error is kept, not read as no results", "[dcgm]") {
  const auto r = parse_dcgm_diag(dcgm_data("v4_runtime_error.json"));
  CHECK_THAT(r.runtime_error, Catch::Contains("unsupported GPU"));
  CHECK(r.entries.empty());
}

TEST_CASE("truncated or malformed dcgmi output is an error with a reason, never a crash", "[dcgm]") {
  for (const char* name : {"v3_level1_pass_warn.json", "v4_level1_fail.json", "v3_level2_fail.json"}) {
    const auto text = dcgm_data(name);
    for (std::size_t cut = 0; cut + 2 < text.size(); cut += 7) {
      try {
        parse_dcgm_diag(text.substr(0, cut));
        FAIL(name << " cut at " << cut << " was accepted");
      } catch (const std::runtime_error& e) {
        CHECK_THAT(e.what(), Catch::StartsWith("dcgmi diag output: "));
      }
    }
  }
  CHECK_THROWS_WITH(parse_dcgm_diag(R"({"DCGM Diagnostic": {"test_categories": [{"category": "X", "tests": [
      {"name": "t", "results": [{"gpu_ids": "0", "status": "Maybe"}]}]}]}})"),
                    Catch::Contains("unknown status"));
  CHECK_THROWS_WITH(parse_dcgm_diag(R"({"DCGM Diagnostic": {"test_categories": [{"category": "X", "tests": [
      {"name": "t", "results": [{"gpu_ids": "0;1", "status": "Pass"}]}]}]}})"),
                    Catch::Contains("bad GPU id"));
  CHECK_THROWS_WITH(parse_dcgm_diag(R"({"something": 1})"), Catch::Contains("DCGM Diagnostic"));
  CHECK_THROWS_WITH(parse_dcgm_diag("Error: unable to connect to host engine"), Catch::Contains("no JSON"));
  CHECK_THROWS_WITH(parse_dcgm_diag(R"({"DCGM Diagnostic": {"test_categories": [{"category": "X", "tests": [
      {"name": "t", "results": [{"entity_id": "zero", "status": "Pass"}]}]}]}})"),
                    Catch::Contains("entity_id"));
}
