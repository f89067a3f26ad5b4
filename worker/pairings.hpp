// The pairing schedule of the pair checks (net.pair_bw, rdma.*) in a group of more than two: the
// members meet in disjoint pairs, one pairing after another, by the circle method. In pairing r of
// n slots (n even: the group size, plus one empty slot when it is odd), slot x meets 2r - x mod n-1,
// and the slot r meets slot n-1. The member whose partner is the empty slot sits the pairing out.
// Over n-1 pairings every member meets every other exactly once, so the first k pairings give every
// member k different partners. Pure arithmetic (tests/unit/test_pairings.cpp); the runner that
// splits the group into pair communicators is pair_runner.hpp.
#pragma once

#include <algorithm>

namespace kiln::worker::pairings {

// Slots of the schedule: the group size rounded up to even.
inline int slots(int members) { return members + members % 2; }

// Member x's partner in pairing r (0 <= r < slots-1), or -1 when x sits that pairing out.
inline int partner(int members, int r, int x) {
  const int n = slots(members);
  int p;
  if (x == n - 1) p = r;
  else if (x == r) p = n - 1;
  else p = ((2 * r - x) % (n - 1) + (n - 1)) % (n - 1);
  return p < members ? p : -1;
}

// Pairings to run so that every member meets `partners` others (a pair group: one). An odd group
// leaves one member out of each pairing, so it gets one more; never more than slots-1.
inline int count(int members, int partners) {
  if (members < 2) return 0;
  const int wanted = members == 2 ? 1 : partners + members % 2;
  return std::clamp(wanted, 1, slots(members) - 1);
}

}  // namespace kiln::worker::pairings
