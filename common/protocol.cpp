#include "common/protocol.hpp"

#include <cctype>
#include <cmath>

#include "common/channel.hpp"

namespace kiln::proto {

std::string encode_header(std::uint32_t n) {
  std::string h(4, '\0');
  h[0] = static_cast<char>((n >> 24) & 0xff);
  h[1] = static_cast<char>((n >> 16) & 0xff);
  h[2] = static_cast<char>((n >> 8) & 0xff);
  h[3] = static_cast<char>(n & 0xff);
  return h;
}

std::uint32_t decode_header(const unsigned char* b) {
  return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) |
         std::uint32_t{b[3]};
}

std::string encode_frame(const nlohmann::json& msg, std::uint32_t max_frame) {
  std::string body = msg.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (body.size() > max_frame)
    throw ProtocolError("message of " + std::to_string(body.size()) + " bytes exceeds the frame limit of " +
                        std::to_string(max_frame));
  return encode_header(static_cast<std::uint32_t>(body.size())) + body;
}

void FrameDecoder::feed(std::string_view bytes) {
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  buf_.append(bytes.data(), bytes.size());
}

std::optional<nlohmann::json> FrameDecoder::next() {
  auto body = next_body();
  if (!body) return std::nullopt;
  return parse_body(*body);
}

std::optional<std::string> FrameDecoder::next_body() {
  if (buffered() < kHeaderSize) return std::nullopt;
  const auto len = decode_header(reinterpret_cast<const unsigned char*>(buf_.data() + pos_));
  if (len > max_frame_)
    throw ProtocolError("frame of " + std::to_string(len) + " bytes exceeds the limit of " +
                        std::to_string(max_frame_));
  if (len == 0) throw ProtocolError("empty frame");
  if (buffered() < kHeaderSize + len) return std::nullopt;
  std::string body(buf_.data() + pos_ + kHeaderSize, len);
  pos_ += kHeaderSize + len;
  if (pos_ > 65536 && pos_ * 2 > buf_.size()) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  return body;
}

std::string to_string(MsgType t) {
  switch (t) {
    case MsgType::Challenge: return "challenge";
    case MsgType::Hello: return "hello";
    case MsgType::Welcome: return "welcome";
    case MsgType::Round: return "round";
    case MsgType::Result: return "result";
    case MsgType::End: return "end";
    case MsgType::Ack: return "ack";
    case MsgType::Done: return "done";
    case MsgType::Heartbeat: return "heartbeat";
    case MsgType::Error: return "error";
    case MsgType::Bye: return "bye";
  }
  return "?";
}

MsgType msg_type_from_string(const std::string& s) {
  for (auto t : {MsgType::Challenge, MsgType::Hello, MsgType::Welcome, MsgType::Round, MsgType::Result,
                 MsgType::End, MsgType::Ack, MsgType::Done, MsgType::Heartbeat, MsgType::Error, MsgType::Bye})
    if (to_string(t) == s) return t;
  throw ProtocolError("unknown message type '" + s + "'");
}

MsgType type_of(const nlohmann::json& msg) {
  if (!msg.is_object()) throw ProtocolError("message is not a JSON object");
  auto it = msg.find("type");
  if (it == msg.end() || !it->is_string()) throw ProtocolError("message has no string 'type'");
  return msg_type_from_string(it->get<std::string>());
}

void to_json(nlohmann::json& j, const Challenge& m) { j = {{"version", m.version}, {"nonce", m.nonce}}; }
void from_json(const nlohmann::json& j, Challenge& m) {
  m.version = int_at<int>(j, "version");
  j.at("nonce").get_to(m.nonce);
}

void to_json(nlohmann::json& j, const Hello& m) {
  j = {{"version", m.version},           {"rank", m.rank}, {"world_size", m.world_size}, {"host", m.host},
       {"client_nonce", m.client_nonce}, {"info", m.info}};
}
void from_json(const nlohmann::json& j, Hello& m) {
  m.version = int_at<int>(j, "version");
  m.rank = int_at<int>(j, "rank");
  m.world_size = int_at<int>(j, "world_size");
  j.at("host").get_to(m.host);
  j.at("client_nonce").get_to(m.client_nonce);
  if (m.host.empty() || m.host.size() > 255) throw ProtocolError("hello host must be 1-255 characters");
  for (char c : m.host)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_')
      throw ProtocolError("hello host is not a host name");
  if (m.client_nonce.size() != 64) throw ProtocolError("hello client_nonce must be 32 bytes of hex");
  m.info = j.value("info", NodeInfo{});
}

void to_json(nlohmann::json& j, const Welcome& m) {
  j = {{"run_id", m.run_id}, {"heartbeat_s", m.heartbeat_s}};
}
void from_json(const nlohmann::json& j, Welcome& m) {
  j.at("run_id").get_to(m.run_id);
  m.heartbeat_s = j.value("heartbeat_s", 2.0);
  if (!std::isfinite(m.heartbeat_s) || m.heartbeat_s < 0.05 || m.heartbeat_s > 600)
    throw ProtocolError("welcome heartbeat_s out of bounds");
}

void to_json(nlohmann::json& j, const TestSpec& m) { j = {{"key", m.key}, {"params", m.params}}; }
void from_json(const nlohmann::json& j, TestSpec& m) {
  j.at("key").get_to(m.key);
  m.params = j.value("params", nlohmann::json::object());
  if (!m.params.is_object()) throw ProtocolError("test params must be an object");
}

void to_json(nlohmann::json& j, const Round& m) {
  j = {{"id", m.id}, {"tests", m.tests}, {"groups", m.groups}, {"deadline_s", m.deadline_s}};
}
void from_json(const nlohmann::json& j, Round& m) {
  m.id = int_at<std::int64_t>(j, "id");
  j.at("tests").get_to(m.tests);
  m.groups.clear();
  if (auto g = j.find("groups"); g != j.end()) {
    if (!g->is_array()) throw ProtocolError("round groups must be an array");
    for (const auto& group : *g) {
      if (!group.is_array()) throw ProtocolError("a round group must be an array");
      auto& out = m.groups.emplace_back();
      for (const auto& r : group) out.push_back(int_value<int>(r, "a group member"));
    }
  }
  m.deadline_s = j.value("deadline_s", 120.0);
  if (!std::isfinite(m.deadline_s) || m.deadline_s <= 0 || m.deadline_s > 7 * 86400.0)
    throw ProtocolError("round deadline_s must be between 0 and 604800 seconds");
}

void to_json(nlohmann::json& j, const ResultMsg& m) { j = {{"seq", m.seq}, {"result", m.result}}; }
void from_json(const nlohmann::json& j, ResultMsg& m) {
  m.seq = int_at<std::uint64_t>(j, "seq");
  j.at("result").get_to(m.result);
}

void to_json(nlohmann::json& j, const EndMsg& m) { j = {{"seq", m.seq}, {"end", m.end}}; }
void from_json(const nlohmann::json& j, EndMsg& m) {
  m.seq = int_at<std::uint64_t>(j, "seq");
  j.at("end").get_to(m.end);
}

void to_json(nlohmann::json& j, const Ack& m) { j = {{"seq", m.seq}}; }
void from_json(const nlohmann::json& j, Ack& m) { m.seq = int_at<std::uint64_t>(j, "seq"); }

void to_json(nlohmann::json& j, const Done& m) {
  j = {{"round_id", m.round_id}, {"rank", m.rank}, {"last_seq", m.last_seq}};
}
void from_json(const nlohmann::json& j, Done& m) {
  m.round_id = int_at<std::int64_t>(j, "round_id");
  m.rank = int_at<int>(j, "rank");
  m.last_seq = int_or<std::uint64_t>(j, "last_seq", 0);
}

void to_json(nlohmann::json& j, const Heartbeat& m) { j = {{"ts", m.ts}}; }
void from_json(const nlohmann::json& j, Heartbeat& m) { m.ts = j.value("ts", 0.0); }

void to_json(nlohmann::json& j, const Error& m) { j = {{"code", m.code}, {"message", m.message}}; }
void from_json(const nlohmann::json& j, Error& m) {
  j.at("code").get_to(m.code);
  m.message = j.value("message", std::string{});
}

void to_json(nlohmann::json& j, const Bye& m) { j = {{"reason", m.reason}}; }
void from_json(const nlohmann::json& j, Bye& m) { m.reason = j.value("reason", std::string{}); }

WorkerMessage decode_worker_message(const nlohmann::json& j) {
  switch (type_of(j)) {
    case MsgType::Result: return unwrap<ResultMsg>(j);
    case MsgType::End: return unwrap<EndMsg>(j);
    case MsgType::Done: return unwrap<Done>(j);
    case MsgType::Heartbeat: return unwrap<Heartbeat>(j);
    case MsgType::Error: return unwrap<Error>(j);
    case MsgType::Bye: return unwrap<Bye>(j);
    default: throw ProtocolError("unexpected '" + to_string(type_of(j)) + "' from a worker");
  }
}

}  // namespace kiln::proto
