#include "common/findings.hpp"
#include <catch2/catch.hpp>

#include <cmath>

#include "common/channel.hpp"
#include "common/finite_value.hpp"
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
  h.ranks = {3, 4, 5};
  h.world_size = 8;
  h.host = "gpu007";
  h.client_nonce = std::string(64, 'a');
  h.info.gpu_count = 8;
  h.info.gpu_models = {"NVIDIA H200"};
  auto h2 = round_trip(h);
  CHECK(h2.ranks == std::vector<int>{3, 4, 5});
  CHECK(h2.world_size == 8);
  CHECK(h2.host == "gpu007");
  CHECK(h2.info.gpu_count == 8);
  CHECK(h2.info.gpu_models == std::vector<std::string>{"NVIDIA H200"});

  auto w = round_trip(Welcome{"run1", 2.5});
  CHECK(w.run_id == "run1");
  CHECK(w.heartbeat_s == 2.5);
  CHECK(w.ranks.empty());
  CHECK_FALSE(wrap(Welcome{"run1", 2.5}).contains("ranks"));  // as before: an older worker reads it
  CHECK(round_trip(Welcome{"run1", 2.5, {4, 5}}).ranks == std::vector<int>{4, 5});
  CHECK_THROWS_AS(unwrap<Welcome>(json{{"type", "welcome"}, {"run_id", "r"}, {"ranks", {-1}}}), ProtocolError);
  CHECK_THROWS_AS(unwrap<Welcome>(json{{"type", "welcome"}, {"run_id", "r"}, {"ranks", "x"}}), std::exception);

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

  Result res;
  res.test = "mpi.all_reduce";
  res.host = "n1";
  res.rank = 2;
  res.entity = {"link", "n1<->n2"};
  res.metric = "busbw";
  res.value = 12.5;
  res.unit = "GB/s";
  res.status = Status::Fail;
  res.reason = "slow";
  res.size_bytes = 1 << 20;
  res.extra = {{"k", "v"}};
  CheckEnd end;
  end.test = "mpi.all_reduce";
  end.host = "n1";
  end.rank = 2;
  end.status = Status::Timeout;
  const std::vector<std::string> lines = {record_line(res), record_line(end)};
  auto batch = std::get<Records>(decode_worker_payload(encode_records(9, lines)));
  CHECK(batch.last_seq == 9);
  CHECK(batch.lines == lines);  // kept as received, to be stored as is
  REQUIRE(batch.records.size() == 2);
  const auto& rm2 = std::get<Result>(batch.records[0]);
  CHECK(rm2.entity == res.entity);
  CHECK(rm2.status == Status::Fail);
  CHECK(rm2.size_bytes == (1 << 20));
  CHECK(rm2.extra["k"] == "v");
  CHECK(rm2.reason == "slow");
  CHECK(std::get<CheckEnd>(batch.records[1]).status == Status::Timeout);

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

TEST_CASE("record batches refuse what a results.jsonl line could not be", "[protocol]") {
  const auto line = record_line(Result{"t", "h", 0, {}, "m", 1.0, "u"});
  CHECK_THROWS_AS(decode_worker_payload(encode_records(0, {line})), ProtocolError);  // last_seq below its count
  CHECK_THROWS_AS(decode_worker_payload(R"({"type":"records","last_seq":1})" "\n"), ProtocolError);  // empty line
  CHECK_THROWS_AS(decode_worker_payload(encode_records(2, {line, "{\"record\":\"end\"}"})), ProtocolError);
  CHECK_THROWS_AS(decode_worker_payload(encode_records(1, {"[1,2]"})), ProtocolError);
  CHECK_THROWS_AS(decode_worker_payload(encode_records(1, {std::string(100, '[') + std::string(100, ']')})),
                  ProtocolError);  // deeper than the limit: refused before it is parsed
  // A message of several lines must be a batch.
  CHECK_THROWS_AS(decode_worker_payload(R"({"type":"heartbeat","ts":0})" "\n" + line), ProtocolError);
  CHECK(std::holds_alternative<Heartbeat>(decode_worker_payload(R"({"type":"heartbeat","ts":0})")));
}

TEST_CASE("heartbeats carry each rank's progress, and a worker without it still parses", "[protocol]") {
  Heartbeat h{3.5, {{4, "mpi.all_reduce", 2, 17, 1}, {5, "", -1, 0, -1}}};
  const auto back = unwrap<Heartbeat>(json::parse(wrap(h).dump()));
  CHECK(back.progress == h.progress);
  CHECK_FALSE(wrap(Heartbeat{1.0}).contains("progress"));  // an idle link's heartbeat stays as it was
  const auto old = std::get<Heartbeat>(decode_worker_payload(R"({"type":"heartbeat","ts":7})"));
  CHECK(old.progress.empty());
  CHECK(old.ts == 7);
  CHECK_THROWS_AS(decode_worker_payload(R"({"type":"heartbeat","ts":0,"progress":{"rank":1}})"), ProtocolError);
  CHECK_THROWS_AS(decode_worker_payload(R"({"type":"heartbeat","ts":0,"progress":[{"rank":-2}]})"), ProtocolError);
  CHECK_THROWS_AS(decode_worker_payload(R"({"type":"heartbeat","ts":0,"progress":[{"rank":1,"waiting_on":-5}]})"),
                  ProtocolError);
  const std::string long_key(kMaxCheckKey + 1, 'k');
  const json too_long = {{"type", "heartbeat"}, {"progress", {{{"rank", 1}, {"check", long_key}}}}};
  CHECK_THROWS_AS(decode_worker_payload(too_long.dump()), ProtocolError);
}

TEST_CASE("a round's groups travel as runs, and a connection gets only its own", "[protocol]") {
  CHECK(encode_group(3, {0, 1, 2, 3, 7, 9, 10, 11}) == "[3,[[0,3],7,[9,11]]]");
  CHECK(encode_group(0, {5, 6}) == "[0,[5,6]]");
  CHECK(encode_group(1, {2147483646, 2147483647}) == "[1,[2147483646,2147483647]]");
  Round r;
  r.id = 4;
  r.groups = {{0, 1}, {2, 3}, {}, {4, 5, 6, 7}};
  std::vector<std::string> enc;
  for (std::size_t g = 0; g < r.groups.size(); ++g) enc.push_back(encode_group(g, r.groups[g]));
  const auto mine = unwrap<Round>(parse_body(round_payload(r, {3}, enc)));
  CHECK(mine.groups == std::vector<std::vector<int>>{{}, {}, {}, {4, 5, 6, 7}});
  // One group of 100,000 ranks is a few bytes, not 600 KB.
  Round big;
  for (int i = 0; i < 100000; ++i) big.groups.resize(1), big.groups[0].push_back(i);
  CHECK(json(big).dump().size() < 200);
  // A hostile run cannot make a worker allocate without bound.
  CHECK_THROWS_AS(unwrap<Round>(json::parse(R"({"type":"round","id":1,"tests":[],"group_count":1,"groups":[[0,[[0,2000000000]]]]})")),
                  ProtocolError);
  CHECK_THROWS_AS(unwrap<Round>(json::parse(R"({"type":"round","id":1,"tests":[],"group_count":1,"groups":[[1,[0]]]})")),
                  ProtocolError);
  CHECK_THROWS_AS(unwrap<Round>(json::parse(R"({"type":"round","id":1,"tests":[],"group_count":9999999,"groups":[]})")),
                  ProtocolError);
}

TEST_CASE("a hello names 1 to 1024 distinct ranks", "[protocol]") {
  Hello h;
  h.host = "n1";
  h.client_nonce = std::string(64, 'a');
  h.world_size = 4;
  h.ranks = {1, 1};
  CHECK_THROWS_AS(unwrap<Hello>(wrap(h)), ProtocolError);
  h.ranks = {};
  CHECK_THROWS_AS(unwrap<Hello>(wrap(h)), ProtocolError);
  h.ranks.assign(1025, 0);
  for (int i = 0; i < 1025; ++i) h.ranks[static_cast<std::size_t>(i)] = i;
  CHECK_THROWS_AS(unwrap<Hello>(wrap(h)), ProtocolError);
  h.ranks.resize(1024);
  CHECK(unwrap<Hello>(wrap(h)).ranks.size() == 1024);
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

TEST_CASE("a non-finite value becomes an error result whose line the coordinator takes", "[types]") {
  for (const double v : {std::nan(""), HUGE_VAL, -HUGE_VAL}) {
    kiln::Result r;
    r.test = "mpi.all_reduce";
    r.host = "n1";
    r.rank = 0;
    r.entity = {"rank", "0"};
    r.metric = "busbw";
    r.value = v;
    // As it stands the line carries "value":null, and the batch holding it is refused.
    CHECK(nlohmann::json::parse(proto::record_line(r)).at("value").is_null());
    CHECK_THROWS_AS(proto::decode_worker_payload(proto::encode_records(1, {proto::record_line(r)})), proto::ProtocolError);
    kiln::make_value_finite(r);
    CHECK(r.status == kiln::Status::Error);
    CHECK(r.value == 0.0);
    CHECK(r.reason.find("non-finite busbw") != std::string::npos);
    const auto msg = proto::decode_worker_payload(proto::encode_records(1, {proto::record_line(r)}));
    REQUIRE(std::holds_alternative<proto::Records>(msg));
    CHECK(std::get<proto::Records>(msg).records.size() == 1);
  }
  kiln::Result ok;
  ok.value = 12.5;
  kiln::make_value_finite(ok);
  CHECK(ok.status == kiln::Status::Pass);
  CHECK(ok.value == 12.5);
}
