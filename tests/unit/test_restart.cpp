// Restarting the workers after a round left MPI state untrusted: the decision, and the fields on
// the wire that carry it (old messages still parse).
#include <catch2/catch.hpp>

#include "common/protocol.hpp"
#include "common/types.hpp"
#include "coordinator/restart.hpp"

using namespace kiln;
using kiln::coord::decide_restart;
using kiln::coord::RestartContext;

namespace {
CheckEnd end_of(int rank, std::int64_t round, bool untrusted) {
  CheckEnd e;
  e.test = "mpi.all_reduce";
  e.rank = rank;
  e.round_id = round;
  e.status = untrusted ? Status::Timeout : Status::Pass;
  e.mpi_untrusted = untrusted;
  return e;
}
}  // namespace

TEST_CASE("a round whose checks left MPI state untrusted restarts the workers, up to the cap", "[restart]") {
  const std::vector<CheckEnd> ends = {end_of(3, 5, true), end_of(0, 5, false), end_of(1, 5, true), end_of(2, 5, false)};
  auto d = decide_restart(5, ends, RestartContext{0, 3, "local", true, false});
  CHECK(d.restart);
  CHECK(d.untrusted == std::vector<int>{1, 3});
  CHECK(d.line == "round 5 left MPI state untrusted on ranks 1,3: restarting the workers (restart 1)");
  d = decide_restart(5, ends, RestartContext{2, 3, "local", true, false});
  CHECK(d.restart);
  CHECK_THAT(d.line, Catch::EndsWith("(restart 3)"));
  d = decide_restart(5, ends, RestartContext{3, 3, "local", true, false});
  CHECK_FALSE(d.restart);
  CHECK_THAT(d.line, Catch::Contains("the cap of 3 restarts per campaign is reached"));
  // Said once: later rounds on the same untrusted state say nothing more.
  CHECK(decide_restart(5, ends, RestartContext{3, 3, "local", true, true}).line.empty());
}

TEST_CASE("nothing untrusted, another round's ends, or workers started by hand: no restart", "[restart]") {
  CHECK(decide_restart(5, {end_of(0, 5, false), end_of(1, 5, false)}, RestartContext{}).line.empty());
  CHECK_FALSE(decide_restart(6, {end_of(0, 5, true)}, RestartContext{}).restart);
  auto d = decide_restart(5, {end_of(2, 5, true)}, RestartContext{0, 3, "none", false, false});
  CHECK_FALSE(d.restart);
  CHECK(d.line == "round 5 left MPI state untrusted on rank 2: the none launcher cannot start the workers again; "
                  "later rounds may hang or crash");
}

TEST_CASE("mpi_untrusted and a restart bye travel only when set, and old messages parse", "[restart][protocol]") {
  CheckEnd e = end_of(1, 2, false);
  CHECK_FALSE(nlohmann::json(e).contains("mpi_untrusted"));
  e.mpi_untrusted = true;
  CHECK(nlohmann::json(e).get<CheckEnd>().mpi_untrusted);
  CHECK_FALSE(nlohmann::json(end_of(1, 2, false)).get<CheckEnd>().mpi_untrusted);
  const auto plain = proto::wrap(proto::Bye{"campaign finished"});
  CHECK_FALSE(plain.contains("restart"));
  CHECK_FALSE(proto::unwrap<proto::Bye>(plain).restart);
  CHECK(proto::unwrap<proto::Bye>(proto::wrap(proto::Bye{"restart", true})).restart);
  CHECK_THROWS_AS(proto::unwrap<proto::Bye>(nlohmann::json{{"type", "bye"}, {"restart", "yes"}}), proto::ProtocolError);
}
