#include "worker/mpi_wait.hpp"

#include "worker/progress.hpp"

#include <sched.h>

#include <memory>
#include <mutex>
#include <stdexcept>

namespace kiln::worker {

namespace {
std::mutex graveyard_mu;
std::vector<std::shared_ptr<void>> graveyard;  // process-wide, as the MPI state it stands for
}  // namespace

void abandon(std::shared_ptr<void> keep) {
  std::lock_guard lk(graveyard_mu);
  graveyard.push_back(std::move(keep));
}

bool mpi_state_untrusted() {
  std::lock_guard lk(graveyard_mu);
  return !graveyard.empty();
}

void poll_request(Context& ctx, MPI_Request& req, const std::function<void()>& on_abandon) {
  int done = 0;
  for (unsigned spins = 0;; ++spins) {
    if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) throw std::runtime_error("MPI operation failed");
    if (done) {
      if (ctx.progress) ctx.progress->op_done();
      return;
    }
    if ((spins & 63) == 0 && ctx.progress) ctx.progress->tick(std::chrono::steady_clock::now());
    if ((spins & 63) == 0 && ctx.expired()) {
      on_abandon();
      throw DeadlineExceeded("the group did not finish the operation before the deadline");
    }
    sched_yield();
  }
}

namespace {

// The first member whose token has not arrived: the one the roll call is waiting on.
int first_absent(std::vector<MPI_Request>& reqs, const std::vector<std::pair<std::size_t, std::size_t>>& recvs) {
  for (const auto& [at, member] : recvs) {
    int flag = 0;
    if (MPI_Request_get_status(reqs[at], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag) return static_cast<int>(member);
  }
  return -1;
}

}  // namespace

// A non-blocking roll call over the group before the (blocking) communicator creation: every
// member sends a token to every other and waits for theirs until the deadline. A dead or hung
// member then costs this group a TIMEOUT instead of hanging it, and other groups never notice.
bool members_alive(int me, const std::vector<int>& members, std::int64_t round_id, std::size_t index,
                   std::chrono::steady_clock::time_point deadline, Progress* progress) {
  const int tag = static_cast<int>(1000 + (round_id * 16 + static_cast<std::int64_t>(index)) % 20000);
  auto tokens = std::make_shared<std::vector<int>>(members.size() * 2, 1);
  std::vector<MPI_Request> reqs;
  std::vector<std::pair<std::size_t, std::size_t>> recvs;  // (index in reqs, member index)
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i] == me) continue;
    MPI_Request r;
    MPI_Irecv(&(*tokens)[2 * i], 1, MPI_INT, members[i], tag, MPI_COMM_WORLD, &r);
    recvs.emplace_back(reqs.size(), i);
    reqs.push_back(r);
    MPI_Isend(&(*tokens)[2 * i + 1], 1, MPI_INT, members[i], tag, MPI_COMM_WORLD, &r);
    reqs.push_back(r);
  }
  for (unsigned spins = 0;; ++spins) {
    int done = 0;
    if (reqs.empty() || MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS || done) {
      if (progress) progress->waiting_on(-1);
      return true;
    }
    if ((spins & 63) == 0 && progress) {
      progress->tick(std::chrono::steady_clock::now());
      if ((spins & 1023) == 0) progress->waiting_on(first_absent(reqs, recvs));
    }
    if ((spins & 63) == 0 && std::chrono::steady_clock::now() >= deadline) {
      abandon(tokens);  // a late token must not land in freed memory
      return false;
    }
    sched_yield();
  }
}

}  // namespace kiln::worker
