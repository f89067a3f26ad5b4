#include "common/channel.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace kiln::proto {

int json_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

nlohmann::json parse_body(std::string_view body, int max_depth) {
  if (json_depth(body, max_depth) > max_depth)
    throw ProtocolError("message nests deeper than " + std::to_string(max_depth) + " levels");
  auto j = nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw ProtocolError("frame is not valid JSON");
  if (!j.is_object()) throw ProtocolError("message is not a JSON object");
  return j;
}

std::string mac(std::string_view key, std::string_view label, std::string_view payload) {
  std::string message;
  message.reserve(label.size() + 1 + payload.size());
  message.append(label).append("|").append(payload);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
            message.size(), out, &len) ||
      len != kMacSize)
    throw ProtocolError("HMAC-SHA256 failed");
  return std::string(reinterpret_cast<const char*>(out), len);
}

namespace {

std::string frame(const std::string& mac_bytes, const std::string& payload, std::uint32_t max_frame) {
  const std::size_t n = mac_bytes.size() + payload.size();
  if (n > max_frame)
    throw ProtocolError("message of " + std::to_string(n) + " bytes exceeds the frame limit of " +
                        std::to_string(max_frame));
  return encode_header(static_cast<std::uint32_t>(n)) + mac_bytes + payload;
}

std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// Splits a body into its MAC and payload and checks the MAC; only then may the payload be parsed.
std::string_view verified(std::string_view body, std::string_view key, const std::string& label, const char* what) {
  if (body.size() <= kMacSize) throw ProtocolError(std::string(what) + " frame is too short to carry a MAC");
  const auto payload = body.substr(kMacSize);
  const auto want = mac(key, label, payload);
  if (CRYPTO_memcmp(want.data(), body.data(), kMacSize) != 0)
    throw AuthFailure(std::string(what) + " failed authentication (wrong secret, or altered, replayed or reordered)");
  return payload;
}

std::string hello_label(const std::string& nonce) { return "hello|" + nonce; }
std::string welcome_label(const std::string& nonce, const std::string& client_nonce) {
  return "welcome|" + nonce + "|" + client_nonce;
}

}  // namespace

std::string seal_hello(const std::string& secret, const std::string& nonce, const Hello& h) {
  const auto payload = dump(wrap(h));
  return frame(mac(secret, hello_label(nonce), payload), payload, kPreAuthMaxFrame);
}

Hello open_hello(const std::string& secret, const std::string& nonce, std::string_view body) {
  return unwrap<Hello>(parse_body(verified(body, secret, hello_label(nonce), "hello")));
}

std::string seal_welcome(const std::string& secret, const std::string& nonce, const std::string& client_nonce,
                         const Welcome& w) {
  const auto payload = dump(wrap(w));
  return frame(mac(secret, welcome_label(nonce, client_nonce), payload), payload, kPreAuthMaxFrame);
}

Welcome open_welcome(const std::string& secret, const std::string& nonce, const std::string& client_nonce,
                     std::string_view body) {
  return unwrap<Welcome>(parse_body(verified(body, secret, welcome_label(nonce, client_nonce), "welcome")));
}

Channel::Channel(const std::string& secret, const std::string& nonce, const std::string& client_nonce, Side side)
    : key_(mac(secret, "session|" + nonce + "|" + client_nonce, "")) {
  send_label_ = side == Side::Coordinator ? "c2w" : "w2c";
  recv_label_ = side == Side::Coordinator ? "w2c" : "c2w";
}

std::string Channel::seal(const nlohmann::json& msg, std::uint32_t max_frame) { return seal_text(dump(msg), max_frame); }

std::string Channel::seal_text(const std::string& payload, std::uint32_t max_frame) {
  auto out = frame(mac(key_, send_label_ + "|" + std::to_string(send_seq_), payload), payload, max_frame);
  ++send_seq_;
  return out;
}

std::string_view Channel::open_payload(std::string_view body) {
  const auto payload = verified(body, key_, recv_label_ + "|" + std::to_string(recv_seq_), "frame");
  ++recv_seq_;
  return payload;
}

nlohmann::json Channel::open(std::string_view body) { return parse_body(open_payload(body)); }

}  // namespace kiln::proto
