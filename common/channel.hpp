// Authenticated framing, on top of the length-prefixed frames of protocol.hpp.
//
// Before authentication a frame is bounded to kPreAuthMaxFrame, and only two may arrive: the
// coordinator's challenge (plain) and the worker's hello. The hello's body is a 32-byte MAC over
// the coordinator's nonce and the hello's exact bytes, checked before a byte of JSON is parsed; the
// welcome's MAC covers both nonces and its own bytes. Both sides then derive a session key from the
// secret and both nonces, and every later frame, in either direction, carries a MAC over a
// per-direction sequence number and its bytes: a replayed, reordered, altered or injected frame
// fails its MAC and ends the connection. Every JSON body is refused beyond kMaxJsonDepth before it
// is parsed. See docs/protocol.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/protocol.hpp"

namespace kiln::proto {

inline constexpr std::uint32_t kPreAuthMaxFrame = 16u << 10;  // 16 KiB: a hello with its node info
inline constexpr int kMaxJsonDepth = 64;
inline constexpr std::size_t kMacSize = 32;

// Thrown when a MAC does not verify: the peer does not hold the secret, or the frame was altered,
// replayed or reordered.
struct AuthFailure : ProtocolError {
  using ProtocolError::ProtocolError;
};

// The nesting depth of a JSON text (objects and arrays; strings skipped), stopping early once past
// `limit`. Used to refuse deep input before any parser recurses into it.
int json_depth(std::string_view text, int limit);
// Parses a frame body as a JSON object, refusing nesting beyond max_depth first.
nlohmann::json parse_body(std::string_view body, int max_depth = kMaxJsonDepth);

// HMAC-SHA256(key, label | payload), 32 raw bytes.
std::string mac(std::string_view key, std::string_view label, std::string_view payload);

std::string seal_hello(const std::string& secret, const std::string& nonce, const Hello& h);
// Checks the MAC, then parses. Throws AuthFailure or ProtocolError.
Hello open_hello(const std::string& secret, const std::string& nonce, std::string_view body);
std::string seal_welcome(const std::string& secret, const std::string& nonce, const std::string& client_nonce,
                         const Welcome& w);
Welcome open_welcome(const std::string& secret, const std::string& nonce, const std::string& client_nonce,
                     std::string_view body);

// Both directions of one authenticated connection.
class Channel {
 public:
  enum class Side { Coordinator, Worker };
  Channel() = default;
  Channel(const std::string& secret, const std::string& nonce, const std::string& client_nonce, Side side);
  bool ready() const { return !key_.empty(); }
  // A whole frame (header, MAC, body) for the next message this side sends.
  std::string seal(const nlohmann::json& msg, std::uint32_t max_frame = kDefaultMaxFrame);
  // The same for a message already serialised (a JSON object's text).
  std::string seal_text(const std::string& payload, std::uint32_t max_frame = kDefaultMaxFrame);
  // The next message from the peer, from a frame body. Throws AuthFailure or ProtocolError.
  nlohmann::json open(std::string_view body);
  // The same, unparsed: the payload once its MAC verified (a view into body).
  std::string_view open_payload(std::string_view body);

 private:
  std::string key_;
  std::string send_label_, recv_label_;
  std::uint64_t send_seq_ = 0, recv_seq_ = 0;
};

}  // namespace kiln::proto
