// The findings catalog and the check declarations: complete, consistent with the worker's
// registry, with the generated docs, and with every code the source emits.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "common/checks.hpp"
#include "common/findings.hpp"
#include "common/ingested.hpp"
#include "worker/check.hpp"

using namespace kiln;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
const fs::path kSrc = fs::path(KILN_TEST_DATA).parent_path().parent_path();
}  // namespace

TEST_CASE("every finding code has one catalog entry with a next step", "[catalog]") {
  std::set<std::string> names;
  for (int c = 0; c <= static_cast<int>(Code::CampaignError); ++c) {
    const auto& e = entry(static_cast<Code>(c));
    INFO(e.name);
    CHECK(names.insert(std::string(e.name)).second);
    CHECK_FALSE(e.next_step.empty());
    CHECK_FALSE(e.meaning.empty());
    CHECK(code_from_string(e.name) == static_cast<Code>(c));
  }
  CHECK(names.size() == catalog().size());
  // One severity per code: switch.slow used to be Error in one place and Critical in another.
  CHECK(entry(Code::SwitchSlow).severity == Severity::Critical);
  // NVLink inside a node has its own advice, not the cable between two nodes.
  CHECK(std::string(entry(Code::NvlinkSlow).next_step).find("nvlink") != std::string::npos);
  CHECK(std::string(entry(Code::NvlinkSlow).next_step).find("cable") == std::string::npos);
}

TEST_CASE("an unknown code from a peer becomes result.invalid, with what was sent", "[catalog]") {
  auto p = json({{"code", "gpu.melted"}, {"what", "x"}}).get<Problem>();
  CHECK(p.code == Code::ResultInvalid);
  CHECK(p.what.find("gpu.melted") != std::string::npos);
  CHECK(json({{"code", 5}}).get<Problem>().code == Code::ResultInvalid);
  const auto f = make_finding(Code::NodeSlow, {"node", "gpu7"}, "s");
  CHECK(f.next_step.find("nodename=gpu7") != std::string::npos);
  CHECK(f.next_step.find("{entity}") == std::string::npos);
}

TEST_CASE("docs/findings.md is the generated catalog", "[catalog]") {
  CHECK(slurp(kSrc / "docs/findings.md") == catalog_markdown());
}

TEST_CASE("every code string in the product source is in the catalog", "[catalog]") {
  // A finding code is a dotted literal whose prefix is an entity kind; check keys share some
  // prefixes (gpu.burn), so the declared check keys are allowed too.
  const std::regex code_re(R"re("((?:gpu|node|link|nvlink|switch|rank|test|result|campaign)\.[a-z_]+)")re");
  std::set<std::string> bad;
  std::size_t seen = 0;
  for (const char* dir : {"common", "coordinator", "worker", "slurm"})
    for (const auto& f : fs::recursive_directory_iterator(kSrc / dir)) {
      const auto ext = f.path().extension();
      if (ext != ".cpp" && ext != ".hpp" && ext != ".cu") continue;
      const auto text = slurp(f.path());
      for (std::sregex_iterator it(text.begin(), text.end(), code_re), end; it != end; ++it) {
        const auto name = (*it)[1].str();
        ++seen;
        const bool not_a_code = name == "campaign.json" || name == "test.key";  // a file name, a help example
        if (!not_a_code && !code_from_string(name) && !find_check(name)) bad.insert(f.path().filename().string() + ": " + name);
      }
    }
  CHECK(seen > 10);
  CHECK(bad.empty());
  for (const auto& b : bad) WARN(b);
}

TEST_CASE("the worker registers exactly the declared checks, with the declared scope", "[catalog]") {
  std::set<std::string> declared, registered;
  for (const auto& c : check_catalog())
    if (!ingested_check(c.key)) declared.insert(c.key);  // model.user_job comes from kiln ingest
  for (const auto& k : worker::Registry::instance().keys()) {
    registered.insert(k);
    auto check = worker::Registry::instance().create(k);
    INFO(k);
    CHECK(check->scope() == check->spec().scope);
    CHECK(check->default_deadline_s() == check->spec().default_deadline_s);
  }
  CHECK(declared == registered);
}

TEST_CASE("parameters are validated against the declaration", "[catalog]") {
  const auto& inv = *find_check("host.inventory");
  CHECK_THROWS_WITH(validate_params(inv, {{"deadline_s", "x"}}), Catch::Contains("deadline_s: must be a number"));
  CHECK_THROWS_WITH(validate_params(inv, {{"deadlin_s", 3}}), Catch::Contains("unknown parameter 'deadlin_s'"));
  CHECK_THROWS_WITH(validate_params(inv, {{"deadline_s", 1e300}}), Catch::Contains("at most"));
  CHECK_THROWS(validate_params(inv, json::array()));
  const auto& nccl = *find_check("nccl.all_reduce");
  const auto p = validate_params(nccl, {{"max_bytes", "64M"}, {"placement", "out"}});
  CHECK(p["max_bytes"] == 64 << 20);
  CHECK(p["min_bytes"] == 8);  // default filled in
  CHECK(p["iters"] == 20);
  CHECK_THROWS_WITH(validate_params(nccl, {{"placement", "sideways"}}), Catch::Contains("one of out, in, both"));
  CHECK_THROWS_WITH(validate_params(nccl, {{"max_bytes", "64Q"}}), Catch::Contains("suffix"));
  CHECK_THROWS_WITH(validate_params(nccl, {{"iters", 2.5}}), Catch::Contains("integer"));
  CHECK_THROWS_WITH(validate_params(nccl, {{"iters", 0}}), Catch::Contains("at least"));
  // Sizes near and past INT64_MAX (found by tests/fuzz/fuzz_params.cpp: the size went through a
  // double and back, which overflows there).
  CHECK_THROWS_WITH(validate_params(nccl, {{"max_bytes", INT64_MAX}}), Catch::Contains("at most"));
  CHECK_THROWS_WITH(validate_params(nccl, {{"max_bytes", UINT64_MAX}}), Catch::Contains("too large"));
  CHECK_THROWS_WITH(validate_params(nccl, {{"max_bytes", "8388608T"}}), Catch::Contains("too large"));
  CHECK(validate_params(nccl, {{"max_bytes", (64ll << 30) - 1}})["max_bytes"] == (64ll << 30) - 1);
  // Every declared default passes its own validation.
  for (const auto& c : check_catalog()) CHECK_NOTHROW(validate_params(c, json::object()));
  // Group checks that localization can run declare a figure.
  for (const char* k : {"mpi.alltoall", "mpi.all_reduce", "nccl.alltoall", "rdma.write_bw", "net.pair_bw"}) {
    INFO(k);
    REQUIRE(find_check(k)->figure);
  }
  CHECK_FALSE(find_check("rdma.send_lat")->figure->higher_is_better);
}

TEST_CASE("every parameter a check reads is declared by a check of its family", "[catalog]") {
  // ctx.param("x", ...), ctx.param<T>("x", ...), params.find("x"), params.contains("x"),
  // p.value("x", ...) and bytes_param(p, "x", ...) in worker/checks/<prefix>/: each x must be a parameter that some check
  // with that prefix declares, so that --params can set it and kiln validates it.
  const std::regex read_re(R"re((?:ctx\.param(?:<[^>]*>)?\(|params\.find\(|params\.contains\(|[^_]p\.value\(|bytes_param\(p, )\s*"([a-z_]+)")re");
  std::size_t seen = 0;
  std::set<std::string> undeclared;
  for (const auto& dir : fs::directory_iterator(kSrc / "worker/checks")) {
    const auto prefix = dir.path().filename().string();
    std::set<std::string> declared{"deadline_s"};
    for (const auto& c : check_catalog())
      if (c.key.rfind(prefix + ".", 0) == 0)
        for (const auto& ps : c.params) declared.insert(ps.name);
    for (const auto& f : fs::recursive_directory_iterator(dir.path())) {
      if (!f.is_regular_file()) continue;
      const auto text = slurp(f.path());
      for (std::sregex_iterator it(text.begin(), text.end(), read_re), end; it != end; ++it) {
        const auto name = (*it)[1].str();
        ++seen;
        if (!declared.count(name)) undeclared.insert(prefix + ": " + name);
      }
    }
  }
  CHECK(seen > 20);
  for (const auto& u : undeclared) WARN(u);
  CHECK(undeclared.empty());
}
