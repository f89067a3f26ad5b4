#include "worker/runner.hpp"

#include <algorithm>
#include <cstdlib>

#include "common/check.hpp"
#include "common/finite_value.hpp"
#include "worker/mpi_wait.hpp"
#include "worker/progress.hpp"

namespace kiln::worker {

using Clock = std::chrono::steady_clock;

Faults faults_from_env() {
  Faults f;
  if (const char* s = std::getenv("KILN_FAULT"); s && *s) {
    f.spec = nlohmann::json::parse(s, nullptr, false);
    if (f.spec.is_discarded() || !f.spec.is_object())
      throw std::invalid_argument("KILN_FAULT is not a JSON object");
  }
  return f;
}

namespace {

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int severity_rank(Status s) {
  switch (s) {
    case Status::Pass: return 0;
    case Status::Skip: return 1;
    case Status::Fail: return 3;
    case Status::Timeout: return 4;
    case Status::Error: return 5;
  }
  return 5;
}

// Stamps results with who/when and remembers the worst status the test reported.
class StampingSink : public ResultSink {
 public:
  StampingSink(const NodeInfo& node, const std::string& test, std::int64_t round, int group, Runner::Emit& emit)
      : node_(node), test_(test), round_(round), group_(group), emit_(emit) {}
  void emit(Result r) override {
    if (r.test.empty()) r.test = test_;
    r.host = node_.host;
    r.rank = node_.world_rank;
    r.round_id = round_;
    if (r.group_id < 0) r.group_id = group_;
    if (r.entity.kind.empty()) r.entity = {"rank", std::to_string(node_.world_rank)};
    if (r.ts == 0.0) r.ts = now_unix();
    make_value_finite(r);
    if (severity_rank(r.status) > severity_rank(worst_) && r.status != Status::Skip) worst_ = r.status;
    if (r.status == Status::Skip) {
      if (skip_reason_.empty()) skip_reason_ = r.reason;
    } else {
      ran_ = true;
    }
    ++count_;
    emit_(Record(std::move(r)));
  }
  Status worst() const { return worst_; }
  // The test reported results and every one was a SKIP: it did not run here.
  bool only_skipped() const { return count_ > 0 && !ran_; }
  const std::string& skip_reason() const { return skip_reason_; }
  std::size_t count() const { return count_; }

 private:
  const NodeInfo& node_;
  std::string test_;
  std::int64_t round_;
  int group_;
  Runner::Emit& emit_;
  Status worst_ = Status::Pass;
  std::size_t count_ = 0;
  bool ran_ = false;
  std::string skip_reason_;
};


}  // namespace

void Runner::run_round(const proto::Round& round) {
  for (std::size_t i = 0; i < round.tests.size(); ++i) run_test(round, i);
}

void Runner::end(const proto::Round& round, const std::string& key, int group, Status s, const std::string& reason,
                 double seconds) {
  CheckEnd e;
  e.mpi_untrusted = mpi_state_untrusted();
  e.test = key;
  e.host = node_.host;
  e.rank = node_.world_rank;
  e.status = s;
  e.reason = reason;
  e.seconds = seconds;
  e.round_id = round.id;
  e.group_id = group;
  e.ts = now_unix();
  emit_(Record(std::move(e)));
}

void Runner::mpi_ranks(const std::vector<int>& campaign_of_mpi) {
  mpi_of_.clear();
  bool same = true;
  for (std::size_t m = 0; m < campaign_of_mpi.size(); ++m) {
    mpi_of_[campaign_of_mpi[m]] = static_cast<int>(m);
    same = same && campaign_of_mpi[m] == static_cast<int>(m);
  }
  if (same) mpi_of_.clear();
}

// The node's telemetry covers every check it is asked for, whether this rank runs it or sits it out.
void Runner::run_test(const proto::Round& round, std::size_t index) {
  if (sampler_) sampler_->begin(round.tests[index].key, round.id);
  run_check(round, index);
  if (sampler_) sampler_->end();
}

void Runner::run_check(const proto::Round& round, std::size_t index) {
  const auto& spec = round.tests[index];
  auto test = Registry::instance().create(spec.key);
  auto status_result = [&](Status s, const std::string& reason, double seconds, int group) {
    end(round, spec.key, group, s, reason, seconds);
  };
  if (!test) {
    status_result(Status::Error, "unknown test '" + spec.key + "' (kiln-worker --list-tests shows the known ones)", 0, -1);
    return;
  }
  // A parameter of the wrong type or out of bounds ends the check in ERROR, never the worker.
  nlohmann::json params;
  try {
    params = validate_params(test->spec(), spec.params);
  } catch (const std::exception& e) {
    status_result(Status::Error, std::string("bad parameters: ") + e.what(), 0, -1);
    return;
  }
  const Scope scope = test->scope();
  if (scope == Scope::PerNode && node_.local_rank != 0) return;  // one rank speaks for the node

  int group_id = -1;
  std::vector<int> members;
  if (scope == Scope::Group) {
    for (std::size_t g = 0; g < round.groups.size(); ++g)
      if (std::find(round.groups[g].begin(), round.groups[g].end(), node_.world_rank) != round.groups[g].end()) {
        group_id = static_cast<int>(g);
        members = round.groups[g];
      }
    if (group_id < 0) return;  // this rank sits the round out
  }

  const double deadline_s = params.value("deadline_s", round.deadline_s > 0 ? round.deadline_s : test->default_deadline_s());
  Context ctx{node_, MPI_COMM_SELF, group_id, 0, 1, members, round.id, params,
              Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(deadline_s)),
              faults_, progress_};
  if (progress_) progress_->begin(spec.key, round.id);
  MPI_Comm group_comm = MPI_COMM_NULL;
  // The group in MPI ranks, for MPI's calls; members (and what the checks report) stay campaign ranks.
  std::vector<int> mpi_members = members;
  if (!mpi_of_.empty()) {
    for (auto& m : mpi_members) {
      const auto it = mpi_of_.find(m);
      if (it == mpi_of_.end()) {
        status_result(Status::Error, "rank " + std::to_string(m) + " of the group is not in this step of the job", 0, group_id);
        return;
      }
      m = it->second;
    }
  }
  const int mpi_me = mpi_of_.empty() ? node_.world_rank : mpi_of_.at(node_.world_rank);
  if (scope == Scope::Group && !members_alive(mpi_me, mpi_members, round.id, index, ctx.deadline, progress_)) {
    status_result(Status::Timeout, "a member of the group never arrived (dead or hung rank)", deadline_s, group_id);
    return;
  }
  if (scope == Scope::Group) {
    MPI_Group world_group, g;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, static_cast<int>(mpi_members.size()), mpi_members.data(), &g);
    // Collective over the group only: other groups and absent ranks are never waited for.
    const int tag = static_cast<int>((round.id * 16 + static_cast<std::int64_t>(index)) % 30000);
    const int rc = MPI_Comm_create_group(MPI_COMM_WORLD, g, tag, &group_comm);
    MPI_Group_free(&g);
    MPI_Group_free(&world_group);
    if (rc != MPI_SUCCESS || group_comm == MPI_COMM_NULL) {
      status_result(Status::Error, "could not create the group communicator", 0, group_id);
      return;
    }
    MPI_Comm_set_errhandler(group_comm, MPI_ERRORS_RETURN);
    ctx.comm = group_comm;
    MPI_Comm_rank(group_comm, &ctx.group_rank);
    MPI_Comm_size(group_comm, &ctx.group_size);
  }

  auto reason = test->applicable(node_);
  if (scope == Scope::Group) {
    // Every member must agree to run, or none does: a member that skips would leave the rest hung.
    int can = reason ? 0 : 1, all = 0;
    MPI_Allreduce(&can, &all, 1, MPI_INT, MPI_MIN, group_comm);
    if (!reason && !all) reason = "another member of the group cannot run it";
  }
  StampingSink sink(node_, spec.key, round.id, group_id, emit_);
  const auto start = Clock::now();
  if (reason) {
    status_result(Status::Skip, *reason, 0, group_id);
  } else {
    Status final_status = Status::Pass;
    std::string why;
    try {
      test->run(ctx, sink);
      final_status = sink.worst();
      if (final_status != Status::Pass) why = "a measurement did not pass";
      if (sink.only_skipped()) {  // a test that could not run is SKIP, never PASS
        final_status = Status::Skip;
        why = sink.skip_reason();
      } else if (final_status == Status::Pass && !sink.skip_reason().empty()) {
        why = "passed with some results skipped: " + sink.skip_reason();  // e.g. sizes past the time budget
      }
    } catch (const DeadlineExceeded& e) {
      final_status = Status::Timeout;
      why = e.what();
    } catch (const std::exception& e) {
      final_status = Status::Error;
      why = e.what();
    }
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    if (final_status == Status::Pass && secs > deadline_s) {
      final_status = Status::Timeout;
      why = "finished after its deadline of " + std::to_string(deadline_s) + " s";
    }
    status_result(final_status, why, secs, group_id);
  }
  // A communicator with an abandoned request on it is left alone: freeing it under the request
  // crashed the next collective (Open MPI 4.1, libnbc). The workers are restarted instead.
  if (group_comm != MPI_COMM_NULL && !mpi_state_untrusted()) MPI_Comm_free(&group_comm);
}

}  // namespace kiln::worker
