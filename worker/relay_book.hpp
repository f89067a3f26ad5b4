// The node agent's bookkeeping for the records it relays (pure: no sockets, no threads).
//
// Each local rank numbers its own records 1, 2, 3, ... on its relay; the agent puts them into its
// one connection, where the coordinator numbers records per connection and acknowledges them
// cumulatively. The book maps one numbering onto the other: when the coordinator's ack passes a
// connection seq, the local rank that sent the record learns that its own seq is on disk; a
// local rank's done names the connection seq of its last record.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

namespace kiln::worker {

class RelayBook {
 public:
  using Who = int;  // the local rank's relay (its world rank)

  // A record of `who`, its local seq, went into the connection as conn_seq. Calls come in
  // increasing conn_seq, and in increasing local seq per who.
  void relayed(Who who, std::uint64_t local_seq, std::uint64_t conn_seq);
  // A record of `who` was not relayed (it named a round that is over): it is never on disk, so
  // `who` is never told that anything from it on is acknowledged.
  void dropped(Who who, std::uint64_t local_seq);
  // The coordinator acknowledged every connection seq up to conn_seq: the local ranks whose
  // acknowledged local seq moved, with the new value.
  std::vector<std::pair<Who, std::uint64_t>> acked(std::uint64_t conn_seq);
  // The connection seq to put in the done of `who` whose own done says local_last (0: none).
  std::uint64_t done_seq(Who who, std::uint64_t local_last) const;
  // `who` is gone (its relay closed): nothing more is kept or reported for it.
  void forget(Who who);
  std::size_t pending() const { return queue_.size(); }

 private:
  struct Entry {
    std::uint64_t conn_seq;
    Who who;
    std::uint64_t local_seq;
  };
  struct Rank {
    std::uint64_t acked = 0;                 // the highest local seq told acknowledged
    std::uint64_t cap = UINT64_MAX;          // never acknowledge past this (a record was dropped)
    std::map<std::uint64_t, std::uint64_t> conn_of;  // local seq -> conn seq, not yet acknowledged
    std::pair<std::uint64_t, std::uint64_t> last{0, 0};        // the last relayed (local, conn)
    std::pair<std::uint64_t, std::uint64_t> last_acked{0, 0};  // the last acknowledged (local, conn)
  };
  std::deque<Entry> queue_;  // relayed and not yet acknowledged, by conn seq
  std::map<Who, Rank> ranks_;
};

}  // namespace kiln::worker
