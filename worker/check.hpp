// The worker's check harness: a check is a class with a stable key, an applicability check that
// returns the SKIP reason, and run(). What it declares (description, scope, deadline, parameters,
// figure of merit) is data in common/checks.cpp, shared with the coordinator. The runner
// (worker/runner.cpp), not the check, owns timing, deadlines, parameter validation, status on
// exceptions, and filling in who/when on every result.
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

#include "common/checks.hpp"
#include "common/types.hpp"

namespace kiln::worker {

class Progress;  // worker/progress.hpp

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
  // The round's parameters, validated against the check's declaration with defaults filled in.
  nlohmann::json params = nlohmann::json::object();
  std::chrono::steady_clock::time_point deadline;
  const Faults& faults;
  Progress* progress = nullptr;  // what the heartbeats say this rank is doing; none in standalone tests

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
  // Streams one result now. The runner stamps test, host, rank, round_id, group_id and ts, and
  // the entity (this rank) when the check leaves it empty: the one place results are stamped.
  virtual void emit(Result r) = 0;
};

class Check {
 public:
  virtual ~Check() = default;
  virtual std::string key() const = 0;
  // The declaration in common/checks.cpp (a unit test checks every registered key has one).
  const CheckSpec& spec() const;
  virtual std::string description() const { return spec().description; }
  virtual Scope scope() const { return spec().scope; }
  // nullopt when the check can run on this node; otherwise the reason it is skipped.
  virtual std::optional<std::string> applicable(const NodeInfo&) const { return std::nullopt; }
  // Default deadline (seconds) when the round gives none.
  virtual double default_deadline_s() const { return spec().default_deadline_s; }
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
