// A node agent's relay bookkeeping, and the per-rank view its hello carries.
#include <catch2/catch.hpp>

#include "common/channel.hpp"
#include "common/protocol.hpp"
#include "worker/relay_book.hpp"

using namespace kiln;
using namespace kiln::proto;
using kiln::worker::RelayBook;
using nlohmann::json;
using Moves = std::vector<std::pair<int, std::uint64_t>>;

TEST_CASE("relay: the coordinator's ack reaches each local rank as its own seq", "[relay]") {
  RelayBook book;
  // Connection seqs 1..5: rank 1's records 1,2 and rank 2's 1..3, interleaved; 3 is the agent's own.
  book.relayed(1, 1, 1);
  book.relayed(2, 1, 2);
  book.relayed(2, 2, 4);
  book.relayed(1, 2, 5);
  book.relayed(2, 3, 6);
  CHECK(book.acked(1) == Moves{{1, 1}});
  CHECK(book.acked(3) == Moves{{2, 1}});  // 3 is not a relayed record: nothing more moves
  CHECK(book.acked(5) == Moves{{1, 2}, {2, 2}});
  CHECK(book.acked(5).empty());  // an ack repeated tells nothing new
  CHECK(book.acked(100) == Moves{{2, 3}});
  CHECK(book.pending() == 0);
}

TEST_CASE("relay: a done names the connection seq of the rank's last record", "[relay]") {
  RelayBook book;
  CHECK(book.done_seq(1, 0) == 0);  // no records: 0, as a rank's own done says
  book.relayed(1, 1, 10);
  book.relayed(2, 1, 11);
  book.relayed(1, 2, 12);
  book.relayed(2, 2, 13);
  CHECK(book.done_seq(1, 2) == 12);
  CHECK(book.done_seq(2, 2) == 13);
  CHECK(book.done_seq(1, 1) == 10);  // an earlier record, still pending
  book.acked(13);
  CHECK(book.done_seq(1, 2) == 12);  // acknowledged by now: the same answer
  CHECK(book.done_seq(3, 5) == 0);   // a rank the book never saw
}

TEST_CASE("relay: a record that was not relayed is never reported acknowledged", "[relay]") {
  RelayBook book;
  book.relayed(1, 1, 1);
  book.dropped(1, 2);  // a late record of a round that is over
  book.relayed(1, 3, 2);
  CHECK(book.acked(2) == Moves{{1, 1}});  // 3 is on disk but 2 never will be: the rank hears 1
}

TEST_CASE("relay: a local rank that is gone is forgotten, the others still hear their acks", "[relay]") {
  RelayBook book;
  book.relayed(1, 1, 1);
  book.relayed(2, 1, 2);
  book.forget(1);
  CHECK(book.acked(2) == Moves{{2, 1}});
  CHECK(book.done_seq(1, 1) == 0);
}

namespace {
Hello node_hello(int ranks) {
  Hello h;
  h.world_size = 100000;
  h.host = "node17";
  h.client_nonce = std::string(64, 'a');
  h.info.host = "node17";
  h.info.local_size = ranks;
  h.info.gpu_count = 8;
  h.info.gpu_models.assign(8, "NVIDIA H200");
  for (int i = 0; i < ranks; ++i) {
    h.ranks.push_back(99000 + i);
    NodeInfo mine = h.info;
    mine.world_rank = 99000 + i;
    mine.local_rank = i;
    h.rank_info.push_back(mine);
  }
  return h;
}
}  // namespace

TEST_CASE("relay: each rank of a node's hello keeps its own local rank and GPUs", "[relay][protocol]") {
  Hello h = node_hello(4);
  h.rank_info[2].gpu_count = 1;  // bound to one GPU
  h.rank_info[2].gpu_models = {"NVIDIA H200"};
  const json wire = wrap(h);
  CHECK(wire.at("rank_info")[0] == json::object());  // only what differs from info travels
  CHECK(wire.at("rank_info")[2] == json{{"gpu_count", 1}, {"gpu_models", {"NVIDIA H200"}}});
  const auto back = unwrap<Hello>(wire);
  REQUIRE(back.rank_info.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(back.info_of(i).world_rank == 99000 + static_cast<int>(i));
    CHECK(back.info_of(i).local_rank == static_cast<int>(i));
    CHECK(back.info_of(i).local_size == 4);
  }
  CHECK(back.info_of(2).gpu_count == 1);
  CHECK(back.info_of(3).gpu_count == 8);
}

TEST_CASE("relay: a rank missing from a node's hello does not shift the others' local ranks", "[relay][protocol]") {
  Hello h = node_hello(4);
  h.ranks.erase(h.ranks.begin() + 1);
  h.rank_info.erase(h.rank_info.begin() + 1);
  const auto back = unwrap<Hello>(wrap(h));
  CHECK(back.info_of(1).local_rank == 2);
  CHECK(back.info_of(2).local_rank == 3);
}

TEST_CASE("relay: a hello without rank_info speaks for every rank with its info", "[relay][protocol]") {
  Hello h = node_hello(2);
  h.rank_info.clear();
  const auto back = unwrap<Hello>(wrap(h));
  CHECK(back.rank_info.empty());
  CHECK(back.info_of(1).local_rank == 0);
}

TEST_CASE("relay: rank_info is bounded and checked", "[relay][protocol]") {
  json wire = wrap(node_hello(2));
  wire["rank_info"] = json::array({json::object()});
  CHECK_THROWS_AS(unwrap<Hello>(wire), ProtocolError);  // not one per rank
  wire["rank_info"] = json::array({json::object(), json{{"host", "elsewhere"}}});
  CHECK_THROWS_AS(unwrap<Hello>(wire), ProtocolError);  // a node field is not a rank's own
  wire["rank_info"] = json::array({json::object(), json{{"gpu_count", "many"}}});
  CHECK_THROWS_AS(unwrap<Hello>(wire), ProtocolError);
}

TEST_CASE("relay: a hello for 1,024 ranks of one node fits the pre-auth frame", "[relay][protocol]") {
  const auto sealed = seal_hello(std::string(32, 's'), std::string(64, 'n'), node_hello(1024));
  CHECK(sealed.size() <= kPreAuthMaxFrame + kHeaderSize);
}
