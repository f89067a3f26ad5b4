// MPI exchanges that give up at a deadline. The group tests use them for everything that crosses
// ranks outside the measured operation (NCCL id, barriers before timing, QP details, the final
// state report), so that one stuck or absent rank cannot hold the others forever.
//
// Only point-to-point messages are used: an unmatched receive can be cancelled at the deadline,
// which a pending non-blocking collective cannot. Tags come from a per-exchange sequence number that
// every member advances in the same order, so a late message from an abandoned exchange cannot be
// taken for the answer to a later one.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include <mpi.h>

namespace kiln::worker::mpi_deadline {

using Clock = std::chrono::steady_clock;

class Exchanger {
 public:
  Exchanger(MPI_Comm comm, int tag_base = 0x4b00);
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Dissemination barrier: true when every member arrived before `deadline`.
  bool barrier(Clock::time_point deadline);

  // root sends `bytes` to every member; returns false on the members that got nothing in time.
  bool broadcast(void* data, int bytes, int root, Clock::time_point deadline);

  // Every member sends `bytes` to root. At the root, slot i holds member i's bytes, or is empty
  // when member i did not answer in time (the root's own slot is its own data). Elsewhere empty.
  // `tag` >= 0 uses that tag instead of the sequence: for the one closing exchange of a test,
  // which members reach after different numbers of exchanges when something failed.
  std::vector<std::optional<std::vector<std::uint8_t>>> gather(const void* data, int bytes, int root,
                                                               Clock::time_point deadline, int tag = -1);
  static constexpr int kFinalTag = 0x4aff;

  // Swaps `bytes` with one peer. False when the peer's part did not arrive in time.
  bool swap(int peer, const void* send, void* recv, int bytes, Clock::time_point deadline);

 private:
  int next_tag();
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  int tag_base_;
  int seq_ = 0;
  int tag_ub_ = 32767;
};

}  // namespace kiln::worker::mpi_deadline
