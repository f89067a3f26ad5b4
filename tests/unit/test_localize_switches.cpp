// SLURM's leaves reach the localization planner as switches over unit indices (localize.cpp).
#include <catch2/catch.hpp>

#include "coordinator/localize.hpp"

using kiln::coord::LocalizeOptions;
using kiln::coord::Units;
using kiln::coord::unit_switches;

namespace {

Units hosts(std::vector<std::string> names) {
  Units u;
  u.kind = "node";
  u.names = std::move(names);
  for (std::size_t i = 0; i < u.names.size(); ++i) u.rank_of.push_back(static_cast<int>(i) * 4);
  return u;
}

}  // namespace

TEST_CASE("localize: SLURM leaves become switches over the hosts' unit indices", "[localize]") {
  LocalizeOptions o;
  o.leaves = {{"leaf1", {"n1", "n2", "n3"}}, {"leaf2", {"n4", "n5", "gone"}}, {"leaf3", {"other"}}};
  const auto sw = unit_switches(hosts({"n1", "n2", "n3", "n4", "n5"}), o);
  REQUIRE(sw.size() == 2);  // leaf3 holds no unit
  CHECK(sw[0].name == "leaf1");
  CHECK(sw[0].nodes == std::vector<int>{0, 1, 2});
  CHECK(sw[1].name == "leaf2");
  CHECK(sw[1].nodes == std::vector<int>{3, 4});  // "gone" is not a unit
}

TEST_CASE("localize: by rank, or with an explicit topology, the leaves are not used", "[localize]") {
  LocalizeOptions o;
  o.leaves = {{"leaf1", {"n1", "n2"}}};
  auto ranks = hosts({"n1/rank0", "n1/rank1"});
  ranks.kind = "rank";
  CHECK(unit_switches(ranks, o).empty());
  o.topology = {{"sw", {1, 0}}};
  const auto sw = unit_switches(hosts({"n1", "n2"}), o);
  REQUIRE(sw.size() == 1);
  CHECK(sw[0].name == "sw");
  CHECK(unit_switches(hosts({"n1", "n2"}), LocalizeOptions{}).empty());
}
