// Authenticated framing: MACs checked before parsing, every later frame bound to its sequence,
// depth limits, and what a rank may report about.
#include <catch2/catch.hpp>

#include "common/auth.hpp"
#include "common/channel.hpp"
#include "common/text.hpp"

using namespace kiln;
using namespace kiln::proto;

namespace {
std::string body_of(const std::string& frame) { return frame.substr(kHeaderSize); }
}  // namespace

TEST_CASE("hello and welcome MACs cover every byte and both nonces", "[channel]") {
  Hello h;
  h.ranks = {2};
  h.world_size = 4;
  h.host = "node7";
  h.client_nonce = auth::random_hex(32);
  h.info.gpu_count = 8;
  const auto frame = seal_hello("secret", "n1", h);
  CHECK(open_hello("secret", "n1", body_of(frame)).info.gpu_count == 8);
  CHECK_THROWS_AS(open_hello("other", "n1", body_of(frame)), AuthFailure);
  CHECK_THROWS_AS(open_hello("secret", "n2", body_of(frame)), AuthFailure);  // a replay on another connection
  for (const char* field : {"node7", "\"ranks\":[2", "\"gpu_count\":8"}) {
    auto altered = body_of(frame);
    const auto at = altered.find(field);
    REQUIRE(at != std::string::npos);
    altered[at + std::string(field).size() - 1] ^= 1;
    CHECK_THROWS_AS(open_hello("secret", "n1", altered), AuthFailure);
  }
  const auto w = seal_welcome("secret", "n1", h.client_nonce, Welcome{"run9", 2.0});
  CHECK(open_welcome("secret", "n1", h.client_nonce, body_of(w)).run_id == "run9");
  CHECK_THROWS_AS(open_welcome("secret", "n1", auth::random_hex(32), body_of(w)), AuthFailure);
}

TEST_CASE("a session channel rejects altered, replayed, reordered and reflected frames", "[channel]") {
  Channel coord("s", "n", "c", Channel::Side::Coordinator), worker("s", "n", "c", Channel::Side::Worker);
  const auto f1 = body_of(worker.seal({{"type", "heartbeat"}, {"ts", 1}}));
  const auto f2 = body_of(worker.seal({{"type", "heartbeat"}, {"ts", 2}}));
  SECTION("in order") {
    CHECK(coord.open(f1)["ts"] == 1);
    CHECK(coord.open(f2)["ts"] == 2);
  }
  SECTION("reordered") { CHECK_THROWS_AS(coord.open(f2), AuthFailure); }
  SECTION("replayed") {
    coord.open(f1);
    CHECK_THROWS_AS(coord.open(f1), AuthFailure);
  }
  SECTION("altered") {
    auto bad = f1;
    bad.back() ^= 1;
    CHECK_THROWS_AS(coord.open(bad), AuthFailure);
  }
  SECTION("reflected back to its sender") { CHECK_THROWS_AS(worker.open(f1), AuthFailure); }
  SECTION("another session's key") {
    Channel other("s", "n2", "c", Channel::Side::Coordinator);
    CHECK_THROWS_AS(other.open(f1), AuthFailure);
  }
}

TEST_CASE("JSON nesting is refused before parsing", "[channel]") {
  CHECK(json_depth("{\"a\":[1,{\"b\":\"[[[[\"}]}", 64) == 3);  // brackets inside strings do not count
  CHECK(json_depth(std::string(300000, '['), 64) == 65);       // stops early
  CHECK_THROWS_WITH(parse_body(std::string(100, '[') + std::string(100, ']')), Catch::Contains("deeper than 64"));
  CHECK(parse_body("{\"a\":" + std::string(60, '[') + std::string(60, ']') + "}").is_object());
}

TEST_CASE("a rank may report only about what its node owns", "[channel]") {
  CHECK(may_report({"rank", "3"}, 3, "n1"));
  CHECK_FALSE(may_report({"rank", "1"}, 3, "n1"));
  CHECK(may_report({"node", "n1"}, 3, "n1"));
  CHECK_FALSE(may_report({"node", "n2"}, 3, "n1"));
  CHECK(may_report({"gpu", "n1/gpu0"}, 3, "n1"));
  CHECK_FALSE(may_report({"gpu", "n10/gpu0"}, 3, "n1"));
  CHECK_FALSE(may_report({"gpu", "n1"}, 3, "n1"));
  CHECK(may_report({"hca", "n1/mlx5_0:1"}, 3, "n1"));
  CHECK(may_report({"nvlink", "n1/gpu0->n1/gpu1"}, 3, "n1"));
  CHECK_FALSE(may_report({"nvlink", "n1/gpu0->n2/gpu1"}, 3, "n1"));
  CHECK(may_report({"link", "n0<->n1"}, 3, "n1"));
  CHECK(may_report({"link", "n1/mlx5_0:1<->n2/mlx5_0:1"}, 3, "n1"));
  CHECK_FALSE(may_report({"link", "n2<->n3"}, 3, "n1"));
  CHECK_FALSE(may_report({"switch", "leaf1"}, 3, "n1"));
}

TEST_CASE("peer text is bounded and escaped for the terminal", "[channel]") {
  CHECK(printable("ok") == "ok");
  CHECK(printable("\x1b[2J\x07x") == "\\x1b[2J\\x07x");
  CHECK(printable(std::string(100000, 'a'), 10) == "aaaaaaaaaa...(99990 more bytes)");
  // UTF-8 text stays readable; C1 controls (U+009B is CSI on some terminals), lone continuation
  // bytes, overlong forms and surrogates do not reach the terminal raw.
  const std::string utf8 = "n\xc3\xb6" "de \xe2\x9c\x93 \xf0\x9f\x94\xa5";
  CHECK(printable(utf8) == utf8);
  CHECK(printable("\xc2\x9b" "31m") == "\\xc2\\x9b31m");
  CHECK(printable("\x9b" "31m") == "\\x9b31m");
  CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");
  CHECK(printable("\xe2\x9c") == "\\xe2\\x9c");  // cut short
  RateLimitedLog log(std::chrono::hours(1));
  CHECK(log.tick() == 1);
  for (int i = 0; i < 1000; ++i) CHECK(log.tick() == 0);
}
