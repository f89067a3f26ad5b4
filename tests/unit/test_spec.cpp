#include <catch2/catch.hpp>

#include "common/checks.hpp"
#include "common/spec.hpp"

#include <filesystem>

using namespace kiln;
using namespace kiln::spec;

namespace {

ParseResult parse(const std::string& text) { return parse_spec(text, "t.toml"); }

// The text has exactly one problem, at line:col, and its message contains `says`.
void one_error(const std::string& text, int line, int col, const std::string& says) {
  const auto r = parse(text);
  INFO(text);
  REQUIRE(r.errors.size() == 1);
  const std::string& e = r.errors[0];
  INFO(e);
  const std::string where = "t.toml:" + std::to_string(line) + ":" + std::to_string(col) + ": ";
  CHECK(e.rfind(where, 0) == 0);
  CHECK(e.find(says) != std::string::npos);
  CHECK(e.find('\n') == std::string::npos);
  CHECK_FALSE(r.spec);
}

// A class header the bad-spec cases below start with (three lines).
const std::string kHead = "[[class]]\nname = \"a\"\npartition = \"p\"\n";

const char* kGood = R"([[class]]
name = "gpu"
partition = "gpu"
optional = ["rdma.send_lat", "gpu.copy_bw"]

[class.hardware]
gpu_model = "H200"
gpus_per_node = 8
gpu_memory_gib = 140
pcie_gen = 5
pcie_width = 16
hcas_per_node = 8
hca_rate_gbps = 400

[class.software]
driver = { min = "550.54" }
cuda = "13.0"
kernel = { min = "6.1" }

[class.figures."gpu.burn"]
tflops = { value = 680, tolerance = 0.10, source = "measured here" }

[class.figures."gpu.copy_bw"]
h2d = { value = 54, tolerance = 0.15, source = "measured here" }

[class.figures."nccl.all_reduce".intra.busbw]
"1GiB" = { value = 326.8, tolerance = 0.1, ranks = 2, source = "measured on 2 GPUs" }
"256MiB" = { value = 299.2, tolerance = 0.1, source = "measured on 2 GPUs" }

[class.figures."rdma.send_lat".inter]
lat = { value = 3.5, tolerance = 0.2, source = "vendor" }

[[class]]
name = "login"
hosts = "login[1-2]"
)";

}  // namespace

TEST_CASE("a good spec parses to its classes, fields and figures", "[spec]") {
  const auto r = parse(std::string("title = \"test cluster\"\n") + kGood);
  REQUIRE(r.errors.empty());
  REQUIRE(r.spec);
  const Spec& s = *r.spec;
  CHECK(s.title == "test cluster");
  CHECK(s.path == "t.toml");
  REQUIRE(s.classes.size() == 2);
  CHECK(s.figure_count() == 5);

  const NodeClass& gpu = s.classes[0];
  CHECK(gpu.name == "gpu");
  CHECK(gpu.partition == "gpu");
  CHECK(gpu.hardware.gpu_model == "H200");
  CHECK(gpu.hardware.gpus_per_node == 8);
  CHECK(gpu.hardware.gpu_memory_gib == 140.0);
  CHECK(gpu.hardware.pcie_gen == 5);
  CHECK(gpu.hardware.pcie_width == 16);
  CHECK(gpu.hardware.hcas_per_node == 8);
  CHECK(gpu.hardware.hca_rate_gbps == 400.0);
  CHECK_FALSE(gpu.hardware.nvlinks_per_gpu);
  REQUIRE(gpu.software.driver);
  CHECK(gpu.software.driver->minimum);
  CHECK(gpu.software.driver->version == "550.54");
  REQUIRE(gpu.software.cuda);
  CHECK_FALSE(gpu.software.cuda->minimum);
  CHECK(gpu.software.cuda->version == "13.0");
  CHECK_FALSE(gpu.software.nccl);

  const Figure* burn = gpu.figure("gpu.burn", "tflops");
  REQUIRE(burn);
  CHECK(burn->value == 680.0);
  CHECK(burn->tolerance == Approx(0.10));
  CHECK(burn->source == "measured here");
  CHECK(burn->unit == "TFLOP/s");
  CHECK(burn->limit() == Approx(612.0));
  CHECK(burn->acceptable(612.5));
  CHECK_FALSE(burn->acceptable(611.0));

  const Figure* gib = gpu.figure("nccl.all_reduce", "busbw", GroupScope::Intra, std::int64_t{1} << 30);
  REQUIRE(gib);
  CHECK(gib->value == Approx(326.8));
  CHECK(gib->ranks == 2);
  CHECK(gib->unit == "GB/s");
  const Figure* mib = gpu.figure("nccl.all_reduce", "busbw", GroupScope::Intra, std::int64_t{256} << 20);
  REQUIRE(mib);
  CHECK_FALSE(mib->ranks);
  CHECK_FALSE(gpu.figure("nccl.all_reduce", "busbw", GroupScope::Inter, std::int64_t{1} << 30));

  const Figure* lat = gpu.figure("rdma.send_lat", "lat", GroupScope::Inter);
  REQUIRE(lat);
  CHECK_FALSE(lat->higher_is_better);
  CHECK(lat->limit() == Approx(4.2));
  CHECK(lat->acceptable(4.0));
  CHECK_FALSE(lat->acceptable(4.3));

  // Figures and fields make checks required, in catalog order; the optional ones are not.
  CHECK(gpu.required ==
        std::vector<std::string>{"host.inventory", "ib.ports", "gpu.health", "gpu.burn", "nccl.all_reduce"});
  CHECK(gpu.optional == std::vector<std::string>{"rdma.send_lat", "gpu.copy_bw"});
  CHECK_FALSE(gpu.is_required("gpu.copy_bw"));
  CHECK(gpu.is_required("gpu.burn"));

  const NodeClass& login = s.classes[1];
  CHECK(login.hosts_text == "login[1-2]");
  CHECK(login.hosts == std::vector<std::string>{"login1", "login2"});
  CHECK(login.required.empty());
}

TEST_CASE("a node's class: its hostlist first, then its partition", "[spec]") {
  const auto r = parse(kGood);
  REQUIRE(r.spec);
  const Spec& s = *r.spec;
  CHECK(s.class_for("login2", "") == &s.classes[1]);
  CHECK(s.class_for("login1", "gpu") == &s.classes[1]);
  CHECK(s.class_for("gpu017", "gpu") == &s.classes[0]);
  CHECK(s.class_for("gpu017", "cpu") == nullptr);
  CHECK(s.class_for("gpu017", "") == nullptr);
}

TEST_CASE("spec errors: unknown keys at every level", "[spec]") {
  one_error("titel = \"x\"\n" + kHead, 1, 1, "unknown key \"titel\" in the spec (known: title, class)");
  one_error(kHead + "nme = \"b\"\n", 4, 1, "unknown key \"nme\" in [[class]]");
  one_error(kHead + "[class.hardware]\ngpu_modle = \"H200\"\n", 5, 1, "unknown key \"gpu_modle\" in [class.hardware]");
  one_error(kHead + "[class.software]\ncuda = { mn = \"12\" }\n", 5, 10, "unknown key \"mn\" in software.cuda");
  one_error(kHead + "[class.figures.\"gpu.burn\"]\ntflops = { value = 1, tolerance = 0.1, source = \"s\", tol = 2 }\n",
            5, 54, "unknown key \"tol\" in the figure gpu.burn.tflops");
  one_error(kHead + "[class.figures.\"nccl.all_reduce\".intre.busbw]\n", 4, 34,
            "unknown key \"intre\" in the group check \"nccl.all_reduce\" (known: intra, inter)");
}

TEST_CASE("spec errors: wrong types", "[spec]") {
  one_error(kHead + "[class.hardware]\ngpus_per_node = \"8\"\n", 5, 17, "gpus_per_node must be an integer, not a string");
  one_error(kHead + "[class.hardware]\ngpus_per_node = 8.0\n", 5, 17, "gpus_per_node must be an integer, not a float");
  one_error(kHead + "[class.hardware]\ngpu_memory_gib = \"80\"\n", 5, 18, "gpu_memory_gib must be a number, not a string");
  one_error(kHead + "[class.software]\ndriver = 550\n", 5, 10, "driver must be a version string or { min = \"...\" }");
  one_error(kHead + "optional = \"gpu.burn\"\n", 4, 12, "optional must be an array of check keys, not a string");
  one_error("class = 1\n", 1, 9, "class must be an array of tables");
  one_error(kHead + "hardware = 3\n", 4, 12, "hardware must be a table, not an integer");
}

TEST_CASE("spec errors: impossible tolerances, values and counts", "[spec]") {
  const std::string burn = kHead + "[class.figures.\"gpu.burn\"]\n";
  for (const char* tol : {"1.5", "1", "1.0", "0", "-0.1"}) {
    INFO(tol);
    one_error(burn + "tflops = { value = 600, tolerance = " + tol + ", source = \"s\" }\n", 5, 37,
              "tolerance must be a fraction between 0 and 1, exclusive");
  }
  one_error(burn + "tflops = { value = -600, tolerance = 0.1, source = \"s\" }\n", 5, 20,
            "value must be a finite number above 0 (got -600)");
  one_error(burn + "tflops = { value = nan, tolerance = 0.1, source = \"s\" }\n", 5, 20, "value must be a finite number");
  one_error(kHead + "[class.hardware]\nhcas_per_node = -1\n", 5, 17, "hcas_per_node must not be negative (got -1)");
  one_error(kHead + "[class.hardware]\npcie_gen = 9\n", 5, 12, "pcie_gen must be between 1 and 7 (got 9)");
  one_error(kHead + "[class.hardware]\nnvlinks_per_gpu = 19\n", 5, 19,
            "nvlinks_per_gpu must be between 0 and 18 (got 19)");
  one_error(kHead + "[class.hardware]\npcie_width = 12\n", 5, 14, "pcie_width must be 1, 2, 4, 8, 16 or 32 lanes");
  one_error(kHead + "[class.figures.\"nccl.all_reduce\".inter.busbw]\n\"1GiB\" = { value = 40, tolerance = 0.1, "
                    "source = \"s\", ranks = 1 }\n",
            5, 63, "ranks must be between 2 and");
}

TEST_CASE("spec errors: unknown checks and metrics, misplaced figures", "[spec]") {
  one_error(kHead + "[class.figures.\"gpu.burnn\"]\ntflops = { value = 1, tolerance = 0.1, source = \"s\" }\n", 4, 16,
            "unknown check \"gpu.burnn\" in figures");
  one_error(kHead + "[class.figures.\"gpu.burn\"]\ntflop = { value = 1, tolerance = 0.1, source = \"s\" }\n", 5, 1,
            "unknown metric \"tflop\" for gpu.burn (known: tflops)");
  one_error(kHead + "[class.figures.\"gpu.copy_bw\"]\nh2h = { value = 1, tolerance = 0.1, source = \"s\" }\n", 5, 1,
            "(known: peer_bw, h2d, d2h, d2d)");
  one_error(kHead + "[class.figures.\"host.inventory\"]\n", 4, 16, "check \"host.inventory\" has no figures");
  one_error(kHead + "[class.figures.\"nccl.all_reduce\".intra]\nbusbw = { value = 1, tolerance = 0.1, source = \"s\" }\n",
            5, 9, "nccl.all_reduce.busbw is per message size: key its figures by size");
  one_error(kHead + "[class.figures.\"nccl.all_reduce\".intra.busbw]\n\"1 GiB\" = { value = 1, tolerance = 0.1, source = "
                    "\"s\" }\n",
            5, 1, "bad message size \"1 GiB\"");
  one_error(kHead + "[class.figures.\"nccl.all_reduce\".intra.busbw]\n\"1GiB\" = { value = 1, tolerance = 0.1, source = "
                    "\"s\" }\n\"1024MiB\" = { value = 1, tolerance = 0.1, source = \"s\" }\n",
            6, 1, "size \"1024MiB\" is given twice (as \"1GiB\")");
  one_error(kHead + "[class.figures.\"gpu.burn\"]\ntflops = { value = 1, tolerance = 0.1, source = \"s\", ranks = 2 }\n",
            5, 54, "unknown key \"ranks\"");
  one_error(kHead + "optional = [\"gpu.burn\", \"gpu.frob\"]\n", 4, 25, "optional: unknown check \"gpu.frob\"");
  one_error(kHead + "optional = [\"gpu.burn\", \"gpu.burn\"]\n", 4, 25, "\"gpu.burn\" is listed twice");
}

TEST_CASE("spec errors: sources, selectors, names, versions", "[spec]") {
  const std::string burn = kHead + "[class.figures.\"gpu.burn\"]\n";
  one_error(burn + "tflops = { value = 1, tolerance = 0.1, source = \"\" }\n", 5, 49, "source must not be empty");
  one_error(burn + "tflops = { value = 1, tolerance = 0.1, source = \"  \" }\n", 5, 49,
            "source must say where the figure came from");
  one_error(burn + "tflops = { value = 1, tolerance = 0.1 }\n", 5, 10, "gpu.burn.tflops has no source");
  one_error("[[class]]\nname = \"a\"\n", 1, 1, "class \"a\" has no selector: give partition, hosts or match_hardware");
  one_error("[[class]]\nname = \"a\"\npartition = \"p\"\nhosts = \"n1\"\n", 1, 1, "has more than one selector");
  one_error("[[class]]\nname = \"a\"\nmatch_hardware = true\n", 1, 1,
            "selects by hardware but has no hardware.gpu_model or hardware.gpus_per_node");
  one_error("[[class]]\npartition = \"p\"\n", 1, 1, "a class has no name");
  one_error("[[class]]\nname = \"a\"\nhosts = \"n[5-1]\"\n", 3, 9, "hosts: ");
  one_error(kHead + "\n[[class]]\nname = \"a\"\nhosts = \"n1\"\n", 6, 8,
            "class \"a\" is defined twice (first at line 2)");
  one_error(kHead + "[class.software]\nnccl = \"v2.18\"\n", 5, 8, "nccl: bad version \"v2.18\"");
  one_error(kHead + "[class.software]\nkernel = { min = \"6..1\" }\n", 5, 18, "kernel: bad version \"6..1\"");
  one_error("", 1, 1, "the spec has no node class");
}

TEST_CASE("TOML syntax errors map to FILE:LINE:COL", "[spec]") {
  const auto r = parse(kHead + "[class.hardware]\ngpu_model = \"H200\ngpus_per_node = 8\n");
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].rfind("t.toml:5:", 0) == 0);
  CHECK(r.errors[0].find("string") != std::string::npos);
  const auto dup = parse(kHead + "partition = \"q\"\n");
  REQUIRE(dup.errors.size() == 1);
  CHECK(dup.errors[0].rfind("t.toml:4:13: ", 0) == 0);
  CHECK(dup.errors[0].find("cannot redefine existing string 'partition'") != std::string::npos);
}

TEST_CASE("every problem is reported, one line each, in file order", "[spec]") {
  const auto r = parse(R"([[class]]
name = "a"
[class.hardware]
gpus_per_node = -8
pcie_gen = "5"
[class.figures."gpu.burn"]
tflops = { value = 600, tolerance = 2, source = "" }
[[class]]
name = "a"
partition = "p"
)");
  const std::vector<std::string> want{
      "t.toml:1:1: class \"a\" has no selector: give partition, hosts or match_hardware = true",
      "t.toml:4:17: gpus_per_node must not be negative (got -8)",
      "t.toml:5:12: pcie_gen must be an integer, not a string",
      "t.toml:7:37: tolerance must be a fraction between 0 and 1, exclusive, such as 0.10 (got 2)",
      "t.toml:7:49: source must not be empty",
      "t.toml:9:8: class \"a\" is defined twice (first at line 2)",
  };
  CHECK(r.errors == want);
  CHECK_FALSE(r.spec);
}

TEST_CASE("an unreadable spec file is one line naming it", "[spec]") {
  const auto r = load_spec("/nonexistent/kiln.toml");
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].rfind("/nonexistent/kiln.toml: cannot read", 0) == 0);
}

TEST_CASE("versions compare dot-wise and numerically", "[spec]") {
  CHECK(compare_versions("550.54.15", "550.54") > 0);
  CHECK(compare_versions("550.9", "550.10") < 0);
  CHECK(compare_versions("13.0", "13.0.0") == 0);
  CHECK(compare_versions("2.28.3", "2.28.03") == 0);
  CHECK(compare_versions("6.1.0-28-amd64", "6.1.0-28") > 0);
  CHECK(compare_versions("6.1.0-28-amd64", "6.1.0-29-amd64") < 0);
  CHECK(compare_versions("12.10", "12.9") > 0);
  CHECK(compare_versions("99999999999999999999.1", "99999999999999999998.9") > 0);

  const VersionReq min{"550.54", true};
  CHECK(min.satisfied_by("550.54"));
  CHECK(min.satisfied_by("550.54.15"));
  CHECK(min.satisfied_by("580.159.04"));
  CHECK_FALSE(min.satisfied_by("550.40.07"));
  CHECK_FALSE(min.satisfied_by("535.183"));
  CHECK_FALSE(min.satisfied_by(""));
  CHECK_FALSE(min.satisfied_by("unknown"));

  const VersionReq exact{"13.0", false};
  CHECK(exact.satisfied_by("13.0"));
  CHECK(exact.satisfied_by("13.0.88"));
  CHECK_FALSE(exact.satisfied_by("13.1"));
  CHECK_FALSE(exact.satisfied_by("13"));
  CHECK_FALSE(exact.satisfied_by("14.0"));
  CHECK(VersionReq{"580.159.04", false}.satisfied_by("580.159.4"));
  CHECK_FALSE(VersionReq{"580.159.04", false}.satisfied_by("580.159.05"));

  CHECK(valid_version("6.1.0-28-amd64"));
  CHECK_FALSE(valid_version("v2.18"));
  CHECK_FALSE(valid_version("2..18"));
  CHECK_FALSE(valid_version("2.18."));
  CHECK_FALSE(valid_version("2.18 beta"));
}

TEST_CASE("every check with a figure of merit may be given it in a spec", "[spec]") {
  for (const auto& cs : check_catalog()) {
    INFO(cs.key);
    const auto metrics = spec_metrics(cs.key);
    if (!cs.figure) {
      CHECK(metrics.empty());
      continue;
    }
    REQUIRE_FALSE(metrics.empty());
    CHECK(metrics[0].metric == cs.figure->metric);
    CHECK(metrics[0].unit == cs.figure->unit);
  }
  CHECK(spec_metrics("gpu.frob").empty());
}

namespace {

Spec load_profile(const std::string& name) {
  const auto r = load_spec(std::string(KILN_PROFILES_DIR) + "/" + name);
  INFO(name);
  for (const auto& e : r.errors) INFO(e);
  CHECK(r.errors.empty());
  REQUIRE(r.spec);
  return *r.spec;
}

NodeInfo node_with(int n, const std::string& model, int hcas = 8) {
  NodeInfo node;
  node.gpu_count = n;
  node.gpu_models.assign(static_cast<std::size_t>(n), model);
  node.ib_device_count = hcas;
  return node;
}

Spec hardware_class(const std::string& model, int gpus, std::optional<int> hcas) {
  NodeClass c;
  c.name = model;
  c.match_hardware = true;
  c.hardware.gpu_model = model;
  c.hardware.gpus_per_node = gpus;
  c.hardware.hcas_per_node = hcas;
  Spec s;
  s.classes.push_back(c);
  return s;
}

}  // namespace

TEST_CASE("the shipped profiles are valid specs", "[spec]") {
  const std::vector<std::string> files{"hgx-h100-8gpu.toml", "hgx-h200-8gpu.toml"};
  for (const auto& entry : std::filesystem::directory_iterator(KILN_PROFILES_DIR)) {
    INFO(entry.path());
    CHECK(std::find(files.begin(), files.end(), entry.path().filename().string()) != files.end());
  }
  const Spec h200 = load_profile("hgx-h200-8gpu.toml");
  REQUIRE(h200.classes.size() == 1);
  const NodeClass& c = h200.classes[0];
  CHECK(c.match_hardware);
  CHECK(c.hardware.gpu_model == "H200");
  CHECK(c.hardware.gpus_per_node == 8);
  CHECK(c.hardware.nvlinks_per_gpu == 18);
  const Figure* gib = c.figure("nccl.all_reduce", "busbw", GroupScope::Intra, std::int64_t{1} << 30);
  REQUIRE(gib);
  CHECK(gib->value == Approx(326.8));
  CHECK(gib->ranks == 2);
  CHECK(gib->source.find("tests/data/runs/h200-default") != std::string::npos);
  for (const auto& f : c.figures) {
    INFO(f.check + "." + f.metric);
    CHECK(f.source.find("measured on 2xH200") == 0);
  }
  const Spec h100 = load_profile("hgx-h100-8gpu.toml");
  REQUIRE(h100.classes.size() == 1);
  for (const auto& f : h100.classes[0].figures) {
    INFO(f.check + "." + f.metric);
    CHECK(f.source.find("estimate, not measured") == 0);
  }
  CHECK(h100.classes[0].required == std::vector<std::string>{"ib.ports", "gpu.health", "gpu.burn", "gpu.memtest",
                                                               "gpu.copy_bw"});
}

TEST_CASE("the profile matcher picks the profile of the node's GPUs", "[spec]") {
  const std::vector<Spec> shipped{load_profile("hgx-h100-8gpu.toml"), load_profile("hgx-h200-8gpu.toml")};
  CHECK(match_profile(shipped, node_with(8, "NVIDIA H200")) == &shipped[1]);
  CHECK(match_profile(shipped, node_with(8, "NVIDIA H100 80GB HBM3")) == &shipped[0]);
  CHECK(match_profile(shipped, node_with(8, "nvidia h200")) == &shipped[1]);
  CHECK(match_profile(shipped, node_with(8, "NVIDIA H200", 0)) == &shipped[1]);
  CHECK(match_profile(shipped, node_with(2, "NVIDIA H200")) == nullptr);
  CHECK(match_profile(shipped, node_with(8, "NVIDIA H100 PCIe")) == nullptr);
  CHECK(match_profile(shipped, node_with(8, "NVIDIA A100-SXM4-80GB")) == nullptr);
  CHECK(match_profile(shipped, node_with(0, "")) == nullptr);
  NodeInfo mixed = node_with(8, "NVIDIA H200");
  mixed.gpu_models[3] = "NVIDIA H100 80GB HBM3";
  CHECK(match_profile(shipped, mixed) == nullptr);
  NodeInfo unnamed = node_with(8, "NVIDIA H200");
  unnamed.gpu_models.clear();
  CHECK(match_profile(shipped, unnamed) == nullptr);
  CHECK(match_profile({}, node_with(8, "NVIDIA H200")) == nullptr);

  // The most specific model wins, then the one with the node's HCA count.
  const std::vector<Spec> nvl{hardware_class("H200", 8, 8), hardware_class("H200 NVL", 8, 8)};
  CHECK(match_profile(nvl, node_with(8, "NVIDIA H200 NVL")) == &nvl[1]);
  CHECK(match_profile(nvl, node_with(8, "NVIDIA H200")) == &nvl[0]);
  const std::vector<Spec> rails{hardware_class("H200", 8, 4), hardware_class("H200", 8, 8)};
  CHECK(match_profile(rails, node_with(8, "NVIDIA H200", 8)) == &rails[1]);
  CHECK(match_profile(rails, node_with(8, "NVIDIA H200", 4)) == &rails[0]);
  CHECK(match_profile(rails, node_with(8, "NVIDIA H200", 2)) == &rails[0]);
}
