// The pair checks' schedule (worker/pairings.hpp): disjoint pairs in every pairing, a new partner in
// every pairing, everyone paired in an even group, one member out per pairing in an odd one.
#include <catch2/catch.hpp>

#include <set>

#include "worker/pairings.hpp"

using namespace kiln::worker;

TEST_CASE("pairings: each pairing is a matching and every member meets distinct partners", "[pairings]") {
  for (int g = 2; g <= 17; ++g) {
    INFO("group of " << g);
    const int n = pairings::slots(g);
    CHECK(n % 2 == 0);
    std::vector<std::set<int>> met(static_cast<std::size_t>(g));
    for (int r = 0; r < n - 1; ++r) {
      int out = 0;
      for (int x = 0; x < g; ++x) {
        const int p = pairings::partner(g, r, x);
        if (p < 0) {
          ++out;
          continue;
        }
        REQUIRE(p != x);
        REQUIRE(p < g);
        CHECK(pairings::partner(g, r, p) == x);  // symmetric: the pairs are disjoint
        CHECK(met[static_cast<std::size_t>(x)].insert(p).second);  // never the same partner twice
      }
      CHECK(out == g % 2);  // even: everyone paired; odd: exactly one sits out
    }
    for (const auto& m : met) CHECK(static_cast<int>(m.size()) == g - 1);  // all pairings: everyone met
  }
}

TEST_CASE("pairings: how many to run for a number of partners", "[pairings]") {
  CHECK(pairings::count(1, 7) == 0);
  CHECK(pairings::count(2, 7) == 1);     // a pair group: the one pair
  CHECK(pairings::count(8, 7) == 7);     // every pair of eight
  CHECK(pairings::count(100, 7) == 7);
  CHECK(pairings::count(9, 7) == 8);     // odd: one more, as each member sits out one
  CHECK(pairings::count(5, 7) == 5);     // capped at slots - 1
  CHECK(pairings::count(6, 1) == 1);
  // In the first count() pairings of an odd group, every member has at least `partners` partners.
  const int g = 11, want = 3;
  std::vector<std::set<int>> met(g);
  for (int r = 0; r < pairings::count(g, want); ++r)
    for (int x = 0; x < g; ++x)
      if (const int p = pairings::partner(g, r, x); p >= 0) met[static_cast<std::size_t>(x)].insert(p);
  for (const auto& m : met) CHECK(static_cast<int>(m.size()) >= want);
}
