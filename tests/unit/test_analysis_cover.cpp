// The edge cover past 1,024 nodes (strategy_split.cpp): an affine plane's parallel classes over
// blocks of nodes, so that every edge is timed in a group of at most 256 (512 or 1,024 past 5,819
// nodes: timed_group_size) in q + 1 rounds, and a
// 1.25x link (which an all-to-all of the whole cluster dilutes to nothing) is read as an edge.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "coordinator/analysis/planner.hpp"
#include "coordinator/analysis/simulate.hpp"
#include "coordinator/analysis/strategies.hpp"

namespace {

// Every pair of v in some group, groups of a round disjoint and of at most timed_group_size(n) members.
void check_cover(int n, std::size_t rounds_expected) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  const auto rounds = kiln::analysis::strategy::affine_cover(v);
  INFO("n = " << n);
  CHECK(rounds.size() == rounds_expected);
  std::vector<char> met(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), 0);
  std::size_t largest = 0, twice = 0;
  for (const auto& round : rounds) {
    std::vector<char> seen(static_cast<std::size_t>(n), 0);
    for (const auto& g : round) {
      largest = std::max(largest, g.size());
      for (int u : g) twice += seen[static_cast<std::size_t>(u)]++ ? 1 : 0;
      for (int a : g)
        for (int b : g) met[static_cast<std::size_t>(a) * static_cast<std::size_t>(n) + static_cast<std::size_t>(b)] = 1;
    }
  }
  CHECK(largest <= kiln::analysis::timed_group_size(static_cast<std::size_t>(n)));
  CHECK(twice == 0);  // no node in two groups of one round
  std::size_t missing = 0;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      missing += met[static_cast<std::size_t>(a) * static_cast<std::size_t>(n) + static_cast<std::size_t>(b)] ? 0 : 1;
  CHECK(missing == 0);
}

// A model preset at n nodes with per-edge figures (the live check's), the story kept.
kiln::analysis::SimulateOptions per_edge(const char* model, int n) {
  kiln::analysis::SimulateOptions opt;
  kiln::analysis::apply_model(opt, model);
  opt.nodes = n;
  opt.per_peer = true;
  opt.story = true;
  return opt;
}

bool within_bound(const kiln::analysis::TrialResult& r, int n) {
  return static_cast<double>(r.rounds) <= kiln::analysis::one_fault_round_bound(n);
}

}  // namespace

TEST_CASE("cover: the affine cover holds every pair in groups of at most 256, in q + 1 rounds", "[analysis][cover]") {
  check_cover(1025, 6);   // q = 5 (a prime): blocks of 41, groups of 205
  check_cover(2048, 9);   // q = 8 (GF(8)): blocks of 32, groups of 256
  check_cover(3000, 14);  // q = 13: blocks of at most 18
  check_cover(4096, 17);  // q = 16 (GF(16)): 17 rounds, the least any cover of 4,096 in groups of 256 takes
  // Uneven blocks: 4,000 nodes in 256 blocks of 15 or 16.
  check_cover(4000, 17);
  // Past 5,819 nodes the groups grow: 6,000 in groups of at most 512 (q = 13, blocks of at most 36,
  // 14 rounds), 16,384 in groups of 1,024 (q = 16, blocks of 64): 17 rounds where groups of 256
  // would take at least 65, against a bound of 38.
  check_cover(6000, 14);
  check_cover(16384, 17);
  // Past 65,536 nodes no plane has groups of at most 256 (q blocks of at least one node): no cover,
  // and the search for q ends (it looped for ever, hanging the planner of a 100,000-node cluster).
  std::vector<int> huge(100000);
  std::iota(huge.begin(), huge.end(), 0);
  CHECK(kiln::analysis::strategy::affine_cover(huge).empty());
  CHECK_FALSE(kiln::analysis::strategy::edge_cover_fits(100000));
  CHECK(kiln::analysis::strategy::edge_cover_fits(4096));
  CHECK(kiln::analysis::strategy::edge_cover_fits(8192));    // groups of 512: 17 rounds + 10 <= 36 (256: 33 + 10)
  CHECK(kiln::analysis::strategy::edge_cover_fits(16384));   // groups of 1,024: 17 + 10 <= 38
  CHECK_FALSE(kiln::analysis::strategy::edge_cover_fits(24000));  // 1,024: q = 29, 30 + 10 > 39.1
  CHECK(kiln::analysis::strategy::edge_cover_fits(1024));        // the circle method's 8 blocks
}

TEST_CASE("cover: a 1.25x node and a 1.25x link among 1,100 nodes are both found, with no certification sweep",
          "[analysis][cover]") {
  const auto opt = per_edge("diluted", 1100);  // one node and one link, 1.25x, diluted as live
  // Before the cover, groups past 256 members gave a figure only, in which the link is 1/1,099 of
  // its ends' traffic: it was found in 10 of 20 trials at 4,096 nodes and never by a group search.
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const auto r = kiln::analysis::simulate_trial(opt, seed, true);
    INFO("seed " << seed << ": " << r.detail["findings"].dump());
    CHECK(r.true_positives == 2);
    CHECK(r.false_findings == 0);
    CHECK(within_bound(r, 1100));
    CHECK(r.detail["story"]["note"] == "every edge was read in the edge cover: no certification sweep needed");
  }
}

TEST_CASE("cover: at 4,096 nodes the cover's noise suspicions are settled within the rounds one fault may take",
          "[analysis][cover]") {
  // The cover opens about 80,000 suspicions from noise (z >= 2.5 on 8.4 million edges). They used to
  // wait for certification, because the search group that held the slow node held them all too, and
  // the sweep planned two thousand rounds around them (48 rounds, link missed). Now each is decided
  // on its edge readings as they come, retested in groups grown around the suspects.
  const auto r = kiln::analysis::simulate_trial(per_edge("diluted", 4096), 3, true);
  INFO(r.detail["findings"].dump());
  CHECK(r.true_positives == 2);
  CHECK(r.false_findings == 0);
  CHECK(within_bound(r, 4096));
}

TEST_CASE("cover: at 6,000 nodes it runs in groups of 512 and finds a 1.25x node and a 1.25x link within the bound",
          "[analysis][cover]") {
  // Groups of 256 would take 30 rounds of cover (q = 29) against a bound of 35.1, and the group
  // search that stood in for it dilutes a link to nothing.
  const auto r = kiln::analysis::simulate_trial(per_edge("diluted", 6000), 1, true);
  INFO(r.detail["findings"].dump());
  CHECK(r.true_positives == 2);
  CHECK(r.false_findings == 0);
  CHECK(within_bound(r, 6000));
  // The first cover round (after the screen): 13 groups of 13 blocks of 35 or 36 nodes.
  std::size_t largest = 0;
  for (const auto& [size, count] : r.detail["story"]["rounds"][1]["group_sizes"].items()) largest = std::max<std::size_t>(largest, std::stoul(size));
  CHECK(largest > 256);
  CHECK(largest <= 512);
}

TEST_CASE("cover: past its reach (24,000 nodes) a 1.25x node is read as a row and a node slow half the time is looked at again",
          "[analysis][cover]") {
  // At 16,384 nodes, before the cover reached it (groups of 1,024): seed 1's 1.25x node read as
  // noise in its pair retests while the search that held it waited on them, and ended
  // `localize.unresolved`; as a row among 15 known-good peers it shows every time. Past the reach of
  // a cover in groups of 1,024 (23,277 nodes and up) the group search and its rows stay.
  {
    const auto r = kiln::analysis::simulate_trial(per_edge("diluted", 24000), 1, true);
    INFO(r.detail["findings"].dump());
    bool node = false;
    for (const auto& f : r.detail["findings"])
      node = node || (f["code"] == "node.slow" && "node:" + f["entity"]["id"].get<std::string>() == r.detail["truth"][0]);
    CHECK(node);
    CHECK(r.false_findings == 0);
  }
  // At 16,384 (seeds 7 and 9) the campaign ended after 4 rounds, in which the node slow half the
  // time happened to be fast: silent. Now every node is looked at until it has been in 6 tests.
  for (std::uint64_t seed : {7u, 9u}) {
    const auto r = kiln::analysis::simulate_trial(per_edge("intermittent", 24000), seed, true);
    INFO("seed " << seed << ": " << r.detail["findings"].dump());
    CHECK(r.accounted);
    CHECK(r.false_findings == 0);
    CHECK(within_bound(r, 24000));
  }
}

TEST_CASE("cover: under 5% heavy-tailed stragglers the retests after the cover keep within the round budget",
          "[analysis][cover]") {
  // The cover opens a suspicion on about 4% of the 8.4 million edges of 4,096 nodes; giving each its
  // first retest took 43 rounds against a bound of 34. Past the budget only suspicions read slow
  // again are retested (36 rounds while those whose retests read in between were retested too);
  // the 2x node is found all the same.
  const auto r = kiln::analysis::simulate_trial(per_edge("heavy-tail", 4096), 1, true);
  INFO(r.detail["findings"].dump());
  CHECK(r.true_positives == 1);
  CHECK(r.false_findings == 0);
  CHECK(within_bound(r, 4096));
  const std::string story = r.detail["story"].dump();
  const auto at = story.find("round budget: ");
  REQUIRE(at != std::string::npos);
  const std::string note = story.substr(at, 700);  // the regex reads the note, not the whole story
  // First retests go strongest first: every suspicion opened at z 3.5 or more (a 1.25x link at 5%
  // noise opens near 4.5, a 2x link near 14) before [2.5, 3.5), and those three classes packed as
  // one, each left in about the same share (0.31 here). Ranked among themselves, [3.5, 5) first,
  // they left 0.4% of [3.5, 5) but 42% of [5, 8) and 55% of 8 and over, and 106,000 strong
  // suspicions in all against 78,000 now.
  std::smatch m;
  REQUIRE(std::regex_search(note, m, std::regex(R"(round budget: (\d+) suspicion.*?under 3: (\d+) of (\d+), )"
                                                R"(3-3\.5: \d+ of \d+, 3\.5-5: (\d+) of (\d+), 5-8: (\d+) of (\d+), )"
                                                R"(8 and over: (\d+) of (\d+))")));
  auto share = [&](int i) { return std::stod(m[i]) / std::stod(m[i + 1]); };
  const double weak = share(2), mild = share(4), strong = share(6), heavy = share(8);
  INFO(m[1] << " left; shares left: under 3 " << weak << ", 3.5-5 " << mild << ", 5-8 " << strong << ", 8 and over "
            << heavy);
  CHECK(std::stol(m[1]) > 10000);
  for (double x : {mild, strong, heavy}) {
    CHECK(x < weak - 0.1);
    CHECK(std::abs(x - mild) < 0.05);
  }
}
