// Runs the tests of a round on this rank: builds group communicators, applies the SKIP rules,
// validates parameters, enforces deadlines, turns exceptions into ERROR/TIMEOUT, stamps every
// result, and ends every check it was asked for with one CheckEnd.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "common/protocol.hpp"
#include "worker/check.hpp"
#include "worker/telemetry.hpp"

namespace kiln::worker {

Faults faults_from_env();  // parses KILN_FAULT (a JSON object); throws on malformed JSON

class Runner {
 public:
  using Emit = std::function<void(const Record&)>;
  // progress, when given, is kept up to date for the heartbeats (worker/progress.hpp).
  // emit is called under a lock: the node's telemetry sampler emits from its own thread.
  Runner(const NodeInfo& node, const Faults& faults, Emit emit, Progress* progress = nullptr)
      : node_(node), faults_(faults), progress_(progress) {
    emit_ = [this, e = std::move(emit)](const Record& r) {
      std::lock_guard<std::mutex> l(emit_mu_);
      e(r);
    };
  }
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;
  // Samples the node every interval_s seconds during every check (docs/telemetry.md), when this
  // rank is the node's lowest local rank; 0 leaves telemetry off.
  void telemetry(double interval_s) { sampler_ = telemetry::node_sampler(interval_s, node_, emit_); }
  void run_round(const proto::Round& round);
  // The campaign rank of each MPI rank (index), when they differ (after a restart that lost a
  // node); groups arrive in campaign ranks. Default: the same.
  void mpi_ranks(const std::vector<int>& campaign_of_mpi);

 private:
  void run_test(const proto::Round& round, std::size_t index);
  void run_check(const proto::Round& round, std::size_t index);
  void end(const proto::Round& round, const std::string& key, int group, Status s, const std::string& reason,
           double seconds);
  const NodeInfo& node_;
  const Faults& faults_;
  Emit emit_;
  Progress* progress_;
  std::map<int, int> mpi_of_;  // campaign rank -> MPI rank; empty: the same
  std::mutex emit_mu_;
  std::unique_ptr<telemetry::Sampler> sampler_;  // last: stopped before the rest goes
};

}  // namespace kiln::worker
