// Frame decoding: arbitrary bytes fed to proto::FrameDecoder in arbitrary pieces.
//
// Input: one control byte, then the byte stream. Bit 6 of the control byte sets the frame limit
// (64 bytes, else the default 4 MiB); bit 7 clear cuts the stream into pieces of 1 + (byte & 63)
// bytes, set into pieces of pseudo-random length 0..64 seeded by the byte.
//
// Expected: next() throws nothing but ProtocolError; the messages and the error are the same
// whether the stream arrives whole or in pieces; no message nests deeper than the decoder's own
// limit (channel.hpp's kMaxJsonDepth, checked before parsing, so this target feeds it deep input
// unfiltered); every message decoded re-encodes into a frame, plain and through an authenticated
// Channel, that decodes to the same message.
#include <string>
#include <vector>

#include "common/channel.hpp"
#include "common/protocol.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using kiln::proto::FrameDecoder;
using kiln::proto::ProtocolError;
namespace fz = kiln::fuzz;

namespace {

struct Outcome {
  std::vector<nlohmann::json> messages;
  std::string error;  // empty when the stream decoded without one
  std::size_t buffered = 0;
};

// Feeds the stream in the given pieces, taking every message after each, until the first error.
Outcome decode(std::string_view stream, std::uint32_t max_frame, const std::vector<std::size_t>& pieces) {
  FrameDecoder dec(max_frame);
  Outcome out;
  std::size_t at = 0;
  try {
    for (std::size_t len : pieces) {
      dec.feed(stream.substr(at, len));
      at += len;
      while (auto m = dec.next()) out.messages.push_back(std::move(*m));
    }
  } catch (const ProtocolError& e) {
    out.error = e.what();
  } catch (const std::exception& e) {
    fz::uncaught("FrameDecoder::next", e);
  }
  out.buffered = dec.buffered();
  return out;
}

std::vector<std::size_t> cut(std::size_t size, std::uint8_t control) {
  std::vector<std::size_t> pieces;
  std::uint32_t state = 0x9e3779b9u ^ control;
  for (std::size_t at = 0; at < size;) {
    std::size_t len = 1 + (control & 63);
    if (control & 0x80) {
      state ^= state << 13, state ^= state >> 17, state ^= state << 5;  // xorshift32
      len = state % 65;  // empty pieces too: feed("") must be harmless
    }
    len = std::min(len, size - at);
    pieces.push_back(len);
    at += len;
  }
  return pieces;
}

void check_reencodes(const nlohmann::json& m) {
  std::string frame;
  try {
    frame = kiln::proto::encode_frame(m);
  } catch (const std::exception& e) {
    fz::uncaught("encode_frame of a decoded message", e);
  }
  FrameDecoder again;
  again.feed(frame);
  std::optional<nlohmann::json> back;
  try {
    back = again.next();
  } catch (const std::exception& e) {
    fz::fail("re-decoding an encoded message", e.what());
  }
  fz::expect(back && *back == m, "frame round trip", "message changed: " + m.dump().substr(0, 200));
}

// Through both ends of an authenticated connection, twice, so that the sequence numbers move on.
void check_channel(const nlohmann::json& m) {
  using kiln::proto::Channel;
  Channel worker("secret", "nonce", "client", Channel::Side::Worker);
  Channel coordinator("secret", "nonce", "client", Channel::Side::Coordinator);
  for (int i = 0; i < 2; ++i) {
    FrameDecoder dec;
    try {
      dec.feed(worker.seal(m));
      const auto body = dec.next_body();
      fz::expect(body.has_value(), "Channel round trip", "a sealed frame did not decode");
      fz::expect(coordinator.open(*body) == m, "Channel round trip", "message changed: " + m.dump().substr(0, 200));
    } catch (const std::exception& e) {
      fz::fail("Channel round trip", std::string(e.what()) + ": " + m.dump().substr(0, 200));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t control = data[0];
  const std::string_view stream = fz::as_text(data + 1, size - 1);
  const std::uint32_t max_frame = (control & 0x40) ? 64 : kiln::proto::kDefaultMaxFrame;
  const Outcome whole = decode(stream, max_frame, {stream.size()});
  const Outcome pieces = decode(stream, max_frame, cut(stream.size(), control));
  fz::expect(whole.messages == pieces.messages, "split invariance", "different messages when fed in pieces");
  fz::expect(whole.error == pieces.error, "split invariance", "'" + whole.error + "' vs '" + pieces.error + "'");
  if (whole.error.empty())
    fz::expect(whole.buffered == pieces.buffered, "split invariance", "different bytes left buffered");
  for (const auto& m : whole.messages) {
    fz::expect(m.is_object(), "FrameDecoder::next", "returned a message that is not an object");
    fz::expect(fz::depth(m.dump()) <= kiln::proto::kMaxJsonDepth, "FrameDecoder::next", "message nested too deeply");
    check_reencodes(m);
    check_channel(m);
  }
  return 0;
}
