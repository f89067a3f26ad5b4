// The worker's test harness: a test is a class with a stable key, an applicability check that
// returns the SKIP reason, and run(). The runner (worker/runner.cpp), not the test, owns timing,
// deadlines, status on exceptions, and filling in who/when on every result.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <mpi.h>
#include <nlohmann/json.hpp>

#include "common/types.hpp"

namespace kiln::worker {

// What a rank knows about itself and its node, gathered once at start-up.
struct NodeInfo {
  std::string host;
  int world_rank = 0;
  int world_size = 1;
  int local_rank = 0;  // index of this rank among the ranks on its host
  int local_size = 1;
  int gpu_count = 0;   // CUDA-visible GPUs (0 when built without CUDA or none visible)
  std::vector<std::string> gpu_models;
  std::string cuda_driver;   // "13.0" or "" when unknown
  std::string cuda_runtime;
  std::string nccl_version;
  std::string mpi_version;
  std::string gpu_skip_reason;  // why gpu_count is 0, for SKIP results
  int ib_device_count = 0;
};

enum class Scope {
  PerRank,  // every rank runs it alone (comm = MPI_COMM_SELF)
  PerNode,  // only local rank 0 of each host runs it (e.g. inventory, GPU burn of the whole node)
  Group,    // all members of each group of the round run it together on the group's communicator
};

// Drill switches (KILN_FAULT_* environment variables), a test aid documented in docs/. Off unless set.
struct Faults {
  nlohmann::json spec = nlohmann::json::object();  // parsed KILN_FAULT (JSON object) if set
  bool any() const { return !spec.empty(); }
};

struct Context {
  const NodeInfo& node;
  MPI_Comm comm = MPI_COMM_SELF;  // the group's communicator (Group scope) or MPI_COMM_SELF
  int group_id = -1;
  int group_rank = 0;  // rank in comm
  int group_size = 1;
  std::vector<int> group_world_ranks;  // world ranks of the group, in comm order
  std::int64_t round_id = -1;
  nlohmann::json params = nlohmann::json::object();  // test parameters sent with the round
  std::chrono::steady_clock::time_point deadline;
  const Faults& faults;

  bool expired() const { return std::chrono::steady_clock::now() >= deadline; }
  double seconds_left() const {
    return std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
  }
  template <class T>
  T param(const std::string& name, T fallback) const {
    auto it = params.find(name);
    return it == params.end() ? fallback : it->template get<T>();
  }
};

// Thrown by a test that ran out of time; the runner reports TIMEOUT for it.
struct DeadlineExceeded : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ResultSink {
 public:
  virtual ~ResultSink() = default;
  // Streams one result now. The runner fills test, host, rank, round_id, group_id, ts and entity
  // (this rank) when the test leaves them empty.
  virtual void emit(Result r) = 0;
};

class Check {
 public:
  virtual ~Check() = default;
  virtual std::string key() const = 0;
  virtual std::string description() const = 0;
  virtual Scope scope() const = 0;
  // nullopt when the test can run on this node; otherwise the reason it is skipped.
  virtual std::optional<std::string> applicable(const NodeInfo&) const { return std::nullopt; }
  // Default deadline (seconds) when the round gives none.
  virtual double default_deadline_s() const { return 120.0; }
  virtual void run(Context& ctx, ResultSink& sink) = 0;
};

class Registry {
 public:
  using Factory = std::function<std::unique_ptr<Check>()>;
  static Registry& instance();
  void add(Factory f);
  std::unique_ptr<Check> create(const std::string& key) const;  // nullptr when unknown
  std::vector<std::string> keys() const;                        // sorted

 private:
  std::vector<Factory> factories_;
};

namespace detail {
struct Registrar {
  explicit Registrar(Registry::Factory f) { Registry::instance().add(std::move(f)); }
};
}  // namespace detail

#define KILN_CONCAT_INNER(a, b) a##b
#define KILN_CONCAT(a, b) KILN_CONCAT_INNER(a, b)
// Registers a Check subclass at static-initialisation time. Check sources are linked as an OBJECT
// library so the registrations are never dropped by the linker.
#define KILN_REGISTER_CHECK(Class)                                                  \
  static ::kiln::worker::detail::Registrar KILN_CONCAT(kiln_registrar_, __LINE__)( \
      [] { return std::unique_ptr<::kiln::worker::Check>(new Class()); })

}  // namespace kiln::worker
