// The planner's round strategies (screen, resolve, split, certify, all-pairs), each seen the way an
// operator sees it: the rounds a campaign runs and the findings it ends with. The cluster is a
// noiseless model (a group is 3x slower when it holds a bad node or both ends of a bad link), so
// every result follows from the faults alone.
#include "common/findings.hpp"
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/analysis/planner.hpp"

using kiln::analysis::GroupOutcome;
using kiln::analysis::Mode;
using kiln::analysis::Planner;
using kiln::analysis::PlannerConfig;
using kiln::analysis::RoundPlan;

namespace {

using Pair = std::pair<int, int>;

struct Model {
  std::set<int> bad;
  std::set<Pair> links;                  // (low, high)
  std::map<int, std::int64_t> down;      // node -> first round it misses
  bool slow(const std::vector<int>& g) const {
    auto in = [&](int u) { return std::find(g.begin(), g.end(), u) != g.end(); };
    if (std::any_of(g.begin(), g.end(), [&](int u) { return bad.count(u) > 0; })) return true;
    return std::any_of(links.begin(), links.end(), [&](const Pair& l) { return in(l.first) && in(l.second); });
  }
};

struct Campaign {
  std::vector<RoundPlan> plans;
  std::vector<std::vector<bool>> fast;   // per plan, per group: came back fast
  std::vector<kiln::Finding> findings;
  std::set<std::pair<std::string, std::string>> found;  // (code, entity id)
};

// Runs a campaign to the end. after_first may plant faults once the first round is known, so a
// test can put a bad link where the screen did (or did not) pair its ends.
Campaign run(Planner& planner, Model model,
             const std::function<void(const RoundPlan&, Model&)>& after_first = {}) {
  Campaign c;
  while (auto plan = planner.next()) {
    if (plan->id == 1 && after_first) after_first(*plan, model);
    std::vector<GroupOutcome> out;
    std::vector<bool> fast;
    for (const auto& g : plan->groups) {
      GroupOutcome o;
      o.members = g;
      for (int u : g)
        if (model.down.count(u) && plan->id >= model.down.at(u)) o.missing.push_back(u);
      const bool slow = model.slow(g);
      if (o.missing.empty()) o.value = slow ? 3.0 : 1.0;
      else o.timed_out = true;
      fast.push_back(!slow && o.missing.empty());
      out.push_back(std::move(o));
    }
    c.plans.push_back(*plan);
    c.fast.push_back(fast);
    planner.observe(*plan, std::move(out));
  }
  c.findings = planner.findings();
  for (const auto& f : c.findings) c.found.insert({kiln::to_string(f.code), f.entity.id});
  return c;
}

Pair ordered(int a, int b) { return {std::min(a, b), std::max(a, b)}; }

bool has(const std::vector<int>& g, int u) { return std::find(g.begin(), g.end(), u) != g.end(); }

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Pairs of nodes that have been in a fast group together.
std::set<Pair> cleared_pairs(const Campaign& c) {
  std::set<Pair> out;
  for (std::size_t r = 0; r < c.plans.size(); ++r)
    for (std::size_t i = 0; i < c.plans[r].groups.size(); ++i) {
      if (!c.fast[r][i]) continue;
      const auto& g = c.plans[r].groups[i];
      for (int a : g)
        for (int b : g)
          if (a < b) out.insert({a, b});
    }
  return out;
}

std::string node(int u) { return "node" + std::to_string(u); }

}  // namespace

// --- screen -------------------------------------------------------------------------------------

TEST_CASE("screen: the first round pairs every node exactly once", "[analysis][strategy][screen]") {
  for (int n : {2, 8, 10, 64}) {
    INFO("n=" << n);
    PlannerConfig cfg;
    cfg.exact_below = 0;  // n=2 would otherwise be tested exactly, pair by pair
    Planner p(n, cfg);
    const auto plan = p.next();
    REQUIRE(plan);
    CHECK(starts_with(plan->reason, "screen: every node in a group of 2"));
    CHECK(plan->kind == "pairs");
    CHECK(plan->groups.size() == static_cast<std::size_t>(n / 2));
    std::set<int> seen;
    for (const auto& g : plan->groups) {
      CHECK(g.size() == 2);
      for (int u : g) CHECK(seen.insert(u).second);
    }
    CHECK(seen.size() == static_cast<std::size_t>(n));
  }
}

TEST_CASE("screen: with an odd count one node sits out, and meets a known-good node next round",
          "[analysis][strategy][screen]") {
  Planner p(9);
  const auto c = run(p, {});
  REQUIRE(c.plans.size() >= 2);
  CHECK(c.plans[0].reason.find("one node sits out") != std::string::npos);
  std::set<int> screened;
  for (const auto& g : c.plans[0].groups) screened.insert(g.begin(), g.end());
  REQUIRE(screened.size() == 8);
  int out = -1;
  for (int u = 0; u < 9; ++u)
    if (!screened.count(u)) out = u;
  // Round 2 pairs it with a node the screen proved fine.
  bool met_good = false;
  for (const auto& g : c.plans[1].groups)
    if (g.size() == 2 && has(g, out)) met_good = screened.count(g[0] == out ? g[1] : g[0]) > 0;
  CHECK(met_good);
  CHECK(c.findings.empty());
}

TEST_CASE("screen: larger screening groups still hold every node once", "[analysis][strategy][screen]") {
  PlannerConfig cfg;
  cfg.screen_group_size = 4;
  Planner p(10, cfg);
  const auto plan = p.next();
  REQUIRE(plan);
  CHECK(plan->kind == "all_to_all");
  std::multiset<std::size_t> sizes;
  std::set<int> seen;
  for (const auto& g : plan->groups) {
    sizes.insert(g.size());
    for (int u : g) CHECK(seen.insert(u).second);
  }
  CHECK(sizes == std::multiset<std::size_t>{2, 4, 4});
  CHECK(seen.size() == 10);
}

// --- resolve ------------------------------------------------------------------------------------

TEST_CASE("resolve: a slow screening pair is followed by each end meeting a new known-good partner",
          "[analysis][strategy][resolve]") {
  Planner p(8);
  const auto c = run(p, {.bad = {5}});
  REQUIRE(c.plans.size() >= 2);
  // The screen partner of the slow node is a suspect too, until it proves fine elsewhere.
  int partner = -1;
  std::set<int> known_good;
  for (std::size_t i = 0; i < c.plans[0].groups.size(); ++i) {
    const auto& g = c.plans[0].groups[i];
    if (has(g, 5)) partner = g[0] == 5 ? g[1] : g[0];
    else known_good.insert(g.begin(), g.end());
  }
  REQUIRE(partner >= 0);
  const auto& r2 = c.plans[1];
  CHECK(r2.reason.find("2 suspect(s) paired with distinct known-good nodes") != std::string::npos);
  for (int suspect : {5, partner}) {
    INFO("suspect node" << suspect);
    int met = -1;
    for (const auto& g : r2.groups)
      if (g.size() == 2 && has(g, suspect)) met = g[0] == suspect ? g[1] : g[0];
    CHECK(known_good.count(met) == 1);
  }
  // Slow with its screen partner (now proven fine) and with the new known-good partner: two votes.
  CHECK(c.found == std::set<std::pair<std::string, std::string>>{{"node.slow", node(5)}});
}

TEST_CASE("resolve: a slow screening pair whose ends are fine elsewhere is retested as a link",
          "[analysis][strategy][resolve]") {
  Planner p(8);
  Pair link{-1, -1};
  const auto c = run(p, {}, [&](const RoundPlan& first, Model& m) {
    const auto& g = first.groups.front();
    link = ordered(g[0], g[1]);
    m.links.insert(link);
  });
  // Round 2 proves both ends fine with other partners; round 3 retests the pair at once, without
  // waiting for certification, since only pair tests speak for it.
  std::int64_t retested_in = 0;
  for (const auto& plan : c.plans) {
    if (plan.reason.find("retest 1 link candidate(s) for votes") == std::string::npos) continue;
    for (const auto& g : plan.groups)
      if (g.size() == 2 && ordered(g[0], g[1]) == link && retested_in == 0) retested_in = plan.id;
  }
  CHECK(retested_in == 3);
  // The ends are not blamed: the finding is the link.
  CHECK(c.found == std::set<std::pair<std::string, std::string>>{
                       {"link.slow", node(link.first) + "<->" + node(link.second)}});
}

// --- split --------------------------------------------------------------------------------------

TEST_CASE("split: a bad link among known-good nodes is bisected down to the pair",
          "[analysis][strategy][split]") {
  Planner p(16);
  Pair link{-1, -1};
  // Ends in different screening pairs, so the screen is all fast and only the link search sees it.
  const auto c = run(p, {}, [&](const RoundPlan& first, Model& m) {
    link = ordered(first.groups[0][0], first.groups[1][0]);
    m.links.insert(link);
  });
  REQUIRE(c.plans.size() >= 4);
  // Round 2: one all-to-all group over every node (all known-good after the screen); it is slow.
  CHECK(c.plans[1].groups.size() == 1);
  CHECK(c.plans[1].groups[0].size() == 16);
  CHECK(c.plans[1].reason.find("all-to-all over 16 known-good nodes") != std::string::npos);
  // Round 3 splits it into two halves of 8 that together hold all 16.
  const auto& r3 = c.plans[2];
  CHECK(starts_with(r3.reason, "bisect 1 slow group(s) in parallel"));
  REQUIRE(r3.groups.size() == 2);
  std::set<int> both;
  for (const auto& g : r3.groups) {
    CHECK(g.size() == 8);
    both.insert(g.begin(), g.end());
  }
  CHECK(both.size() == 16);
  // Bisecting shrinks the groups that hold both ends until the pair itself is tested.
  std::size_t smallest = 16;
  for (const auto& plan : c.plans)
    if (starts_with(plan.reason, "bisect"))
      for (const auto& g : plan.groups)
        if (has(g, link.first) && has(g, link.second)) smallest = std::min(smallest, g.size());
  CHECK(smallest <= 4);
  CHECK(c.found == std::set<std::pair<std::string, std::string>>{
                       {"link.slow", node(link.first) + "<->" + node(link.second)}});
  CHECK(c.plans.size() <= 2 * 4 + 6);  // 2*log2(N)+6
}

TEST_CASE("split: nodes a search has let go are swept in one group in the same round",
          "[analysis][strategy][split]") {
  Planner p(32);
  Pair link{-1, -1};
  const auto c = run(p, {}, [&](const RoundPlan& first, Model& m) {
    link = ordered(first.groups[0][0], first.groups[1][0]);
    m.links.insert(link);
  });
  int sweeps = 0;
  for (const auto& plan : c.plans) {
    const auto at = plan.reason.find("; sweep the ");
    if (at == std::string::npos) continue;
    ++sweeps;
    // The sweep rides along with the search's own groups and holds neither end of the link.
    CHECK(starts_with(plan.reason, "bisect"));
    const auto k = std::stoul(plan.reason.substr(at + 12));
    REQUIRE(plan.groups.size() >= 2);
    const auto& sweep = plan.groups.back();
    CHECK(sweep.size() == k);
    CHECK_FALSE(has(sweep, link.first));
    CHECK_FALSE(has(sweep, link.second));
  }
  CHECK(sweeps >= 1);
  CHECK(c.found == std::set<std::pair<std::string, std::string>>{
                       {"link.slow", node(link.first) + "<->" + node(link.second)}});
}

TEST_CASE("split: with a larger screening group, a slow group is bisected down to the slow node",
          "[analysis][strategy][split]") {
  PlannerConfig cfg;
  cfg.screen_group_size = 8;
  Planner p(16, cfg);
  const auto c = run(p, {.bad = {3}});
  REQUIRE(c.plans.size() >= 2);
  bool bisected = false;
  for (const auto& plan : c.plans)
    if (starts_with(plan.reason, "bisect"))
      for (const auto& g : plan.groups) bisected = bisected || (has(g, 3) && g.size() == 4);
  CHECK(bisected);
  CHECK(c.found == std::set<std::pair<std::string, std::string>>{{"node.slow", node(3)}});
}

// --- certify ------------------------------------------------------------------------------------

TEST_CASE("certify: after a link is found, every other pair of good nodes is tested together",
          "[analysis][strategy][certify]") {
  Planner p(16);
  Pair link{-1, -1};
  const auto c = run(p, {}, [&](const RoundPlan& first, Model& m) {
    link = ordered(first.groups[0][0], first.groups[1][0]);
    m.links.insert(link);
  });
  std::vector<const RoundPlan*> cert;
  for (const auto& plan : c.plans)
    if (starts_with(plan.reason, "certify:")) cert.push_back(&plan);
  // One candidate: its ends get two colours, so two rounds, each a group of every other node plus
  // one end. The candidate's own pair is never in a certification group.
  REQUIRE(cert.size() == 2);
  CHECK(cert[0]->reason.find("except the 1 link candidate(s)") != std::string::npos);
  std::set<Pair> covered;
  for (const auto* plan : cert)
    for (const auto& g : plan->groups) {
      CHECK_FALSE((has(g, link.first) && has(g, link.second)));
      for (int a : g)
        for (int b : g)
          if (a < b) covered.insert({a, b});
    }
  CHECK(covered.size() == 16 * 15 / 2 - 1);
  // Certification is the last kind of round planned.
  CHECK(starts_with(c.plans.back().reason, "certify:"));
}

TEST_CASE("certify: by the end every pair of healthy nodes has been in a fast group together",
          "[analysis][strategy][certify]") {
  // Two links and a slow node: the search finds one link, certification or the idle sweep the
  // other; either way no pair of healthy nodes is left untested.
  Planner p(32);
  std::set<Pair> links;
  const auto c = run(p, {}, [&](const RoundPlan& first, Model& model) {
    model.bad = {first.groups[5][1]};
    links = {ordered(first.groups[0][0], first.groups[1][0]),
             ordered(first.groups[2][0], first.groups[3][0])};
    model.links = links;
  });
  std::set<std::pair<std::string, std::string>> want;
  for (const auto& f : c.findings)
    if (f.code == kiln::Code::NodeSlow) want.insert({kiln::to_string(f.code), f.entity.id});
  REQUIRE(want.size() == 1);
  for (const auto& [a, b] : links) want.insert({"link.slow", node(a) + "<->" + node(b)});
  CHECK(c.found == want);
  const auto cleared = cleared_pairs(c);
  int bad_node = -1;
  for (int u = 0; u < 32; ++u)
    if (want.count({"node.slow", node(u)})) bad_node = u;
  for (int a = 0; a < 32; ++a)
    for (int b = a + 1; b < 32; ++b) {
      if (a == bad_node || b == bad_node || links.count({a, b})) continue;
      INFO("pair " << a << "," << b);
      CHECK(cleared.count({a, b}) == 1);
    }
}

TEST_CASE("certify: a healthy cluster needs no certification round", "[analysis][strategy][certify]") {
  // The link search's one fast group over every node already held every pair.
  Planner p(12);
  const auto c = run(p, {});
  REQUIRE(c.plans.size() == 2);
  for (const auto& plan : c.plans) CHECK_FALSE(starts_with(plan.reason, "certify:"));
  CHECK(c.findings.empty());
}

// --- all-pairs (Full mode) ----------------------------------------------------------------------

TEST_CASE("all-pairs: Full mode tests every pair exactly once, N-1 rounds of N/2 pairs",
          "[analysis][strategy][all-pairs]") {
  for (int n : {6, 7}) {
    INFO("n=" << n);
    PlannerConfig cfg;
    cfg.mode = Mode::Full;
    cfg.exact_below = 0;  // below 8 nodes every pair is otherwise swept three times (exact)
    Planner p(n, cfg);
    const auto c = run(p, {});
    const int rounds = n % 2 == 0 ? n - 1 : n;  // an odd count adds a sit-out slot
    REQUIRE(c.plans.size() == static_cast<std::size_t>(rounds));
    std::set<Pair> pairs;
    for (int r = 0; r < rounds; ++r) {
      const auto& plan = c.plans[r];
      CHECK(starts_with(plan.reason, "full coverage: circle-method round " + std::to_string(r + 1) +
                                         " of " + std::to_string(rounds)));
      CHECK(plan.kind == "pairs");
      CHECK(plan.groups.size() == static_cast<std::size_t>(n / 2));
      for (const auto& g : plan.groups) CHECK(pairs.insert(ordered(g[0], g[1])).second);
    }
    CHECK(pairs.size() == static_cast<std::size_t>(n * (n - 1) / 2));
    CHECK(c.findings.empty());
  }
}

TEST_CASE("all-pairs: a lost node is left out of the remaining circle rounds",
          "[analysis][strategy][all-pairs]") {
  PlannerConfig cfg;
  cfg.mode = Mode::Full;
  Planner p(8, cfg);
  const auto c = run(p, {.bad = {6}, .down = {{2, 3}}});
  bool lost_seen = false;
  for (const auto& plan : c.plans) {
    bool holds = false;
    for (const auto& g : plan.groups) holds = holds || has(g, 2);
    if (plan.id > 3) CHECK_FALSE(holds);
    lost_seen = lost_seen || (plan.id == 3 && holds);
  }
  CHECK(lost_seen);
  CHECK(c.found == std::set<std::pair<std::string, std::string>>{{"node.lost", node(2)},
                                                                 {"node.slow", node(6)}});
}
