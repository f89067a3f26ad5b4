// One edge reading within the healthy spread after three slow retests does not clear a link
// suspicion where noise asks no more slow readings for it (evidence_edges.cpp, forgives_low in
// evidence_noise.cpp); a second one does, and so does one after fewer slow retests. At 16,384 nodes
// a 1.25x link read slow on three retests was cleared by a fourth at z 1.35 (seed 51).
//
// The campaigns run the simulator's diluted model (5% lognormal noise, 0.5% heavy-tailed
// stragglers) on a healthy cluster, with one link's readings in timed groups of four or more
// scripted in turn: the opening reading, then its retests.
#include "common/findings.hpp"
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/analysis/noise.hpp"
#include "coordinator/analysis/planner.hpp"
#include "coordinator/analysis/simulate.hpp"
#include "coordinator/analysis/simulate_model.hpp"

namespace analysis = kiln::analysis;
namespace noise = kiln::analysis::noise;

namespace {

struct Scripted {
  int a = 3, b = 1000;
  std::vector<double> script;  // the link's factors, in turn; the model's own draws after them
  std::size_t used = 0;
};

struct Outcome {
  std::set<std::pair<std::string, std::string>> found;  // (code, entity id)
  std::vector<std::string> summaries;
  int rounds = 0;
  bool forgives = false;  // story()["noise"]["edge_low_forgiven"] at the end
  int readings_needed = 0;  // story()["noise"]["edge_readings_needed"] at the end
};

Outcome campaign(int n, Scripted& s, std::uint64_t seed = 1, const char* model = "diluted") {
  analysis::SimulateOptions opt;
  analysis::apply_model(opt, model);
  opt.nodes = n, opt.bad_nodes = 0, opt.bad_links = 0, opt.per_peer = true;
  std::mt19937_64 rng(seed);
  analysis::ModelCluster cluster(opt, {}, rng);
  analysis::PlannerConfig cfg;
  cfg.seed = seed;
  cfg.outliers.size_invariant = true;
  analysis::Planner planner(n, cfg);
  while (auto plan = planner.next()) {
    cluster.begin_round(rng);
    std::vector<analysis::GroupOutcome> out;
    for (const auto& g : plan->groups) {
      auto o = cluster.evaluate(g, rng);
      if (g.size() >= 4)
        for (auto& e : o.edges)
          if (std::min(e.a, e.b) == s.a && std::max(e.a, e.b) == s.b && s.used < s.script.size())
            e.value = opt.test_seconds * s.script[s.used++];
      out.push_back(std::move(o));
    }
    planner.observe(*plan, std::move(out));
  }
  Outcome r;
  r.rounds = planner.rounds();
  r.forgives = planner.story()["noise"].value("edge_low_forgiven", false);
  r.readings_needed = planner.story()["noise"].value("edge_readings_needed", 0);
  for (const auto& f : planner.findings())
    r.found.insert({kiln::to_string(f.code), f.entity.id}), r.summaries.push_back(f.summary);
  return r;
}

const std::pair<std::string, std::string> kLink{"link.slow", "node3<->node1000"};
const std::pair<std::string, std::string> kUnresolved{"localize.unresolved", "node3<->node1000"};

}  // namespace

TEST_CASE("forgive: the chance that noise confirms counts the one fast reading forgiven", "[analysis][forgive]") {
  // q^k alone, and with one fast reading allowed in any of the k - 3 gaps after the third slow one.
  // 1% of edge readings slow, 8,000 suspicions (about 1,024 nodes): 8000 x 1e-8 = 8e-5 within 1e-4
  // asks four, but forgiving one doubles it (8000 x 1e-8 x 1.99), so it asks five.
  CHECK(noise::repeats_needed(0.01, 8000.0, 3, 1e-4) == 4);
  CHECK(noise::repeats_needed_one_miss(0.01, 8000.0, 3, 3, 1e-4) == 5);
  // 2% with 1,000 suspicions: five either way (1000 x 3.2e-9 x 2.96 is within it).
  CHECK(noise::repeats_needed(0.02, 1000.0, 3, 1e-4) == 5);
  CHECK(noise::repeats_needed_one_miss(0.02, 1000.0, 3, 3, 1e-4) == 5);
  // With k at the guard no fast reading can come after the guard's slow ones: the same k.
  CHECK(noise::repeats_needed_one_miss(0.005, 100.0, 3, 3, 1e-4) == noise::repeats_needed(0.005, 100.0, 3, 1e-4));
  // The chosen k meets alpha; k - 1 did not.
  const double q = 0.03, t = 1.3e6;
  const int k = noise::repeats_needed_one_miss(q, t, 3, 3, 1e-4);
  auto chance = [&](int r) { return std::pow(q, r) * (1.0 + std::max(0, r - 3) * (1.0 - q)); };
  CHECK(t * chance(k) <= 1e-4);
  CHECK(t * chance(k - 1) > 1e-4);
  // Unknown rates, or nothing to judge: the floor.
  CHECK(noise::repeats_needed_one_miss(0.0, 1000.0, 3, 3, 1e-4) == 3);
  CHECK(noise::repeats_needed_one_miss(0.02, 0.0, 3, 3, 1e-4) == 3);
}

TEST_CASE("forgive: a 1.25x link read low once after three slow retests is found", "[analysis][forgive]") {
  Scripted s;
  // Opened in the cover; retests slow, slow, slow, within the spread, then slow.
  s.script = {1.25, 1.25, 1.25, 1.25, 1.0, 1.25, 1.25, 1.25, 1.25};
  const auto r = campaign(1024, s);
  CHECK(r.forgives);
  CHECK(s.used >= 6);
  CHECK(r.found.count(kLink) == 1);
  CHECK(r.found.size() == 1);
  CHECK(r.rounds <= 2 * 10 + 10);
}

TEST_CASE("forgive: a low reading after fewer than three slow retests clears the link", "[analysis][forgive]") {
  Scripted s;
  s.script = {1.25, 1.25, 1.25, 1.0, 1.25, 1.25, 1.25, 1.25, 1.25};
  const auto r = campaign(1024, s);
  CHECK(s.used == 4);  // nothing read it after the clearing reading
  CHECK(r.found.empty());
}

TEST_CASE("forgive: a second low reading clears the link", "[analysis][forgive]") {
  Scripted s;
  s.script = {1.25, 1.25, 1.25, 1.25, 1.0, 1.25, 1.0, 1.25, 1.25, 1.25};
  const auto r = campaign(1024, s);
  CHECK(s.used == 7);
  CHECK(r.found.empty());
}

TEST_CASE("forgive: at 4,096 nodes, where forgiving would ask a sixth reading, one low reading clears", "[analysis][forgive]") {
  Scripted s;
  s.script = {1.25, 1.25, 1.25, 1.25, 1.0, 1.25, 1.25, 1.25, 1.25};
  const auto r = campaign(4096, s);
  CHECK_FALSE(r.forgives);
  // The fifth reading (the fourth retest) clears it, and no retest follows: it is the last reading
  // of the link. (Before pair-only links ran past 256 nodes, a group of the search held the pair by
  // chance five rounds later, a sixth reading that was no retest either.) Forgiven, two more slow
  // retests would have confirmed it (the case above).
  CHECK(s.used == 5);
  CHECK(r.found.empty());
}

TEST_CASE("forgive: a link whose retests run out after a forgiven low reading is reported undecided", "[analysis][forgive]") {
  Scripted s;
  // Slow three times, within the spread once (forgiven), then in between (z about 2; 1.10 reads
  // z 1.48 at 1,024 nodes, within the spread) until the retests run out. After the opening reading
  // come one with the cover (round 13 of this seed) and 8 retests: 5 to confirm, 2 spare for the
  // in-between readings, 1 for the forgiven one.
  s.script = {1.25, 1.25, 1.25, 1.25, 1.0, 1.12, 1.12, 1.12, 1.12, 1.12, 1.12};
  const auto r = campaign(1024, s);
  CHECK(s.used == 10);
  CHECK(r.found.count(kUnresolved) == 1);
  CHECK(r.found.count(kLink) == 0);
  REQUIRE(r.summaries.size() == 1);
  CHECK(r.summaries[0].find("3 of 9 later edge reading(s) slow, one within the healthy spread") != std::string::npos);
}

TEST_CASE("forgive: where k slow readings confirm, k / 2 readings in between buy a retest each", "[analysis][forgive]") {
  // Under 5% heavy-tailed stragglers at 1,024 nodes the campaign's own base rates ask k = 7 slow
  // readings, so 3 in-between readings are spared (2 where k is 5 or less). The link's 11 readings
  // after the one that opened it (z about 4 slow, about 1.8 in between; the first comes with the
  // cover, the other 10 are retests) hold 4 in between, and the 11th is the 7th slow one: with
  // two spares its retests ran out at 9, with 6 slow readings, and it was reported undecided.
  Scripted s;
  s.script = {1.25, 1.25, 1.10, 1.25, 1.10, 1.25, 1.10, 1.25, 1.10, 1.25, 1.25, 1.25, 1.25, 1.25};
  const auto r = campaign(1024, s, 1, "heavy-tail");
  CHECK(r.readings_needed == 7);
  CHECK(s.used == 12);
  CHECK(r.found.count(kLink) == 1);
  CHECK(r.found.count(kUnresolved) == 0);
}
