// Every wire message on arbitrary JSON: proto::unwrap<T> for each of the ten message types and
// proto::decode_worker_message, on the input as it is and with its "type" set to each type in
// turn; then the input once more as the body of a frame, through FrameDecoder; then the input as a
// frame's payload through proto::decode_worker_payload (record batches are lines, not one JSON).
//
// Expected: ProtocolError is the only exception (the coordinator and the worker catch it and close
// the connection); a message that decodes re-encodes into a frame that decodes to the same
// message. Inputs nested deeper than fuzz_support.hpp's kMaxDepth are skipped.
#include <string>

#include "common/protocol.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace kiln::proto;
namespace fz = kiln::fuzz;

namespace {

// A batch re-encodes from its lines into a payload that decodes to the same lines and records.
void check_round_trip(const Records& b) {
  try {
    const auto again = std::get<Records>(decode_worker_payload(encode_records(b.last_seq, b.lines)));
    fz::expect(again.lines == b.lines, "round trip", "a batch's lines changed");
    fz::expect(again.records.size() == b.records.size(), "round trip", "a batch's records changed");
  } catch (const ProtocolError& e) {
    fz::fail("round trip", std::string("a decoded batch does not decode again: ") + e.what());
  }
}

template <class M>
void check_round_trip(const M& m) {
  nlohmann::json first;
  std::string frame;
  try {
    first = wrap(m);
    frame = encode_frame(first);
  } catch (const std::exception& e) {
    fz::uncaught("encoding a decoded message", e);
  }
  FrameDecoder dec;
  dec.feed(frame);
  try {
    const auto again = dec.next();
    fz::expect(again.has_value(), "round trip", "an encoded frame did not decode");
    fz::expect(wrap(unwrap<M>(*again)) == first, "round trip", "message changed: " + first.dump().substr(0, 300));
  } catch (const ProtocolError& e) {
    fz::fail("round trip", "a decoded '" + to_string(M::kType) + "' does not decode again: " + e.what() +
                               "; it was " + first.dump().substr(0, 300));
  }
}

template <class M>
void try_unwrap(const nlohmann::json& j) {
  try {
    check_round_trip(unwrap<M>(j));
  } catch (const ProtocolError&) {
  } catch (const std::exception& e) {
    fz::uncaught("unwrap", e);
  }
}

void try_worker_message(const nlohmann::json& j) {
  try {
    std::visit([](const auto& m) { check_round_trip(m); }, decode_worker_message(j));
  } catch (const ProtocolError&) {
  } catch (const std::exception& e) {
    fz::uncaught("decode_worker_message", e);
  }
}

void try_all(const nlohmann::json& j) {
  try_unwrap<Challenge>(j);
  try_unwrap<Hello>(j);
  try_unwrap<Welcome>(j);
  try_unwrap<Round>(j);
  try_unwrap<Ack>(j);
  try_unwrap<Done>(j);
  try_unwrap<Heartbeat>(j);
  try_unwrap<Error>(j);
  try_unwrap<Bye>(j);
  try_worker_message(j);
}

const MsgType kTypes[] = {MsgType::Challenge, MsgType::Hello,     MsgType::Welcome, MsgType::Round,
                          MsgType::Records,   MsgType::Ack,       MsgType::Done,    MsgType::Heartbeat,
                          MsgType::Error,     MsgType::Bye};

// The input as an authenticated frame's payload, as the coordinator's decode pool takes it.
void as_payload(std::string_view text) {
  try {
    std::visit([](const auto& m) { check_round_trip(m); }, decode_worker_payload(text));
  } catch (const ProtocolError&) {
  } catch (const std::exception& e) {
    fz::uncaught("decode_worker_payload", e);
  }
}

// The input as the body of a frame, as the coordinator's reader takes it.
void as_frame(std::string_view text) {
  if (text.empty() || text.size() > kDefaultMaxFrame) return;
  FrameDecoder dec;
  dec.feed(encode_header(static_cast<std::uint32_t>(text.size())));
  dec.feed(text);
  try {
    if (auto m = dec.next()) try_worker_message(*m);
  } catch (const ProtocolError&) {
  } catch (const std::exception& e) {
    fz::uncaught("FrameDecoder::next", e);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = fz::as_text(data, size);
  auto j = fz::parse_json(text);
  if (!j) return 0;
  try_all(*j);
  if (j->is_object()) {
    for (auto t : kTypes) {
      (*j)["type"] = to_string(t);
      try_all(*j);
    }
  }
  as_frame(text);
  as_payload(text);
  return 0;
}
