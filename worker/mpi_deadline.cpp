#include "worker/mpi_deadline.hpp"

#include <thread>

namespace kiln::worker::mpi_deadline {

namespace {

// Sends are left to complete on their own (the messages are a few dozen bytes, so MPI delivers
// them eagerly); only receives are cancelled.
void cancel_pending(std::vector<MPI_Request>& reqs, const std::vector<bool>& is_recv) {
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i] == MPI_REQUEST_NULL) continue;
    if (is_recv[i]) {
      MPI_Cancel(&reqs[i]);
      MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
    } else {
      MPI_Request_free(&reqs[i]);
    }
  }
}

// Polls without sleeping for the first few milliseconds, then every 20 us. The barrier before a
// timed line depends on this: a sleep between polls lets the members leave the barrier tens of
// microseconds apart (a sleep_for(20 us) lasts about 60-80 us on Linux), and the first member to
// leave then times its peers' late start; over 20 iterations that was 1-2 us per operation, the
// whole gap to nccl-tests between 1 and 32 MiB. MPI_Barrier, which nccl-tests uses, also spins.
bool poll_until(std::vector<MPI_Request>& reqs, Clock::time_point deadline) {
  const auto spin_until = Clock::now() + std::chrono::milliseconds(5);
  for (;;) {
    int done = 0;
    MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE);
    if (done) return true;
    const auto now = Clock::now();
    if (now >= deadline) return false;
    if (now < spin_until) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace

Exchanger::Exchanger(MPI_Comm comm, int tag_base) : comm_(comm), tag_base_(tag_base) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  int flag = 0;
  int* ub = nullptr;
  MPI_Comm_get_attr(comm_, MPI_TAG_UB, &ub, &flag);
  if (flag && ub) tag_ub_ = *ub;
}

int Exchanger::next_tag() {
  const int span = tag_ub_ - tag_base_;
  const int tag = tag_base_ + (span > 0 ? seq_ % span : 0);
  ++seq_;
  return tag;
}

bool Exchanger::barrier(Clock::time_point deadline) {
  if (size_ == 1) return true;
  // ceil(log2 n) rounds; in round k each member tells rank+2^k and hears from rank-2^k.
  for (int dist = 1; dist < size_; dist *= 2) {
    const int tag = next_tag();
    char out = 1, in = 0;
    std::vector<MPI_Request> reqs(2, MPI_REQUEST_NULL);
    MPI_Irecv(&in, 1, MPI_CHAR, (rank_ - dist + size_) % size_, tag, comm_, &reqs[0]);
    MPI_Isend(&out, 1, MPI_CHAR, (rank_ + dist) % size_, tag, comm_, &reqs[1]);
    if (!poll_until(reqs, deadline)) {
      cancel_pending(reqs, {true, false});
      // Keep the sequence aligned with members that go on to later rounds.
      for (int d = dist * 2; d < size_; d *= 2) next_tag();
      return false;
    }
  }
  return true;
}

bool Exchanger::broadcast(void* data, int bytes, int root, Clock::time_point deadline) {
  const int tag = next_tag();
  if (size_ == 1) return true;
  std::vector<MPI_Request> reqs;
  std::vector<bool> is_recv;
  if (rank_ == root) {
    for (int r = 0; r < size_; ++r) {
      if (r == root) continue;
      reqs.emplace_back(MPI_REQUEST_NULL);
      is_recv.push_back(false);
      MPI_Isend(data, bytes, MPI_BYTE, r, tag, comm_, &reqs.back());
    }
  } else {
    reqs.emplace_back(MPI_REQUEST_NULL);
    is_recv.push_back(true);
    MPI_Irecv(data, bytes, MPI_BYTE, root, tag, comm_, &reqs.back());
  }
  if (poll_until(reqs, deadline)) return true;
  cancel_pending(reqs, is_recv);
  return rank_ == root;
}

std::vector<std::optional<std::vector<std::uint8_t>>> Exchanger::gather(const void* data, int bytes, int root,
                                                                        Clock::time_point deadline, int fixed_tag) {
  const int tag = fixed_tag >= 0 ? fixed_tag : next_tag();
  std::vector<std::optional<std::vector<std::uint8_t>>> out;
  if (rank_ != root) {
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Isend(data, bytes, MPI_BYTE, root, tag, comm_, &req);
    std::vector<MPI_Request> reqs{req};
    if (!poll_until(reqs, deadline)) cancel_pending(reqs, {false});
    return out;
  }
  out.resize(size_);
  std::vector<std::vector<std::uint8_t>> bufs(size_, std::vector<std::uint8_t>(bytes));
  std::vector<MPI_Request> reqs(size_, MPI_REQUEST_NULL);
  for (int r = 0; r < size_; ++r) {
    if (r != root) MPI_Irecv(bufs[r].data(), bytes, MPI_BYTE, r, tag, comm_, &reqs[r]);
  }
  const auto* self = static_cast<const std::uint8_t*>(data);
  bufs[root].assign(self, self + bytes);
  poll_until(reqs, deadline);
  for (int r = 0; r < size_; ++r) {
    if (r == root || reqs[r] == MPI_REQUEST_NULL) {
      out[r] = std::move(bufs[r]);
    } else {
      MPI_Cancel(&reqs[r]);
      MPI_Status st;
      MPI_Wait(&reqs[r], &st);
      int cancelled = 0;
      MPI_Test_cancelled(&st, &cancelled);
      if (!cancelled) out[r] = std::move(bufs[r]);  // arrived between the last test and the cancel
    }
  }
  return out;
}

bool Exchanger::swap(int peer, const void* send, void* recv, int bytes, Clock::time_point deadline) {
  const int tag = next_tag();
  std::vector<MPI_Request> reqs(2, MPI_REQUEST_NULL);
  MPI_Irecv(recv, bytes, MPI_BYTE, peer, tag, comm_, &reqs[0]);
  MPI_Isend(send, bytes, MPI_BYTE, peer, tag, comm_, &reqs[1]);
  if (poll_until(reqs, deadline)) return true;
  cancel_pending(reqs, {true, false});
  return false;
}

}  // namespace kiln::worker::mpi_deadline
