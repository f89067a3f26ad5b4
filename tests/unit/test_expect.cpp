// Judgement against a spec (coordinator/analysis/expect.cpp, and how report.cpp uses it): figures below and above their
// tolerance, lower-is-better metrics, intra- vs inter-node groups and message sizes; not.tested
// from a SKIP and from a check that never ran; the verdict's precedence and exit codes; the line
// that says what the figures were judged against.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "coordinator/expectations.hpp"
#include "coordinator/report.hpp"
#include "tests/unit/expect_fixtures.hpp"

using namespace expect_fixtures;

TEST_CASE("a per-GPU figure below its tolerance is spec.below, at the limit it is not") {
  auto rounds = all_ran();
  rounds[1].results = {result("gpu.burn", "n1", 0, "tflops", 541, {"gpu", "n1/gpu0"}),
                       result("gpu.burn", "n1", 0, "tflops", 530, {"gpu", "n1/gpu1"}),
                       result("gpu.burn", "n2", 2, "tflops", 700, {"gpu", "n2/gpu0"})};
  const auto out = analysis::judge_expectations(expect(), nodes(), rounds);
  const auto below = with_code(out.findings, Code::SpecBelow);
  REQUIRE(below.size() == 1);
  CHECK(below[0].entity == Entity{"gpu", "n1/gpu1"});
  CHECK(below[0].severity == Severity::Error);
  CHECK_THAT(below[0].summary, Catch::Contains("measured 530 TFLOP/s, expected 600 TFLOP/s") &&
                                   Catch::Contains("at least 540 TFLOP/s with tolerance 10%") &&
                                   Catch::Contains("burn on n1"));
  const auto& ev = below[0].evidence.at(0);
  CHECK(ev["check"] == "gpu.burn");
  CHECK(ev["metric"] == "tflops");
  CHECK(ev["measured"] == 530.0);
  CHECK(ev["expected"] == 600.0);
  CHECK(ev["limit"].get<double>() == Approx(540));
  CHECK(ev["tolerance"] == 0.10);
  CHECK(ev["source"] == "burn on n1");
  CHECK(ev["size"].is_null());
}

TEST_CASE("the worst measurement of an entity is the one judged") {
  auto rounds = all_ran();
  rounds[1].results = {result("gpu.burn", "n1", 0, "tflops", 650, {"gpu", "n1/gpu0"}),
                       result("gpu.burn", "n1", 0, "tflops", 500, {"gpu", "n1/gpu0"})};
  const auto below = with_code(analysis::judge_expectations(expect(), nodes(), rounds).findings, Code::SpecBelow);
  REQUIRE(below.size() == 1);
  CHECK(below[0].evidence[0]["measured"] == 500.0);
}

TEST_CASE("a lower-is-better figure fails above value * (1 + tolerance)") {
  auto rounds = all_ran();
  rounds[3].round.groups = {{0, 2}, {1, 3}};
  rounds[3].results = {result("net.pair_bw", "n1", 0, "latency", 14.9, {}, std::nullopt, 0),
                       result("net.pair_bw", "n1", 1, "latency", 16, {}, std::nullopt, 1)};
  const auto below = with_code(analysis::judge_expectations(expect(), nodes(), rounds).findings, Code::SpecBelow);
  REQUIRE(below.size() == 1);
  CHECK(below[0].entity == Entity{"group", "n[1,3]"});
  CHECK_THAT(below[0].summary, Catch::Contains("measured 16 us, expected 10 us (at most 15 us"));
}

TEST_CASE("a group inside one node is judged by the intra figure, one spanning nodes by the inter figure") {
  auto rounds = all_ran();
  auto& rr = rounds[2];
  rr.round.groups = {{0, 1}, {2, 3}};  // n1 alone; n2 with n3
  rr.results = {result("mpi.all_reduce", "n1", 0, "busbw", 8.5, {}, MiB(1), 0),   // intra limit 9
                result("mpi.all_reduce", "n1", 1, "busbw", 9.5, {}, MiB(1), 0),
                result("mpi.all_reduce", "n2", 2, "busbw", 4.5, {}, MiB(1), 1),   // inter limit 4
                result("mpi.all_reduce", "n3", 3, "busbw", 4.1, {}, MiB(1), 1)};
  auto below = with_code(analysis::judge_expectations(expect(), nodes(), rounds).findings, Code::SpecBelow);
  REQUIRE(below.size() == 1);
  CHECK(below[0].entity == Entity{"node", "n1"});
  CHECK(below[0].evidence[0]["scope"] == "intra");
  CHECK(below[0].evidence[0]["measured"] == 8.5);
  CHECK(below[0].evidence[0]["size"] == MiB(1));
  CHECK_THAT(below[0].summary, Catch::Contains("mpi.all_reduce busbw at 1 MiB (intra, 2 ranks)"));

  rr.results.push_back(result("mpi.all_reduce", "n3", 3, "busbw", 3.9, {}, MiB(1), 1));
  below = with_code(analysis::judge_expectations(expect(), nodes(), rounds).findings, Code::SpecBelow);
  REQUIRE(below.size() == 2);
  const auto& inter = below[0].entity.kind == "group" ? below[0] : below[1];
  CHECK(inter.entity == Entity{"group", "n[2-3]"});
  CHECK(inter.evidence[0]["scope"] == "inter");
  CHECK(inter.evidence[0]["expected"] == 5.0);
  CHECK(inter.evidence[0]["measured"] == 3.9);
}

TEST_CASE("only the figure's message size and group size are compared") {
  auto rounds = all_ran();
  auto& rr = rounds[2];
  rr.round.groups = {{0, 2, 3}};  // three ranks across nodes: the inter figure is for 2 ranks
  rr.results = {result("mpi.all_reduce", "n1", 0, "busbw", 0.1, {}, MiB(1), 0)};
  CHECK(with_code(analysis::judge_expectations(expect(), nodes(), rounds).findings, Code::SpecBelow).empty());
  rr.round.groups = {{0, 1}};
  rr.results = {result("mpi.all_reduce", "n1", 0, "busbw", 0.1, {}, MiB(2), 0),  // no figure at 2 MiB
                result("mpi.all_reduce", "n1", 0, "busbw", 0.1, {}, MiB(1) - 1, 0)};
  CHECK(with_code(analysis::judge_expectations(expect(), nodes(), rounds).findings, Code::SpecBelow).empty());
}

TEST_CASE("a required check that skipped on a node is not.tested there, with the SKIP reason") {
  auto rounds = all_ran();
  rounds[0].ends = {end("gpu.health", "n1", 0, Status::Skip, "no GPU visible (NVML: not found)"),
                    end("gpu.health", "n2", 2, Status::Pass), end("gpu.health", "n3", 3, Status::Fail)};
  const auto out = analysis::judge_expectations(expect(), nodes(), rounds);
  const auto nt = with_code(out.findings, Code::NotTested);
  REQUIRE(nt.size() == 1);
  CHECK(nt[0].entity == Entity{"node", "n1"});
  CHECK(nt[0].severity == Severity::Warning);
  CHECK(nt[0].evidence[0]["check"] == "gpu.health");
  CHECK(nt[0].evidence[0]["reason"] == "skipped: no GPU visible (NVML: not found)");
  CHECK_THAT(nt[0].summary, Catch::Contains("gpu.health was not tested on n1 (class gpu): skipped: no GPU visible"));
}

TEST_CASE("a required check that never ran is not.tested, saying why") {
  auto e = expect();
  auto rounds = all_ran();
  SECTION("not in the plan") {
    rounds.erase(rounds.begin() + 1);
    e.planned = {"gpu.health", "mpi.all_reduce", "net.pair_bw"};
    const auto nt = with_code(analysis::judge_expectations(e, nodes(), rounds).findings, Code::NotTested);
    REQUIRE(nt.size() == 3);  // one per node
    for (const auto& f : nt) CHECK(f.evidence[0]["reason"] == "never ran: not in the plan (kiln run --tests)");
  }
  SECTION("the campaign ended before it") {
    rounds.erase(rounds.begin() + 1);
    const auto nt = with_code(analysis::judge_expectations(e, nodes(), rounds).findings, Code::NotTested);
    REQUIRE(nt.size() == 3);
    CHECK(nt[0].evidence[0]["reason"] == "never ran: the campaign ended before its round");
  }
  SECTION("the node's ranks were lost before it") {
    auto ns = nodes();
    ns[1].lost = {2};
    rounds[1].ends.erase(rounds[1].ends.begin() + 2);  // n2's rank 2
    const auto nt = with_code(analysis::judge_expectations(e, ns, rounds).findings, Code::NotTested);
    REQUIRE(nt.size() == 1);
    CHECK(nt[0].entity == Entity{"node", "n2"});
    CHECK(nt[0].evidence[0]["reason"] == "never ran: the node's ranks were lost before it");
  }
  SECTION("its round was cut short") {
    rounds[1].finished = false;
    const auto nt = with_code(analysis::judge_expectations(e, nodes(), rounds).findings, Code::NotTested);
    REQUIRE(nt.size() == 3);
    CHECK(nt[0].evidence[0]["reason"] == "never ran: its round was cut short");
  }
  SECTION("--optional drops the requirement") {
    rounds.erase(rounds.begin() + 1);
    e.optional = {"gpu.burn"};
    CHECK(with_code(analysis::judge_expectations(e, nodes(), rounds).findings, Code::NotTested).empty());
  }
}

TEST_CASE("a check that ended in error is a finding already, not also not.tested") {
  auto rounds = all_ran();
  rounds[1].ends[0] = end("gpu.burn", "n1", 0, Status::Error, "cuBLAS failed");
  CHECK(with_code(analysis::judge_expectations(expect(), nodes(), rounds).findings, Code::NotTested).empty());
}

TEST_CASE("a node outside every class is not judged") {
  auto ns = nodes();
  ns.push_back(node("login1", {4}));
  const auto out = analysis::judge_expectations(expect(), ns, {});
  for (const auto& f : out.findings) CHECK(f.entity.id != "login1");
  CHECK(out.line == "judged against spec t.toml: class gpu (3 nodes); 1 node in no class, compared only with each other");
}

TEST_CASE("verdict precedence: fail over incomplete over pass") {
  const Entity n{"node", "n1"};
  const auto nt = make_finding(Code::NotTested, n, "x");
  const auto warn = make_finding(Code::GpuThrottle, {"gpu", "n1/gpu0"}, "x");
  const auto below = make_finding(Code::SpecBelow, n, "x");
  CHECK(analysis::verdict_of({}) == "pass");
  CHECK(analysis::verdict_of({nt}) == "incomplete");
  CHECK(analysis::verdict_of({nt, warn}) == "incomplete");
  CHECK(analysis::verdict_of({nt, below}) == "fail");
  CHECK(analysis::verdict_of({warn}) == "fail");  // as before: any finding fails a run with nothing untested
  CHECK(analysis::verdict_of({make_finding(Code::GpuCount, n, "x")}) == "fail");
}

TEST_CASE("exit codes: pass 0, fail and incomplete 1, error 2") {
  coord::Report r;
  for (auto [verdict, code] : {std::pair{"pass", 0}, std::pair{"fail", 1}, std::pair{"incomplete", 1},
                               std::pair{"error", 2}}) {
    r.verdict = verdict;
    CHECK(coord::exit_code(r) == code);
  }
}

TEST_CASE("build_report: untested GPU checks make the verdict incomplete and say what they were judged against") {
  coord::ReportInput in;
  in.run_id = "r";
  in.expected_ranks = 1;
  coord::RankSeen k;
  k.rank = 0;
  k.host = "n1";
  k.joined = true;
  k.info.host = "n1";
  in.ranks = {k};
  in.expect = expect();
  auto rr = round(1, "gpu.health", {{0}});
  rr.ends = {end("gpu.health", "n1", 0, Status::Skip, "no GPU visible")};
  const auto rep = coord::build_report(in, {rr});
  CHECK(rep.verdict == "incomplete");
  CHECK(coord::exit_code(rep) == 1);
  CHECK(with_code(rep.findings, Code::NotTested).size() == 4);  // health skipped; burn, all_reduce, pair_bw never ran
  CHECK(rep.expect_line == "judged against spec t.toml: class gpu (1 node)");
  const auto summary = coord::render_summary(rep, "results", "report");
  CHECK_THAT(summary, Catch::Contains("kiln run r: INCOMPLETE") && Catch::Contains("  judged against spec t.toml"));
  CHECK(nlohmann::json(rep)["expectations"]["classes"]["n1"] == "t.toml:gpu");
}

TEST_CASE("the line says which profile a node matched, or that nothing was judged") {
  Expectations e;
  e.mode = ExpectMode::Profiles;
  e.specs = coord::shipped_profiles();
  NodeSeen n = node("g1", {0});
  n.info.gpu_count = 8;
  n.info.gpu_models.assign(8, "NVIDIA H200");
  auto out = analysis::judge_expectations(e, {n}, {});
  CHECK(out.line == "judged against profile hgx-h200-8gpu (detected: 8 x NVIDIA H200)");
  CHECK(out.source == "profile");
  n.info.gpu_count = 0;
  n.info.gpu_models.clear();
  out = analysis::judge_expectations(e, {n}, {});
  CHECK(out.line ==
        "no spec and no matching profile: nothing was judged against expectations; figures were compared only with each other");
  CHECK(out.source == "none");
  CHECK(out.findings.empty());
  e.mode = ExpectMode::Off;
  e.label = "--spec none";
  CHECK_THAT(analysis::judge_expectations(e, {n}, {}).line, Catch::StartsWith("--spec none: nothing was judged"));
}

TEST_CASE("every profile in profiles/ is embedded and parses") {
  std::size_t files = 0;
  for (const auto& f : std::filesystem::directory_iterator(KILN_PROFILES_DIR)) files += f.path().extension() == ".toml";
  const auto profiles = coord::shipped_profiles();
  CHECK(profiles.size() == files);
  CHECK(files >= 2);
}

TEST_CASE("kiln run: --optional takes known checks only") {
  CHECK(coord::parse_optional("gpu.burn,gpu.copy_bw") == std::set<std::string>{"gpu.burn", "gpu.copy_bw"});
  CHECK_THROWS_WITH(coord::parse_optional("gpu.brun"), Catch::Contains("--optional: unknown check 'gpu.brun'"));
}

TEST_CASE("a live campaign keeps the results a figure reads") {
  const auto e = expect();
  CHECK(analysis::kept_for_expectations(e, result("gpu.burn", "n1", 0, "tflops", 1)));
  CHECK(analysis::kept_for_expectations(e, result("gpu.health", "n1", 0, "driver", 1)));
  CHECK_FALSE(analysis::kept_for_expectations(e, result("gpu.burn", "n1", 0, "temperature", 1)));
  CHECK_FALSE(analysis::kept_for_expectations(Expectations{}, result("gpu.burn", "n1", 0, "tflops", 1)));
}

TEST_CASE("a run directory's expectations come from campaign.json and its copy of the spec") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kiln-expect-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  coord::ExpectRequest req{"/somewhere/cluster.toml", kSpec, "gpu.burn", "gpu", "gpu.health,gpu.burn"};
  const nlohmann::json campaign = {{"expectations", coord::expectations_record(req)}};
  CHECK_THROWS_WITH(coord::recorded_expectations(dir, campaign), Catch::Contains("spec.toml"));
  { std::ofstream(dir / coord::kSpecFile) << kSpec; }
  const auto e = coord::recorded_expectations(dir, campaign);
  CHECK(e.mode == ExpectMode::Spec);
  CHECK(e.label == "/somewhere/cluster.toml");
  REQUIRE(e.specs.size() == 1);
  CHECK(e.specs[0].classes.at(0).name == "gpu");
  CHECK(e.optional == std::set<std::string>{"gpu.burn"});
  CHECK(e.partition == "gpu");
  CHECK(e.planned == std::vector<std::string>{"gpu.health", "gpu.burn"});

  req.spec = "";
  CHECK(coord::recorded_expectations(dir, {{"expectations", coord::expectations_record(req)}}).mode == ExpectMode::Profiles);
  req.spec = "none";
  CHECK(coord::recorded_expectations(dir, {{"expectations", coord::expectations_record(req)}}).mode == ExpectMode::Off);
  // A run from before: judged against nothing, as it was.
  const auto old = coord::recorded_expectations(dir, nlohmann::json::object());
  CHECK(old.mode == ExpectMode::Off);
  CHECK_THAT(old.label, Catch::Contains("before kiln judged against specs"));
  fs::remove_all(dir);
}

TEST_CASE("localization's reference is the inter figure every node's class gives at the size, for any group size") {
  const char* text = R"(
[[class]]
name = "a"
hosts = "n[1-2]"
[class.figures."mpi.alltoall".inter.busbw]
"4MiB" = { value = 40, tolerance = 0.10, source = "from-run 2026-11" }
"16MiB" = { value = 45, tolerance = 0.10, ranks = 2, source = "pairs" }
[[class]]
name = "b"
hosts = "n3"
[class.figures."mpi.alltoall".inter.busbw]
"4MiB" = { value = 30, tolerance = 0.10, source = "older nodes" }
[class.figures."mpi.alltoall".intra.busbw]
"1MiB" = { value = 100, tolerance = 0.10, source = "inside" }
)";
  const auto e = expect(text);
  auto ref = analysis::group_reference(e, nodes(), "mpi.alltoall", "busbw", MiB(4), spec::GroupScope::Inter);
  REQUIRE(ref);
  CHECK(ref->value == 30.0);  // the least demanding of the classes
  CHECK_THAT(ref->source, Catch::Contains("t.toml: class b, 30 GB/s (older nodes)"));
  ref = analysis::group_reference(e, {node("n1", {0}), node("n2", {1})}, "mpi.alltoall", "busbw", MiB(4), spec::GroupScope::Inter);
  REQUIRE(ref);
  CHECK(ref->value == 40.0);
  // Only a figure for any group size; not intra; not at another size; not for another metric.
  CHECK_FALSE(analysis::group_reference(e, {node("n1", {0})}, "mpi.alltoall", "busbw", MiB(16), spec::GroupScope::Inter));
  CHECK_FALSE(analysis::group_reference(e, {node("n3", {0})}, "mpi.alltoall", "busbw", MiB(1), spec::GroupScope::Inter));
  CHECK_FALSE(analysis::group_reference(e, nodes(), "mpi.alltoall", "busbw", MiB(2), spec::GroupScope::Inter));
  CHECK_FALSE(analysis::group_reference(e, nodes(), "mpi.alltoall", "algbw", MiB(4), spec::GroupScope::Inter));
  // Inside one node: the intra figure.
  ref = analysis::group_reference(e, {node("n3", {0})}, "mpi.alltoall", "busbw", MiB(1), spec::GroupScope::Intra);
  REQUIRE(ref);
  CHECK(ref->value == 100.0);
  CHECK(ref->scope == "intra");
  CHECK_FALSE(analysis::group_reference(e, {node("n3", {0})}, "mpi.alltoall", "busbw", MiB(1), spec::GroupScope::None));
  // A node of no class: no reference for the group.
  auto more = nodes();
  more.push_back(node("n9", {9}));
  CHECK_FALSE(analysis::group_reference(e, more, "mpi.alltoall", "busbw", MiB(4), spec::GroupScope::Inter));
  // No spec: none.
  Expectations off;
  CHECK_FALSE(analysis::group_reference(off, nodes(), "mpi.alltoall", "busbw", MiB(4), spec::GroupScope::Inter));
}
