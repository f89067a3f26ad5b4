// Runs the tests of a round on this rank: builds group communicators, applies the SKIP rules,
// validates parameters, enforces deadlines, turns exceptions into ERROR/TIMEOUT, stamps every
// result, and ends every check it was asked for with one CheckEnd.
#pragma once

#include <functional>

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

 private:
  void run_test(const proto::Round& round, std::size_t index);
  void end(const proto::Round& round, const std::string& key, int group, Status s, const std::string& reason,
           double seconds);
  const NodeInfo& node_;
  const Faults& faults_;
  Emit emit_;
  Progress* progress_;
};

}  // namespace kiln::worker
