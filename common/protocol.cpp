#include "common/protocol.hpp"

#include <algorithm>
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
    case MsgType::Records: return "records";
    case MsgType::Ack: return "ack";
    case MsgType::Done: return "done";
    case MsgType::Heartbeat: return "heartbeat";
    case MsgType::Error: return "error";
    case MsgType::Bye: return "bye";
  }
  return "?";
}

MsgType msg_type_from_string(const std::string& s) {
  for (auto t : {MsgType::Challenge, MsgType::Hello, MsgType::Welcome, MsgType::Round, MsgType::Records,
                 MsgType::Ack, MsgType::Done, MsgType::Heartbeat, MsgType::Error, MsgType::Bye})
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

namespace {
// The fields in which one rank of a node may differ from the node agent's info: its place on the
// node and the GPUs bound to it. world_rank is the rank itself and local_rank defaults to its index.
constexpr const char* kRankFields[] = {"local_rank", "gpu_count", "gpu_models", "gpu_skip_reason", "hca"};

nlohmann::json rank_diff(const NodeInfo& base, const NodeInfo& mine, std::size_t index) {
  const nlohmann::json b = base, m = mine;
  nlohmann::json d = nlohmann::json::object();
  for (const char* key : kRankFields)
    if (m.at(key) != b.at(key)) d[key] = m.at(key);
  if (mine.local_rank == static_cast<int>(index)) d.erase("local_rank");
  else d["local_rank"] = mine.local_rank;
  return d;
}

NodeInfo rank_from_diff(const NodeInfo& base, const nlohmann::json& d, int rank, std::size_t index) {
  if (!d.is_object() || d.size() > std::size(kRankFields)) throw ProtocolError("hello rank_info entries must be objects");
  for (const auto& item : d.items()) {
    const std::string key = item.key();
    if (std::find_if(std::begin(kRankFields), std::end(kRankFields), [&](const char* k) { return key == k; }) ==
        std::end(kRankFields))
      throw ProtocolError("hello rank_info names an unknown field");
  }
  nlohmann::json merged = base;
  merged["world_rank"] = rank;
  merged["local_rank"] = index;
  for (const auto& [key, value] : d.items()) merged[key] = value;
  return merged.get<NodeInfo>();
}
}  // namespace

void to_json(nlohmann::json& j, const Hello& m) {
  j = {{"version", m.version},           {"ranks", m.ranks}, {"world_size", m.world_size}, {"host", m.host},
       {"client_nonce", m.client_nonce}, {"info", m.info}};
  if (m.rank_info.empty()) return;
  auto& out = j["rank_info"] = nlohmann::json::array();
  for (std::size_t i = 0; i < m.rank_info.size(); ++i) out.push_back(rank_diff(m.info, m.rank_info[i], i));
}
void from_json(const nlohmann::json& j, Hello& m) {
  m.version = int_at<int>(j, "version");
  const auto& ranks = j.at("ranks");
  if (!ranks.is_array() || ranks.empty() || ranks.size() > kMaxRanksPerConnection)
    throw ProtocolError("hello ranks must be an array of 1-" + std::to_string(kMaxRanksPerConnection) + " ranks");
  m.ranks.clear();
  for (const auto& r : ranks) m.ranks.push_back(int_value<int>(r, "a hello rank"));
  auto sorted = m.ranks;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) throw ProtocolError("hello names a rank twice");
  m.world_size = int_at<int>(j, "world_size");
  j.at("host").get_to(m.host);
  j.at("client_nonce").get_to(m.client_nonce);
  if (m.host.empty() || m.host.size() > 255) throw ProtocolError("hello host must be 1-255 characters");
  for (char c : m.host)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_')
      throw ProtocolError("hello host is not a host name");
  if (m.client_nonce.size() != 64) throw ProtocolError("hello client_nonce must be 32 bytes of hex");
  m.info = j.value("info", NodeInfo{});
  m.rank_info.clear();
  const auto it = j.find("rank_info");
  if (it == j.end()) return;
  if (!it->is_array() || it->size() != m.ranks.size()) throw ProtocolError("hello rank_info must match its ranks");
  for (std::size_t i = 0; i < m.ranks.size(); ++i) m.rank_info.push_back(rank_from_diff(m.info, (*it)[i], m.ranks[i], i));
}

void to_json(nlohmann::json& j, const Welcome& m) {
  j = {{"run_id", m.run_id}, {"heartbeat_s", m.heartbeat_s}};
  if (!m.ranks.empty()) j["ranks"] = m.ranks;
}
void from_json(const nlohmann::json& j, Welcome& m) {
  j.at("run_id").get_to(m.run_id);
  m.heartbeat_s = j.value("heartbeat_s", 2.0);
  if (!std::isfinite(m.heartbeat_s) || m.heartbeat_s < 0.05 || m.heartbeat_s > 600)
    throw ProtocolError("welcome heartbeat_s out of bounds");
  if (auto it = j.find("ranks"); it != j.end()) {
    it->get_to(m.ranks);
    if (m.ranks.size() > kMaxRanksPerConnection) throw ProtocolError("welcome names too many ranks");
    for (int r : m.ranks)
      if (r < 0) throw ProtocolError("welcome names a negative rank");
  }
}

void to_json(nlohmann::json& j, const TestSpec& m) { j = {{"key", m.key}, {"params", m.params}}; }
void from_json(const nlohmann::json& j, TestSpec& m) {
  j.at("key").get_to(m.key);
  m.params = j.value("params", nlohmann::json::object());
  if (!m.params.is_object()) throw ProtocolError("test params must be an object");
}

std::string encode_group(std::size_t index, const std::vector<int>& members) {
  std::string out = "[" + std::to_string(index) + ",[";
  bool first = true;
  const auto put = [&](const std::string& s) {
    if (!first) out += ",";
    out += s;
    first = false;
  };
  for (std::size_t i = 0; i < members.size();) {
    std::size_t j = i;
    while (j + 1 < members.size() && static_cast<std::int64_t>(members[j + 1]) == members[j] + std::int64_t{1}) ++j;
    if (j - i >= 2) {
      put("[" + std::to_string(members[i]) + "," + std::to_string(members[j]) + "]");
    } else {
      for (std::size_t k = i; k <= j; ++k) put(std::to_string(members[k]));
    }
    i = j + 1;
  }
  return out + "]]";
}

std::string round_payload(const Round& r, const std::vector<std::size_t>& which, const std::vector<std::string>& encoded) {
  nlohmann::json head = {{"type", "round"}, {"id", r.id}, {"tests", r.tests}, {"deadline_s", r.deadline_s},
                         {"group_count", r.groups.size()}};
  std::string out = head.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out.pop_back();  // the closing brace: the groups follow
  out += ",\"groups\":[";
  for (std::size_t i = 0; i < which.size(); ++i) out += (i ? "," : "") + encoded.at(which[i]);
  return out + "]}";
}

void to_json(nlohmann::json& j, const Round& m) {
  std::vector<std::size_t> all;
  std::vector<std::string> encoded;
  for (std::size_t g = 0; g < m.groups.size(); ++g) {
    encoded.push_back(encode_group(g, m.groups[g]));
    if (!m.groups[g].empty()) all.push_back(g);
  }
  j = nlohmann::json::parse(round_payload(m, all, encoded));
  j.erase("type");
}

namespace {
// A group's members from the wire: ranks and [first, last] runs, counted against the round's bound
// before anything is expanded.
std::vector<int> decode_members(const nlohmann::json& members, std::size_t& budget) {
  if (!members.is_array()) throw ProtocolError("a round group's members must be an array");
  std::vector<int> out;
  for (const auto& m : members) {
    int first = 0, last = 0;
    if (m.is_array()) {
      if (m.size() != 2) throw ProtocolError("a run of ranks must be [first, last]");
      first = int_value<int>(m[0], "a run's first rank");
      last = int_value<int>(m[1], "a run's last rank");
      if (last < first) throw ProtocolError("a run of ranks ends before it starts");
    } else {
      first = last = int_value<int>(m, "a group member");
    }
    const auto n = static_cast<std::size_t>(static_cast<std::int64_t>(last) - first + 1);
    if (n > budget) throw ProtocolError("a round's groups hold more than " + std::to_string(kMaxGroupMembers) + " ranks");
    budget -= n;
    for (std::int64_t r = first; r <= last; ++r) out.push_back(static_cast<int>(r));
  }
  return out;
}
}  // namespace

void from_json(const nlohmann::json& j, Round& m) {
  m.id = int_at<std::int64_t>(j, "id");
  j.at("tests").get_to(m.tests);
  const auto count = int_or<std::size_t>(j, "group_count", 0);
  if (count > kMaxGroups) throw ProtocolError("a round may have at most " + std::to_string(kMaxGroups) + " groups");
  m.groups.assign(count, {});
  std::size_t budget = kMaxGroupMembers;
  if (auto g = j.find("groups"); g != j.end()) {
    if (!g->is_array()) throw ProtocolError("round groups must be an array");
    for (const auto& entry : *g) {
      if (!entry.is_array() || entry.size() != 2) throw ProtocolError("a round group must be [index, members]");
      const auto index = int_value<std::size_t>(entry[0], "a group index");
      if (index >= count) throw ProtocolError("a round group's index is not below group_count");
      m.groups[index] = decode_members(entry[1], budget);
    }
  }
  m.deadline_s = j.value("deadline_s", 120.0);
  if (!std::isfinite(m.deadline_s) || m.deadline_s <= 0 || m.deadline_s > 7 * 86400.0)
    throw ProtocolError("round deadline_s must be between 0 and 604800 seconds");
}

std::string record_line(const Record& r) {
  return nlohmann::json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string encode_records(std::uint64_t last_seq, const std::vector<std::string>& lines) {
  std::string out = R"({"type":"records","last_seq":)" + std::to_string(last_seq) + "}";
  std::size_t n = out.size();
  for (const auto& l : lines) n += l.size() + 1;
  out.reserve(n);
  for (const auto& l : lines) out.append("\n").append(l);
  return out;
}

namespace {
// The lines after a batch's header: each one record, parsed depth-limited and type-checked.
Records decode_records(const nlohmann::json& header, std::string_view rest) {
  if (type_of(header) != MsgType::Records) throw ProtocolError("a message of several lines must be a 'records' batch");
  Records b;
  try {
    b.last_seq = int_at<std::uint64_t>(header, "last_seq");
  } catch (const std::exception& e) {
    throw ProtocolError(std::string("malformed 'records' header: ") + e.what());
  }
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    const auto line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    if (b.records.size() >= kMaxRecordsPerBatch)
      throw ProtocolError("batch holds more than " + std::to_string(kMaxRecordsPerBatch) + " records");
    try {
      b.records.push_back(parse_body(line).get<Record>());
    } catch (const ProtocolError& e) {
      throw ProtocolError("record " + std::to_string(b.records.size() + 1) + " of a batch: " + e.what());
    } catch (const std::exception& e) {
      throw ProtocolError("record " + std::to_string(b.records.size() + 1) + " of a batch is malformed: " + e.what());
    }
    b.lines.emplace_back(line);
  }
  if (b.records.empty()) throw ProtocolError("empty batch of records");
  if (b.last_seq < b.records.size()) throw ProtocolError("batch last_seq is below its number of records");
  return b;
}
}  // namespace

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

void to_json(nlohmann::json& j, const RankProgress& m) {
  j = {{"rank", m.rank}, {"check", m.check}, {"round", m.round}, {"ops", m.ops}, {"waiting_on", m.waiting_on}, {"stalled_s", m.stalled_s}};
}
void from_json(const nlohmann::json& j, RankProgress& m) {
  m.rank = int_at<int>(j, "rank");
  m.check = j.value("check", std::string());
  if (m.check.size() > kMaxCheckKey) throw ProtocolError("progress check key too long");
  m.round = int_or<std::int64_t>(j, "round", -1);
  m.ops = int_or<std::uint64_t>(j, "ops", 0);
  m.waiting_on = int_or<int>(j, "waiting_on", -1);
  m.stalled_s = j.value("stalled_s", 0.0);
  if (!std::isfinite(m.stalled_s) || m.stalled_s < 0) throw ProtocolError("progress stalled_s out of bounds");
  if (m.rank < 0 || m.waiting_on < -1) throw ProtocolError("progress rank or peer out of bounds");
}

void to_json(nlohmann::json& j, const Heartbeat& m) {
  j = {{"ts", m.ts}};
  if (!m.progress.empty()) j["progress"] = m.progress;
}
void from_json(const nlohmann::json& j, Heartbeat& m) {
  m.ts = j.value("ts", 0.0);
  const auto it = j.find("progress");
  if (it == j.end()) return;  // a worker from before progress
  if (!it->is_array() || it->size() > kMaxRanksPerConnection) throw ProtocolError("heartbeat progress is not a list of ranks");
  m.progress = it->get<std::vector<RankProgress>>();
}

void to_json(nlohmann::json& j, const Error& m) { j = {{"code", m.code}, {"message", m.message}}; }
void from_json(const nlohmann::json& j, Error& m) {
  j.at("code").get_to(m.code);
  m.message = j.value("message", std::string{});
}

void to_json(nlohmann::json& j, const Bye& m) {
  j = {{"reason", m.reason}};
  if (m.restart) j["restart"] = true;
}
void from_json(const nlohmann::json& j, Bye& m) {
  m.reason = j.value("reason", std::string{});
  m.restart = j.value("restart", false);
}

WorkerMessage decode_worker_message(const nlohmann::json& j) {
  switch (type_of(j)) {
    case MsgType::Done: return unwrap<Done>(j);
    case MsgType::Heartbeat: return unwrap<Heartbeat>(j);
    case MsgType::Error: return unwrap<Error>(j);
    case MsgType::Bye: return unwrap<Bye>(j);
    default: throw ProtocolError("unexpected '" + to_string(type_of(j)) + "' from a worker");
  }
}

WorkerMessage decode_worker_payload(std::string_view payload) {
  const auto nl = payload.find('\n');
  if (nl == std::string_view::npos) return decode_worker_message(parse_body(payload));
  return decode_records(parse_body(payload.substr(0, nl)), payload.substr(nl + 1));
}

}  // namespace kiln::proto
