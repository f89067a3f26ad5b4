// Judgement against a spec (coordinator/analysis/expect.cpp, and how report.cpp uses it): figures below and above their
// tolerance, lower-is-better metrics, intra- vs inter-node groups and message sizes; not.tested
// from a SKIP and from a check that never ran; the verdict's precedence and exit codes; the line
// that says what the figures were judged against.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/findings.hpp"
#include "coordinator/analysis/expect.hpp"
#include "coordinator/expectations.hpp"
#include "coordinator/report.hpp"

using namespace kiln;
using analysis::ExpectMode;
using analysis::Expectations;
using analysis::NodeSeen;
using analysis::RoundRecord;

namespace {

const char* kSpec = R"(
[[class]]
name = "gpu"
hosts = "n[1-3]"
[class.hardware]
gpu_model = "H200"
[class.figures."gpu.burn"]
tflops = { value = 600, tolerance = 0.10, source = "burn on n1" }
[class.figures."mpi.all_reduce".intra.busbw]
"1MiB" = { value = 10, tolerance = 0.10, source = "intra figure" }
[class.figures."mpi.all_reduce".inter.busbw]
"1MiB" = { value = 5, tolerance = 0.20, ranks = 2, source = "inter figure" }
[class.figures."net.pair_bw".inter]
latency = { value = 10, tolerance = 0.50, source = "latency figure" }
)";

Expectations expect(const std::string& text = kSpec) {
  auto parsed = spec::parse_spec(text, "t.toml");
  INFO((parsed.errors.empty() ? std::string() : parsed.errors.front()));
  REQUIRE(parsed.spec);
  Expectations e;
  e.mode = ExpectMode::Spec;
  e.label = "t.toml";
  e.specs.push_back(std::move(*parsed.spec));
  e.planned = {"gpu.health", "gpu.burn", "mpi.all_reduce", "net.pair_bw"};
  return e;
}

NodeSeen node(const std::string& host, std::vector<int> ranks) {
  NodeSeen n;
  n.host = host;
  n.ranks = std::move(ranks);
  n.info.host = host;
  return n;
}

// n1: ranks 0 and 1; n2: rank 2; n3: rank 3.
std::vector<NodeSeen> nodes() { return {node("n1", {0, 1}), node("n2", {2}), node("n3", {3})}; }

RoundRecord round(std::int64_t id, const std::string& test, std::vector<std::vector<int>> groups = {}) {
  RoundRecord rr;
  rr.round.id = id;
  rr.round.tests = {{test, nlohmann::json::object()}};
  rr.round.groups = std::move(groups);
  return rr;
}

Result result(const std::string& test, const std::string& host, int rank, const std::string& metric, double value,
              Entity ent = {}, std::optional<std::int64_t> size = std::nullopt, int group = -1) {
  Result r;
  r.test = test;
  r.host = host;
  r.rank = rank;
  r.metric = metric;
  r.value = value;
  r.entity = ent.kind.empty() ? Entity{"rank", std::to_string(rank)} : ent;
  r.size_bytes = size;
  r.group_id = group;
  return r;
}

CheckEnd end(const std::string& test, const std::string& host, int rank, Status s, const std::string& reason = "") {
  CheckEnd e;
  e.test = test;
  e.host = host;
  e.rank = rank;
  e.status = s;
  e.reason = reason;
  return e;
}

// The plan's ends for every rank, so that only the test's own subject is missing.
RoundRecord ran_everywhere(std::int64_t id, const std::string& test) {
  auto rr = round(id, test, {{0, 1, 2, 3}});
  for (auto [host, rank] : {std::pair{"n1", 0}, std::pair{"n1", 1}, std::pair{"n2", 2}, std::pair{"n3", 3}})
    rr.ends.push_back(end(test, host, rank, Status::Pass));
  return rr;
}

std::vector<RoundRecord> all_ran() {
  std::vector<RoundRecord> rs;
  std::int64_t id = 1;
  for (const char* t : {"gpu.health", "gpu.burn", "mpi.all_reduce", "net.pair_bw"}) rs.push_back(ran_everywhere(id++, t));
  return rs;
}

std::vector<Finding> with_code(const std::vector<Finding>& fs, Code c) {
  std::vector<Finding> out;
  for (const auto& f : fs)
    if (f.code == c) out.push_back(f);
  return out;
}

std::int64_t MiB(int n) { return static_cast<std::int64_t>(n) << 20; }

}  // namespace

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

TEST_CASE("GPU count, model and software versions against the class") {
  const auto e = expect(R"(
[[class]]
name = "gpu"
hosts = "n1"
optional = ["gpu.health", "host.inventory"]
[class.hardware]
gpu_model = "H200"
gpus_per_node = 8
[class.software]
mpi = { min = "4.1" }
nccl = "2.21"
)");
  NodeSeen n = node("n1", {0});
  n.info.gpu_count = 2;
  n.info.gpu_models = {"NVIDIA H200", "NVIDIA H100 80GB HBM3"};
  n.info.mpi_version = "Open MPI v4.0.3, package: Debian";
  n.info.nccl_version = "2.21.5";
  const auto out = analysis::judge_expectations(e, {n}, {});
  const auto count = with_code(out.findings, Code::GpuCount);
  REQUIRE(count.size() == 1);
  CHECK_THAT(count[0].summary, Catch::Contains("n1 has 2 GPU(s) usable through CUDA, class gpu expects 8"));
  const auto model = with_code(out.findings, Code::GpuModel);
  REQUIRE(model.size() == 1);
  CHECK(model[0].entity == Entity{"gpu", "n1/gpu1"});
  const auto sw = with_code(out.findings, Code::SoftwareVersion);
  REQUIRE(sw.size() == 1);
  CHECK(sw[0].summary == "n1 runs mpi 4.0.3, class gpu expects >= 4.1");
  CHECK(with_code(out.findings, Code::NotTested).empty());

  n.info.mpi_version.clear();  // unknown: not shown to be right
  const auto nt = with_code(analysis::judge_expectations(e, {n}, {}).findings, Code::NotTested);
  REQUIRE(nt.size() == 1);
  CHECK(nt[0].evidence[0]["requirement"] == "mpi");
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

TEST_CASE("each GPU's memory and PCIe link (gpu.health) against the class") {
  const auto e = expect(R"(
[[class]]
name = "gpu"
hosts = "n1"
optional = ["gpu.health"]
[class.hardware]
gpu_memory_gib = 140
pcie_gen = 5
pcie_width = 16
)");
  // As NVML reports them on the H200 machine: 150754820096 bytes (140.4 GiB), Gen5 x16 at most
  // (Gen1 now, at idle).
  const auto health = [](int gpu, double bytes, int gen_max, int width_max) {
    Result r = result("gpu.health", "n1", 0, "health", 0, {"gpu", "n1/gpu" + std::to_string(gpu)});
    r.extra = {{"memory_total_bytes", bytes},
               {"pcie_gen", {{"current", 1}, {"max", gen_max}}},
               {"pcie_width", {{"current", 16}, {"max", width_max}}}};
    return r;
  };
  auto rr = round(1, "gpu.health");
  rr.results = {health(0, 150754820096.0, 5, 16), health(1, 85899345920.0, 5, 16), health(2, 150754820096.0, 4, 8)};
  const auto found = analysis::judge_expectations(e, {node("n1", {0})}, {rr}).findings;
  const auto model = with_code(found, Code::GpuModel);
  REQUIRE(model.size() == 1);
  CHECK(model[0].summary == "n1/gpu1 has 80.0 GiB of memory, class gpu expects 140.0 GiB");
  const auto pcie = with_code(found, Code::GpuPcieDegraded);
  REQUIRE(pcie.size() == 1);
  CHECK(pcie[0].entity == Entity{"gpu", "n1/gpu2"});
  CHECK(pcie[0].summary == "n1/gpu2's PCIe link can reach Gen4 x8 at most, class gpu expects Gen5 x16");
  CHECK(analysis::kept_for_expectations(e, health(0, 1, 5, 16)));
}

namespace {

// n1's ib.ports reading of one port, as the check reports it.
Result hca_port(const std::string& port, const std::string& state, double rate, const std::string& phase = "snapshot") {
  Result r = result("ib.ports", "n1", 0, "rate", rate, {"hca", "n1/" + port});
  r.unit = "Gb/s";
  r.extra = {{"phase", phase}, {"state", state}, {"link_layer", "InfiniBand"}};
  if (state != "ACTIVE") r.status = Status::Fail;
  return r;
}

RoundRecord ib_round(std::int64_t id, std::vector<Result> results, Status s = Status::Pass, const std::string& why = "") {
  auto rr = round(id, "ib.ports", {{0}});
  rr.ends = {end("ib.ports", "n1", 0, s, why)};
  rr.results = std::move(results);
  return rr;
}

Expectations hca_spec(const std::string& optional = "") {
  auto e = expect(R"(
[[class]]
name = "gpu"
hosts = "n1"
)" + optional + R"(
[class.hardware]
hcas_per_node = 4
hca_rate_gbps = 400
)");
  e.planned = {"ib.ports"};
  return e;
}

}  // namespace

TEST_CASE("HCAs against hcas_per_node and hca_rate_gbps: fewer active is hca.count, a slower port hca.rate") {
  const auto e = hca_spec();
  REQUIRE(e.specs[0].classes[0].required == std::vector<std::string>{"ib.ports"});
  // The fixture's node (tests/data/ib/before): mlx5_2 DOWN, mlx5_1 at 200 Gb/s, mlx5_3 RoCE at 100.
  auto found = analysis::judge_expectations(
                   e, {node("n1", {0})},
                   {ib_round(1, {hca_port("mlx5_0:1", "ACTIVE", 400), hca_port("mlx5_1:1", "ACTIVE", 200),
                                 hca_port("mlx5_2:1", "DOWN", 400), hca_port("mlx5_3:1", "ACTIVE", 100)},
                             Status::Fail)})
                   .findings;
  const auto count = with_code(found, Code::HcaCount);
  REQUIRE(count.size() == 1);
  CHECK(count[0].entity == Entity{"node", "n1"});
  CHECK(count[0].severity == Severity::Error);
  CHECK(count[0].summary == "n1 has 3 HCA(s) with an ACTIVE port (ib.ports), not active: mlx5_2:1 DOWN, class gpu expects 4");
  CHECK(count[0].evidence[0]["hca_count"] == 3);
  CHECK(count[0].evidence[0]["expected"] == 4);
  CHECK(count[0].evidence[0]["active"] == nlohmann::json({"mlx5_0", "mlx5_1", "mlx5_3"}));
  const auto rate = with_code(found, Code::HcaRate);
  REQUIRE(rate.size() == 2);
  CHECK(rate[0].entity == Entity{"hca", "n1/mlx5_1:1"});
  CHECK(rate[0].summary == "n1/mlx5_1:1 runs at 200 Gb/s, class gpu expects 400 Gb/s");
  CHECK(rate[0].evidence[0]["rate_gbps"] == 200.0);
  CHECK(rate[0].evidence[0]["expected"] == 400.0);
  CHECK(rate[1].entity == Entity{"hca", "n1/mlx5_3:1"});
  CHECK(with_code(found, Code::NotTested).empty());

  // Four HCAs at 400 Gb/s (two ports on one of them: still one HCA; a fifth one faster): silent.
  found = analysis::judge_expectations(
              e, {node("n1", {0})},
              {ib_round(1, {hca_port("mlx5_0:1", "ACTIVE", 400), hca_port("mlx5_1:1", "ACTIVE", 400),
                            hca_port("mlx5_2:1", "ACTIVE", 400), hca_port("mlx5_2:2", "ACTIVE", 800),
                            hca_port("mlx5_3:1", "ACTIVE", 400)})})
              .findings;
  CHECK(found.empty());

  // Before and after: a port that went down in between counts as not active.
  found = analysis::judge_expectations(
              e, {node("n1", {0})},
              {ib_round(1, {hca_port("mlx5_0:1", "ACTIVE", 400, "before"), hca_port("mlx5_1:1", "ACTIVE", 400, "before"),
                            hca_port("mlx5_2:1", "ACTIVE", 400, "before"), hca_port("mlx5_3:1", "ACTIVE", 400, "before")}),
               ib_round(2, {hca_port("mlx5_0:1", "ACTIVE", 400, "after"), hca_port("mlx5_1:1", "ACTIVE", 400, "after"),
                            hca_port("mlx5_2:1", "DOWN", 400, "after"), hca_port("mlx5_3:1", "ACTIVE", 400, "after")},
                        Status::Fail)})
              .findings;
  REQUIRE(with_code(found, Code::HcaCount).size() == 1);
  CHECK(with_code(found, Code::HcaCount)[0].evidence[0]["inactive_ports"] == nlohmann::json({"mlx5_2:1 DOWN"}));
  CHECK(with_code(found, Code::HcaRate).empty());
  CHECK(analysis::kept_for_expectations(e, hca_port("mlx5_0:1", "ACTIVE", 400)));
}

TEST_CASE("HCAs not read (ib.ports skipped or not run) are not.tested with the reason, unless ib.ports is optional") {
  auto found = analysis::judge_expectations(
                   hca_spec(), {node("n1", {0})},
                   {ib_round(1, {}, Status::Skip, "no RDMA device: nothing under /sys/class/infiniband")})
                   .findings;
  REQUIRE(found.size() == 1);
  CHECK(found[0].code == Code::NotTested);
  CHECK(found[0].evidence[0]["check"] == "ib.ports");
  CHECK(found[0].evidence[0]["reason"] == "skipped: no RDMA device: nothing under /sys/class/infiniband");

  found = analysis::judge_expectations(hca_spec(), {node("n1", {0})}, {}).findings;
  REQUIRE(found.size() == 1);
  CHECK(found[0].code == Code::NotTested);
  CHECK_THAT(found[0].summary, Catch::Contains("ib.ports was not tested on n1"));

  CHECK(analysis::judge_expectations(hca_spec("optional = [\"ib.ports\"]"), {node("n1", {0})},
                                     {ib_round(1, {}, Status::Skip, "no RDMA device")})
            .findings.empty());
  auto e = hca_spec();
  e.optional = {"ib.ports"};
  CHECK(analysis::judge_expectations(e, {node("n1", {0})}, {}).findings.empty());

  // A class without HCAs (hcas_per_node = 0) does not need ib.ports at all.
  const auto none = expect("[[class]]\nname = \"cpu\"\nhosts = \"n1\"\n[class.hardware]\nhcas_per_node = 0\n");
  CHECK(none.specs[0].classes[0].required.empty());
}

TEST_CASE("NVLink links against nvlinks_per_gpu: fewer is gpu.nvlink_down, unread is not.tested") {
  const std::string text = R"(
[[class]]
name = "gpu"
hosts = "n1"
[class.hardware]
nvlinks_per_gpu = 18
)";
  auto e = expect(text);
  e.planned = {"gpu.health"};
  const auto health = [](int gpu, std::optional<int> links) {
    Result r = result("gpu.health", "n1", 0, "health", 0, {"gpu", "n1/gpu" + std::to_string(gpu)});
    if (links) {
      r.extra = {{"nvlinks_active", *links}, {"nvlinks_inactive", nlohmann::json::array()}};
      for (int l = *links; l < 18; ++l) r.extra["nvlinks_inactive"].push_back(l);
    } else {
      r.extra = {{"nvlink_error", "NVML: Function Not Found"}};
    }
    return r;
  };
  auto rr = round(1, "gpu.health", {{0}});
  rr.ends = {end("gpu.health", "n1", 0, Status::Pass)};
  rr.results = {health(0, 18), health(1, 16), health(2, std::nullopt)};
  auto found = analysis::judge_expectations(e, {node("n1", {0})}, {rr}).findings;
  const auto down = with_code(found, Code::GpuNvlinkDown);
  REQUIRE(down.size() == 1);
  CHECK(down[0].entity == Entity{"gpu", "n1/gpu1"});
  CHECK(down[0].severity == Severity::Error);
  CHECK(down[0].summary == "n1/gpu1 has 16 active NVLink link(s), class gpu expects 18");
  CHECK(down[0].evidence[0]["nvlinks_active"] == 16);
  CHECK(down[0].evidence[0]["expected"] == 18);
  CHECK(down[0].evidence[0]["inactive_links"] == nlohmann::json({16, 17}));
  const auto nt = with_code(found, Code::NotTested);
  REQUIRE(nt.size() == 1);
  CHECK(nt[0].evidence[0]["requirement"] == "nvlinks_per_gpu");
  CHECK_THAT(nt[0].summary, Catch::Contains("gpu.health reported no NVLink state for n1/gpu2 (NVML: Function Not Found)"));
  CHECK(found.size() == 2);

  rr.results = {health(0, 18), health(1, 18)};
  CHECK(analysis::judge_expectations(e, {node("n1", {0})}, {rr}).findings.empty());

  // gpu.health optional: the unread links are not a finding; the ones read still are.
  e.optional = {"gpu.health"};
  rr.results = {health(1, 16), health(2, std::nullopt)};
  found = analysis::judge_expectations(e, {node("n1", {0})}, {rr}).findings;
  REQUIRE(found.size() == 1);
  CHECK(found[0].code == Code::GpuNvlinkDown);
}

TEST_CASE("rdma_core against host.inventory's rdma-core version") {
  auto e = expect(R"(
[[class]]
name = "gpu"
hosts = "n1"
[class.software]
rdma_core = { min = "44.0" }
)");
  e.planned = {"host.inventory"};
  const auto run = [&](nlohmann::json version) {
    auto rr = round(1, "host.inventory", {{0}});
    rr.ends = {end("host.inventory", "n1", 0, Status::Pass)};
    Result r = result("host.inventory", "n1", 0, "inventory", 1, {"node", "n1"});
    r.extra = {{"kernel", "6.1.0-18-amd64"}, {"rdma_core", version}};
    rr.results = {r};
    CHECK(analysis::kept_for_expectations(e, r));
    return analysis::judge_expectations(e, {node("n1", {0})}, {rr}).findings;
  };
  auto found = run("43.0");
  REQUIRE(found.size() == 1);
  CHECK(found[0].code == Code::SoftwareVersion);
  CHECK(found[0].summary == "n1 runs rdma_core 43.0, class gpu expects >= 44.0");
  CHECK(found[0].evidence[0]["software"] == "rdma_core");
  CHECK(run("44.0").empty());
  CHECK(run("50.0").empty());
  found = run(nullptr);  // the node has no rdma-core
  REQUIRE(found.size() == 1);
  CHECK(found[0].code == Code::NotTested);
  CHECK(found[0].evidence[0]["requirement"] == "rdma_core");
  CHECK(found[0].evidence[0]["check"] == "host.inventory");
}
