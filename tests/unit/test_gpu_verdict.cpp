// The GPU tests' verdict arithmetic and drill parsing, and their SKIP on a machine with no GPU
// (CI): what an operator would notice if it went wrong (a slow GPU not flagged, a healthy pair
// flagged, a drill silently ignored, a GPU test reporting PASS where there is no GPU).
#include <catch2/catch.hpp>

#include <cmath>

#include "worker/check.hpp"
#include "worker/checks/gpu/kernels.hpp"
#include "worker/checks/gpu/verdict.hpp"

using namespace kiln::worker;
using namespace kiln::worker::gpu;

TEST_CASE("gpu verdict: median and MAD", "[gpu]") {
  CHECK(median({}) == 0.0);
  CHECK(median({3.0}) == 3.0);
  CHECK(median({4.0, 1.0, 3.0, 2.0}) == 2.5);
  CHECK(mad({1.0, 2.0, 3.0, 4.0, 100.0}) == 1.0);
}

TEST_CASE("gpu verdict: a slowed GPU of two is the outlier, not its healthy peer", "[gpu]") {
  const auto v = peer_outliers({670.0, 335.0}, 0.10);
  REQUIRE(v.size() == 2);
  CHECK_FALSE(v[0].outlier);
  CHECK(v[1].outlier);
  CHECK(v[1].reference == 670.0);
  CHECK(v[1].deficit == Approx(0.5));
}

TEST_CASE("gpu verdict: normal spread between healthy GPUs flags nothing", "[gpu]") {
  for (const auto& pv : peer_outliers({668, 671, 659, 675, 664, 670, 662, 673}, 0.10))
    CHECK_FALSE(pv.outlier);
  for (const auto& pv : peer_outliers({660, 672}, 0.10)) CHECK_FALSE(pv.outlier);
  CHECK_FALSE(peer_outliers({500.0}, 0.10)[0].outlier);  // alone: no peers to compare with
}

TEST_CASE("gpu verdict: one slow GPU of eight is found", "[gpu]") {
  const auto v = peer_outliers({668, 671, 659, 675, 560, 670, 662, 673}, 0.10);
  for (std::size_t i = 0; i < v.size(); ++i) CHECK(v[i].outlier == (i == 4));
}

TEST_CASE("gpu verdict: majority vote over result fingerprints", "[gpu]") {
  CHECK(minority({7, 7, 7}).empty());
  CHECK(minority({7, 9, 7, 7}) == std::vector<std::size_t>{1});
  // Two GPUs that disagree: nothing says which is right, both are named.
  CHECK(minority({7, 9}) == std::vector<std::size_t>{0, 1});
  CHECK(minority({5}).empty());
}

TEST_CASE("gpu verdict: the power cap is normal, thermal and hardware slowdowns are not", "[gpu]") {
  CHECK_FALSE(throttle::abnormal(throttle::kSwPowerCap));
  CHECK_FALSE(throttle::abnormal(throttle::kGpuIdle | throttle::kSyncBoost));
  CHECK(throttle::abnormal(throttle::kSwPowerCap | throttle::kHwThermal));
  CHECK(throttle::abnormal(throttle::kHwPowerBrake));
  CHECK(throttle::names(throttle::kSwPowerCap | throttle::kSwThermal) ==
        std::vector<std::string>{"sw_power_cap", "sw_thermal_slowdown"});
}

TEST_CASE("gpu drill: KILN_FAULT schema", "[gpu]") {
  const auto spec = nlohmann::json::parse(R"({"gpu.burn":{"bitflip_gpu":1,"slow_gpu":0,"slow_factor":0.5}})");
  const auto p = parse_drill(spec, "gpu.burn", "node1");
  CHECK(p.active);
  CHECK(p.bitflip_gpu == 1);
  CHECK(p.slow_gpu == 0);
  CHECK(p.slow_factor == 0.5);
  CHECK_FALSE(parse_drill(spec, "gpu.memtest", "node1").active);
  CHECK_FALSE(parse_drill(nlohmann::json::object(), "gpu.burn", "node1").active);

  const auto other_host = nlohmann::json::parse(R"({"gpu.burn":{"bitflip_gpu":0,"host":"node7"}})");
  CHECK_FALSE(parse_drill(other_host, "gpu.burn", "node1").active);
  CHECK(parse_drill(other_host, "gpu.burn", "node7").bitflip_gpu == 0);

  // A mistyped drill must not pass as a clean run.
  CHECK_THROWS_AS(parse_drill(nlohmann::json::parse(R"({"gpu.burn":{"slow_factor":2}})"), "gpu.burn", "n"),
                  std::invalid_argument);
  CHECK_THROWS_AS(parse_drill(nlohmann::json::parse(R"({"gpu.burn":{"bitflip_gpu":"one"}})"), "gpu.burn", "n"),
                  std::invalid_argument);
}

TEST_CASE("gpu burn inputs are exact in every GEMM type and not zero-heavy", "[gpu]") {
  int zeros = 0;
  for (std::uint64_t i = 0; i < 4096; ++i) {
    const double v = matrix_value(20261130, i);
    CHECK(v >= -1.0);
    CHECK(v < 1.0);
    // k/128 with |k| <= 128 needs at most 8 significant bits: exact in bf16.
    CHECK(std::ldexp(v, 7) == std::round(std::ldexp(v, 7)));
    zeros += v == 0.0;
  }
  CHECK(zeros < 64);
  CHECK(matrix_value(1, 5) == matrix_value(1, 5));
  CHECK(gemm_value_ok(30.0, 30.1, gemm_rel_tolerance("bf16"), 0.0));
  CHECK_FALSE(gemm_value_ok(60.0, 30.0, gemm_rel_tolerance("bf16"), 0.0));  // an exponent bit
  CHECK_FALSE(gemm_value_ok(NAN, 30.0, gemm_rel_tolerance("bf16"), 1.0));
  CHECK_THROWS_AS(gemm_rel_tolerance("int8"), std::invalid_argument);
}

TEST_CASE("gpu memtest patterns", "[gpu]") {
  CHECK(pattern_word(Pattern::WalkingOnes, 0, 0, 3) == 8);
  CHECK(pattern_word(Pattern::WalkingZeros, 0, 0, 3) == ~8ULL);
  CHECK(pattern_word(Pattern::WalkingOnes, 60, 0, 5) == 2);  // wraps around the 64 bits
  CHECK(pattern_word(Pattern::Address, 0, 0x1000, 2) == 0x1010);
  CHECK(pattern_word(Pattern::Random, 1, 0, 2) != pattern_word(Pattern::Random, 1, 0, 3));
}

TEST_CASE("gpu tests SKIP with a reason where no GPU is visible", "[gpu]") {
  kiln::NodeInfo node;
  node.host = "ci";
  node.gpu_count = 0;
  node.gpu_skip_reason = "no GPU visible to CUDA";
  for (const char* key : {"gpu.burn", "gpu.memtest", "gpu.copy_bw", "gpu.health"}) {
    INFO(key);
    auto t = Registry::instance().create(key);
    REQUIRE(t);
    CHECK(t->scope() == kiln::Scope::PerNode);
    const auto why = t->applicable(node);
    // gpu.health reads NVML too, so on a machine whose driver sees GPUs it may run; elsewhere
    // (CI) every GPU test must give a reason.
    if (std::string(key) != "gpu.health") REQUIRE(why);
    if (why) CHECK_FALSE(why->empty());
  }
}
