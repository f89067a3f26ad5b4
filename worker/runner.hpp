// Runs the tests of a round on this rank: builds group communicators, applies the SKIP rules,
// validates parameters, enforces deadlines, turns exceptions into ERROR/TIMEOUT, stamps every
// result, and ends every check it was asked for with one CheckEnd.
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "common/protocol.hpp"
#include "worker/check.hpp"

namespace kiln::worker {

Faults faults_from_env();  // parses KILN_FAULT (a JSON object); throws on malformed JSON

class Runner {
 public:
  using Emit = std::function<void(const Record&)>;
  // progress, when given, is kept up to date for the heartbeats (worker/progress.hpp).
  Runner(const NodeInfo& node, const Faults& faults, Emit emit, Progress* progress = nullptr)
      : node_(node), faults_(faults), emit_(std::move(emit)), progress_(progress) {}
  void run_round(const proto::Round& round);
  // The campaign rank of each MPI rank (index), when they differ (after a restart that lost a
  // node); groups arrive in campaign ranks. Default: the same.
  void mpi_ranks(const std::vector<int>& campaign_of_mpi);

 private:
  void run_test(const proto::Round& round, std::size_t index);
  void end(const proto::Round& round, const std::string& key, int group, Status s, const std::string& reason,
           double seconds);
  const NodeInfo& node_;
  const Faults& faults_;
  Emit emit_;
  Progress* progress_;
  std::map<int, int> mpi_of_;  // campaign rank -> MPI rank; empty: the same
};

}  // namespace kiln::worker
