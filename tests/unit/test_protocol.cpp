#include "common/findings.hpp"
#include <catch2/catch.hpp>

#include "common/protocol.hpp"

using namespace kiln;
using namespace kiln::proto;
using nlohmann::json;

TEST_CASE("a frame is a big-endian length and the JSON body", "[protocol]") {
  const auto f = encode_frame(json{{"type", "heartbeat"}, {"ts", 1.5}});
  const std::string body = R"({"ts":1.5,"type":"heartbeat"})";
  REQUIRE(f.size() == 4 + body.size());
  CHECK(decode_header(reinterpret_cast<const unsigned char*>(f.data())) == body.size());
  CHECK(f.substr(4) == body);
  CHECK(static_cast<unsigned char>(f[0]) == 0);
  CHECK(static_cast<unsigned char>(f[3]) == body.size());
}

TEST_CASE("the decoder reassembles frames split at any byte", "[protocol]") {
  std::string stream = encode_frame(wrap(Ack{7})) + encode_frame(wrap(Bye{"x"})) + encode_frame(wrap(Heartbeat{2}));
  for (std::size_t step : {1u, 2u, 3u, 5u, 64u}) {
    FrameDecoder dec;
    std::vector<json> got;
    for (std::size_t i = 0; i < stream.size(); i += step) {
      dec.feed(std::string_view(stream).substr(i, step));
      while (auto m = dec.next()) got.push_back(*m);
    }
    REQUIRE(got.size() == 3);
    CHECK(type_of(got[0]) == MsgType::Ack);
    CHECK(got[0]["seq"] == 7);
    CHECK(type_of(got[1]) == MsgType::Bye);
    CHECK(type_of(got[2]) == MsgType::Heartbeat);
    CHECK(dec.buffered() == 0);
  }
}

TEST_CASE("a frame over the limit is refused from its header alone", "[protocol]") {
  FrameDecoder dec(1024);
  dec.feed(encode_header(1025));
  CHECK_THROWS_AS(dec.next(), ProtocolError);
  CHECK_THROWS_AS(encode_frame(json{{"big", std::string(2000, 'x')}}, 1024), ProtocolError);
}

TEST_CASE("a truncated frame yields nothing until the rest arrives", "[protocol]") {
  FrameDecoder dec;
  const auto f = encode_frame(wrap(Ack{1}));
  dec.feed(std::string_view(f).substr(0, f.size() - 1));
  CHECK_FALSE(dec.next().has_value());
  CHECK(dec.buffered() == f.size() - 1);
  dec.feed(std::string_view(f).substr(f.size() - 1));
  CHECK(dec.next().has_value());
}

TEST_CASE("bad bodies are protocol errors", "[protocol]") {
  SECTION("not JSON") {
    FrameDecoder dec;
    dec.feed(encode_header(5) + "nope!");
    CHECK_THROWS_AS(dec.next(), ProtocolError);
  }
  SECTION("not an object") {
    FrameDecoder dec;
    dec.feed(encode_header(3) + "[1]");
    CHECK_THROWS_AS(dec.next(), ProtocolError);
  }
  SECTION("empty frame") {
    FrameDecoder dec;
    dec.feed(encode_header(0));
    CHECK_THROWS_AS(dec.next(), ProtocolError);
  }
  SECTION("unknown or missing type") {
    CHECK_THROWS_AS(type_of(json{{"type", "launch_missiles"}}), ProtocolError);
    CHECK_THROWS_AS(type_of(json{{"seq", 1}}), ProtocolError);
  }
  SECTION("wrong type for the expected message") {
    CHECK_THROWS_AS(unwrap<Hello>(wrap(Ack{1})), ProtocolError);
  }
  SECTION("missing field") {
    CHECK_THROWS_AS(unwrap<Hello>(json{{"type", "hello"}, {"version", 1}}), ProtocolError);
  }
}

template <class M>
M round_trip(const M& m) {
  FrameDecoder dec;
  dec.feed(encode_frame(wrap(m)));
  auto j = dec.next();
  REQUIRE(j);
  return unwrap<M>(*j);
}

TEST_CASE("every message type survives a JSON round trip", "[protocol]") {
  auto c = round_trip(Challenge{kProtocolVersion, "abc"});
  CHECK(c.nonce == "abc");
  CHECK(c.version == kProtocolVersion);

  Hello h;
  h.rank = 3;
  h.world_size = 8;
  h.host = "gpu007";
  h.client_nonce = std::string(64, 'a');
  h.info.gpu_count = 8;
  h.info.gpu_models = {"NVIDIA H200"};
  auto h2 = round_trip(h);
  CHECK(h2.rank == 3);
  CHECK(h2.world_size == 8);
  CHECK(h2.host == "gpu007");
  CHECK(h2.info.gpu_count == 8);
  CHECK(h2.info.gpu_models == std::vector<std::string>{"NVIDIA H200"});

  auto w = round_trip(Welcome{"run1", 2.5});
  CHECK(w.run_id == "run1");
  CHECK(w.heartbeat_s == 2.5);

  Round r;
  r.id = 42;
  r.tests = {{"mpi.all_reduce", {{"max_bytes", 1024}}}, {"host.inventory", json::object()}};
  r.groups = {{0, 1}, {2, 3}, {4}};
  r.deadline_s = 30;
  auto r2 = round_trip(r);
  CHECK(r2.id == 42);
  CHECK(r2.tests == r.tests);
  CHECK(r2.groups == r.groups);
  CHECK(r2.deadline_s == 30);

  ResultMsg rm;
  rm.seq = 9;
  rm.result.test = "mpi.all_reduce";
  rm.result.host = "n1";
  rm.result.rank = 2;
  rm.result.entity = {"link", "n1<->n2"};
  rm.result.metric = "busbw";
  rm.result.value = 12.5;
  rm.result.unit = "GB/s";
  rm.result.status = Status::Fail;
  rm.result.reason = "slow";
  rm.result.size_bytes = 1 << 20;
  rm.result.extra = {{"k", "v"}};
  auto rm2 = round_trip(rm);
  CHECK(rm2.seq == 9);
  CHECK(rm2.result.entity == rm.result.entity);
  CHECK(rm2.result.status == Status::Fail);
  CHECK(rm2.result.size_bytes == (1 << 20));
  CHECK(rm2.result.extra["k"] == "v");
  CHECK(rm2.result.reason == "slow");

  CHECK(round_trip(Ack{5}).seq == 5);
  auto d = round_trip(Done{7, 3, 99});
  CHECK(d.round_id == 7);
  CHECK(d.rank == 3);
  CHECK(d.last_seq == 99);
  CHECK(round_trip(Heartbeat{1.25}).ts == 1.25);
  auto e = round_trip(Error{"auth_failed", "nope"});
  CHECK(e.code == "auth_failed");
  CHECK(e.message == "nope");
  CHECK(round_trip(Bye{"done"}).reason == "done");
}

TEST_CASE("findings and statuses round-trip and reject unknown values", "[types]") {
  Finding f;
  f.code = Code::LinkSlow;
  f.severity = Severity::Critical;
  f.entity = {"link", "a<->b"};
  f.summary = "s";
  f.next_step = "n";
  f.confidence = 0.9;
  f.evidence = json::array({{{"round", 3}}});
  Finding g = json(f).get<Finding>();
  CHECK(g.code == f.code);
  CHECK(g.severity == Severity::Critical);
  CHECK(g.entity == f.entity);
  CHECK(g.confidence == 0.9);
  CHECK(g.evidence[0]["round"] == 3);
  CHECK_THROWS(json("maybe").get<Status>());
  CHECK_THROWS(json("loud").get<Severity>());
}
