// model.fsdp_step's arithmetic without a GPU: FLOPs, memory, the figures and the determinism
// verdict an operator reads (worker/checks/model/fsdp_math.hpp).
#include <catch2/catch.hpp>

#include "worker/checks/model/fsdp_math.hpp"

using namespace kiln::worker::model;

TEST_CASE("fsdp: a step is six tokens*hidden^2 FLOPs per layer", "[fsdp]") {
  FsdpShape s{8, 8192, 8192, 8};
  CHECK(step_flops(s) == Approx(6.0 * 8 * 8192.0 * 8192.0 * 8192.0));
  s.layers = 1;
  s.tokens = 128;
  s.hidden = 64;
  CHECK(step_flops(s) == Approx(6.0 * 128 * 64 * 64));
}

TEST_CASE("fsdp: shards cover the layer in 16-byte parts", "[fsdp]") {
  FsdpShape s{1, 64, 64, 3};
  const auto shard = shard_elems(s);
  CHECK(shard % 8 == 0);
  CHECK(shard * 3 >= 64 * 64);
  CHECK((shard - 8) * 3 < 64 * 64);
  s.ranks = 8;
  CHECK(shard_elems(s) == 64 * 64 / 8);
}

TEST_CASE("fsdp: the default shape fits well under 20 GiB per GPU", "[fsdp]") {
  const FsdpShape s{8, 8192, 8192, 8};
  const double gib = static_cast<double>(device_bytes(s)) / (1024.0 * 1024 * 1024);
  CHECK(gib > 1.0);  // the activations alone are 9 x 128 MiB
  CHECK(gib < 20.0);
  FsdpShape more = s;
  more.tokens *= 2;
  CHECK(device_bytes(more) > device_bytes(s));
}

TEST_CASE("fsdp: figures from the three step times", "[fsdp]") {
  const FsdpShape s{8, 8192, 8192, 8};
  const StepTimes t{50.0, 40.0, 20.0};
  const StepFigures f = step_figures(s, t, 989.0);
  CHECK(f.tflops == Approx(step_flops(s) / 0.050 / 1e12));
  REQUIRE(f.mfu);
  CHECK(*f.mfu == Approx(f.tflops / 989.0));
  CHECK(f.exposed_comm_ms == Approx(10.0));
  CHECK(f.comm_share == Approx(0.4));
  CHECK(f.overlap == Approx(0.5));  // half of the 20 ms of communication was hidden
}

TEST_CASE("fsdp: no peak, no MFU, and the note says why", "[fsdp]") {
  const StepFigures f = step_figures(FsdpShape{}, StepTimes{50.0, 40.0, 20.0}, 0.0);
  CHECK_FALSE(f.mfu);
  CHECK(f.mfu_note.find("peak_tflops") != std::string::npos);
}

TEST_CASE("fsdp: a step faster than compute alone exposes nothing", "[fsdp]") {
  const StepFigures f = step_figures(FsdpShape{}, StepTimes{39.0, 40.0, 20.0}, 0.0);
  CHECK(f.exposed_comm_ms == 0.0);
  CHECK(f.overlap == 1.0);
  CHECK_THROWS_AS(step_figures(FsdpShape{}, StepTimes{0.0, 40.0, 20.0}, 0.0), std::invalid_argument);
}

namespace {
std::vector<RankChecksums> agreeing(int n) {
  std::vector<RankChecksums> v;
  for (int r = 0; r < n; ++r) v.push_back({r, {11, 11}, {22, 22}, {100u + r, 100u + r}});
  return v;
}
}  // namespace

TEST_CASE("fsdp: identical checksums are deterministic; shards may differ between ranks", "[fsdp]") {
  CHECK(determinism_problems(agreeing(4)).empty());
}

TEST_CASE("fsdp: the odd rank's gradient is named against the majority", "[fsdp]") {
  auto v = agreeing(4);
  v[2].grad = {23, 23};
  const auto p = determinism_problems(v);
  REQUIRE(p.size() == 1);
  CHECK(p[0].find("rank 2") != std::string::npos);
  CHECK(p[0].find("local gradient") != std::string::npos);
  CHECK(p[0].find("3 of 4 ranks") != std::string::npos);
}

TEST_CASE("fsdp: a rank whose repeated step changes is named", "[fsdp]") {
  auto v = agreeing(2);
  v[1].shard = {101, 999};
  const auto p = determinism_problems(v);
  REQUIRE(p.size() == 1);
  CHECK(p[0].find("rank 1") != std::string::npos);
  CHECK(p[0].find("verified step 1") != std::string::npos);
}

TEST_CASE("fsdp: two ranks that disagree have no majority", "[fsdp]") {
  auto v = agreeing(2);
  v[0].loss = {12, 12};
  const auto p = determinism_problems(v);
  REQUIRE(p.size() == 1);
  CHECK(p[0].find("no majority") != std::string::npos);
}
