// Reproducers of what the fuzz targets (tests/fuzz, docs/fuzzing.md) found in common/protocol.* and
// common/types.*, which are being rewritten elsewhere: each is tagged  until fixed.
// When a fix lands, its test here starts passing, Catch reports that as a failure, and the tag
// (and the matching line of tests/fuzz/ubsan.supp) should go.
#include <catch2/catch.hpp>

#include "common/protocol.hpp"
#include "common/types.hpp"

using namespace kiln;
using namespace kiln::proto;
using nlohmann::json;

namespace {

Record load_line(const std::string& line) { return json::parse(line).get<Record>(); }

}  // namespace

// nlohmann's get<int>() of a JSON float casts it unchecked: 2.5 became 2, and a value out of the
// integer's range (seq 1e300, rank 1e10) was undefined behaviour, which UBSan reported in
// fuzz_messages and fuzz_records within seconds.
TEST_CASE("a float in an integer field of a message is refused", "[fuzz][protocol]") {
  CHECK_THROWS_AS(unwrap<Ack>(json::parse(R"({"type":"ack","seq":2.5})")), ProtocolError);
  CHECK_THROWS_AS(unwrap<Done>(json::parse(R"({"type":"done","round_id":1.5,"rank":0})")), ProtocolError);
  CHECK_THROWS_AS(unwrap<Round>(json::parse(R"({"type":"round","id":1,"tests":[],"groups":[[0.5,1]]})")),
                  ProtocolError);
}

// The same helper fixes integers out of range: get<int>() of 4294967297 wraps to 1, so a message
// naming rank 4294967297 is read as rank 1 (and a round id of 2^63 as a negative one).
TEST_CASE("an integer field out of its type's range is refused, not wrapped", "[fuzz][protocol]") {
  CHECK_THROWS_AS(unwrap<Done>(json::parse(R"({"type":"done","round_id":1,"rank":4294967297})")), ProtocolError);
  CHECK_THROWS_AS(unwrap<Ack>(json::parse(R"({"type":"ack","seq":-1})")), ProtocolError);
  CHECK_THROWS_AS(unwrap<Round>(json::parse(R"({"type":"round","id":9223372036854775808,"tests":[]})")),
                  ProtocolError);
}

// results.jsonl lines go through the same conversions (common/types.cpp from_json of Result and
// CheckEnd); load_run counts a line that throws as bad, so the fix needs no change there.
TEST_CASE("a results.jsonl line with a float or out-of-range rank is refused", "[fuzz][types]") {
  const std::string head = R"({"record":"end","test":"t","host":"h","status":"pass","rank":)";
  CHECK_THROWS(load_line(head + "2.5}"));
  CHECK_THROWS(load_line(head + "4294967297}"));
  CHECK_THROWS(load_line(R"({"test":"t","host":"h","rank":0,"metric":"m","value":1,"unit":"","status":"pass",)"
                         R"("size_bytes":1.5})"));
}
