// The wire protocol between kiln-worker and the coordinator. See docs/protocol.md.
//
// A frame is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON, one message per
// frame. Every message is an object with a "type". Frames over the maximum size are refused before
// their body is read, so a peer cannot make the coordinator buffer without bound.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/types.hpp"

namespace kiln::proto {

inline constexpr int kProtocolVersion = 3;  // 2: MACs on every frame; 3: record batches, several ranks per connection
inline constexpr std::uint32_t kDefaultMaxFrame = 4u << 20;  // 4 MiB
inline constexpr std::size_t kHeaderSize = 4;

struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Serialises a message into one frame. Throws ProtocolError when it would exceed max_frame.
std::string encode_frame(const nlohmann::json& msg, std::uint32_t max_frame = kDefaultMaxFrame);
std::string encode_header(std::uint32_t length);
std::uint32_t decode_header(const unsigned char* four_bytes);

// Incremental decoder for a byte stream. feed() bytes as they arrive, then call next() until it
// returns nullopt. Throws ProtocolError on an oversize frame, invalid JSON or a non-object message;
// the connection should then be closed (the stream cannot be resynchronised).
class FrameDecoder {
 public:
  explicit FrameDecoder(std::uint32_t max_frame = kDefaultMaxFrame) : max_frame_(max_frame) {}
  void feed(std::string_view bytes);
  // The next whole frame's body (bytes after the length), bounded by max_frame.
  std::optional<std::string> next_body();
  // The next body parsed as a JSON object (depth-limited, common/channel.hpp).
  std::optional<nlohmann::json> next();
  std::size_t buffered() const { return buf_.size() - pos_; }
  // Raised once the peer has authenticated (frames before that are capped much lower).
  void set_max_frame(std::uint32_t m) { max_frame_ = m; }

 private:
  std::uint32_t max_frame_;
  std::string buf_;
  std::size_t pos_ = 0;
};

enum class MsgType { Challenge, Hello, Welcome, Round, Records, Ack, Done, Heartbeat, Error, Bye };
std::string to_string(MsgType t);
MsgType msg_type_from_string(const std::string& s);  // throws ProtocolError
// The type of a decoded message; throws ProtocolError when missing or unknown.
MsgType type_of(const nlohmann::json& msg);

// coordinator -> worker, first frame on a connection.
struct Challenge {
  static constexpr MsgType kType = MsgType::Challenge;
  int version = kProtocolVersion;
  std::string nonce;  // hex, 32 random bytes
};

// The most ranks one connection may carry (a node agent speaks for its node's ranks).
inline constexpr std::size_t kMaxRanksPerConnection = 1024;

// worker -> coordinator: who I am. The frame's MAC (common/channel.hpp) proves the worker knows the
// campaign secret and covers every field. One connection carries the ranks it names, all on one
// host (a kiln-worker rank names itself; a node agent names every rank of its node).
struct Hello {
  static constexpr MsgType kType = MsgType::Hello;
  int version = kProtocolVersion;
  std::vector<int> ranks;  // distinct, 1..kMaxRanksPerConnection of them
  int world_size = 0;
  std::string host;
  std::string client_nonce;
  NodeInfo info;  // what the rank knows of its node (GPUs, versions)
  // From a node agent: each rank's own view, parallel to ranks (empty: info speaks for every rank).
  // On the wire only what differs from info, so that 1,024 ranks fit the pre-auth frame.
  std::vector<NodeInfo> rank_info;
  // What the coordinator keeps for ranks[i].
  const NodeInfo& info_of(std::size_t i) const { return rank_info.empty() ? info : rank_info[i]; }
};

// coordinator -> worker: accepted. The frame's MAC proves the coordinator knows the secret too.
struct Welcome {
  static constexpr MsgType kType = MsgType::Welcome;
  std::string run_id;
  double heartbeat_s = 2.0;
  // The campaign ranks of the hello's ranks, in its order, when they are not the MPI ranks it
  // gave: after a restart that lost a node, the new step numbers its ranks afresh, and the
  // coordinator names each by the host and local rank it had before. Empty: the hello's own.
  std::vector<int> ranks;
};

struct TestSpec {
  std::string key;
  nlohmann::json params = nlohmann::json::object();
  bool operator==(const TestSpec&) const = default;
};

// coordinator -> every worker: run these tests now. For group tests, groups partition (a subset
// of) the world ranks; ranks in no group sit the round out. Empty groups = one group of all ranks.
// On the wire the groups are sparse and compact: "group_count", and "groups" as [index, members]
// pairs with runs of ranks as [first, last]; a connection is sent only the groups its ranks are in
// (round_payload), so a round costs O(ranks) to send, not O(ranks x connections).
struct Round {
  static constexpr MsgType kType = MsgType::Round;
  std::int64_t id = 0;
  std::vector<TestSpec> tests;
  std::vector<std::vector<int>> groups;
  double deadline_s = 120.0;  // per test
};

inline constexpr std::size_t kMaxGroups = 1000000;
inline constexpr std::size_t kMaxGroupMembers = 4000000;  // over all groups of a round
// One group as it travels: "[index,[members]]", runs of three or more ranks as [first,last].
std::string encode_group(std::size_t index, const std::vector<int>& members);
// A round message carrying only the groups whose indexes are in `which` (encoded[i] is group i's
// encode_group text): what one connection is sent.
std::string round_payload(const Round& r, const std::vector<std::size_t>& which, const std::vector<std::string>& encoded);

// worker -> coordinator: a batch of records (measurements, and check ends after a check's last
// result). Records are numbered per connection, 1, 2, 3, ...; a batch holds last_seq-K+1..last_seq.
// On the wire it is not one JSON object but lines: the header {"type":"records","last_seq":N},
// then one line per record, each exactly the line results.jsonl will hold (common/types.hpp's
// Record). The coordinator checks each line and stores the text it received, not a re-encoding.
struct Records {
  static constexpr MsgType kType = MsgType::Records;
  std::uint64_t last_seq = 0;
  std::vector<Record> records;
  std::vector<std::string> lines;  // records[i] as received
};
inline constexpr std::size_t kMaxRecordsPerBatch = 65536;
// The payload of a batch (header and lines, no frame): what Channel::seal_text takes.
std::string encode_records(std::uint64_t last_seq, const std::vector<std::string>& lines);
// One record as the line a batch carries and results.jsonl keeps.
std::string record_line(const Record& r);

// coordinator -> worker: every record numbered up to seq is on disk.
struct Ack {
  static constexpr MsgType kType = MsgType::Ack;
  std::uint64_t seq = 0;
};

// worker -> coordinator: this rank (one of the connection's) finished the round.
struct Done {
  static constexpr MsgType kType = MsgType::Done;
  std::int64_t round_id = 0;
  int rank = -1;
  std::uint64_t last_seq = 0;  // the seq of this rank's last result in the round (0 if none)
};

// What one rank's MPI thread was doing when a heartbeat left: the check and round it is in, the
// operations it completed in that check, and the group peer (index in the group) it is waiting
// on, -1 when unknown. The coordinator names the members a timed-out group was waiting for.
struct RankProgress {
  int rank = -1;
  std::string check;  // empty: between checks
  std::int64_t round = -1;
  std::uint64_t ops = 0;
  int waiting_on = -1;
  double stalled_s = 0.0;  // seconds in the check its MPI thread was not running at all (stopped, starved)
  bool operator==(const RankProgress&) const = default;
};
inline constexpr std::size_t kMaxCheckKey = 128;

struct Heartbeat {
  static constexpr MsgType kType = MsgType::Heartbeat;
  double ts = 0.0;
  // One entry per rank the connection speaks for; absent from older workers.
  std::vector<RankProgress> progress;
};

struct Error {
  static constexpr MsgType kType = MsgType::Error;
  std::string code;  // e.g. auth_failed, bad_message, version_mismatch
  std::string message;
};

// Either side: the conversation is over. From the coordinator: finish and exit.
struct Bye {
  static constexpr MsgType kType = MsgType::Bye;
  std::string reason;
  // From the coordinator: exit now with kRestartExitCode (without MPI_Finalize, whose MPI state
  // may be broken); the workers are launched again and the campaign goes on.
  bool restart = false;
};
// A worker told to restart exits with this code: the SLURM batch script runs srun again on it.
inline constexpr int kRestartExitCode = 75;

#define KILN_PROTO_JSON(T)                         \
  void to_json(nlohmann::json& j, const T& m);     \
  void from_json(const nlohmann::json& j, T& m);
KILN_PROTO_JSON(Challenge)
KILN_PROTO_JSON(Hello)
KILN_PROTO_JSON(Welcome)
KILN_PROTO_JSON(TestSpec)
KILN_PROTO_JSON(Round)
KILN_PROTO_JSON(Ack)
KILN_PROTO_JSON(Done)
KILN_PROTO_JSON(RankProgress)
KILN_PROTO_JSON(Heartbeat)
KILN_PROTO_JSON(Error)
KILN_PROTO_JSON(Bye)
#undef KILN_PROTO_JSON

// A message as JSON with its "type" set.
template <class M>
nlohmann::json wrap(const M& m) {
  nlohmann::json j = m;
  j["type"] = to_string(M::kType);
  return j;
}

// Parses a message of the expected type; throws ProtocolError with the field at fault otherwise.
template <class M>
M unwrap(const nlohmann::json& j) {
  if (type_of(j) != M::kType)
    throw ProtocolError("expected a '" + to_string(M::kType) + "' message, got '" +
                        j.value("type", std::string("?")) + "'");
  try {
    return j.get<M>();
  } catch (const std::exception& e) {  // nlohmann's type errors and our own value checks alike
    throw ProtocolError("malformed '" + to_string(M::kType) + "' message: " + e.what());
  }
}

// What a worker may send once it is authenticated, decoded once at the server's edge.
using WorkerMessage = std::variant<Records, Done, Heartbeat, Error, Bye>;
// Throws ProtocolError for any other type or a malformed message.
WorkerMessage decode_worker_message(const nlohmann::json& j);
// A frame's payload (after its MAC): a batch of records, or one JSON message. Throws
// ProtocolError; every JSON text in it is depth-limited before it is parsed.
WorkerMessage decode_worker_payload(std::string_view payload);

}  // namespace kiln::proto
