#include "coordinator/localize.hpp"

#include <algorithm>
#include <iostream>

namespace kiln::coord {

Units choose_units(const std::map<int, RankState>& ranks, const std::string& by) {
  Units u;
  std::map<std::string, int> first_rank;
  for (const auto& [r, st] : ranks)
    if (st.joined && !st.lost && !first_rank.count(st.host)) first_rank[st.host] = r;
  std::string mode = by;
  if (mode == "auto") mode = first_rank.size() >= 2 ? "node" : "off";
  if (mode == "node") {
    u.kind = "node";
    for (const auto& [host, r] : first_rank) {
      u.names.push_back(host);
      u.rank_of.push_back(r);
    }
  } else if (mode == "rank") {
    u.kind = "rank";
    for (const auto& [r, st] : ranks)
      if (st.joined && !st.lost) {
        u.names.push_back(st.host + "/rank" + std::to_string(r));
        u.rank_of.push_back(r);
      }
  }
  return u;
}

std::vector<analysis::GroupOutcome> outcomes_from_round(const analysis::RoundPlan& plan, const RoundRecord& rec,
                                                        const Units& units, const std::set<int>& lost_units,
                                                        std::int64_t size_bytes) {
  std::vector<analysis::GroupOutcome> out;
  // The round sent only the live members of each planned group, in plan order.
  for (std::size_t g = 0; g < plan.groups.size(); ++g) {
    analysis::GroupOutcome o;
    o.members = plan.groups[g];
    std::vector<int> live_ranks;
    for (int unit : plan.groups[g]) {
      const int rank = units.rank_of[static_cast<std::size_t>(unit)];
      if (lost_units.count(unit) || rec.missing.count(rank))
        o.missing.push_back(unit);
      else
        live_ranks.push_back(rank);
    }
    std::optional<double> slowest;
    for (const auto& r : rec.results) {
      if (std::find(live_ranks.begin(), live_ranks.end(), r.rank) == live_ranks.end()) continue;
      if (r.metric == "status" && r.status == Status::Timeout) o.timed_out = true;
      if (r.metric == "busbw" && r.size_bytes && *r.size_bytes >= size_bytes * 9 / 10 &&
          (r.status == Status::Pass || r.status == Status::Fail))
        slowest = slowest ? std::min(*slowest, r.value) : r.value;
    }
    if (!o.timed_out) o.value = slowest;
    if (!o.value && !o.timed_out && o.missing.empty()) o.timed_out = true;  // ran, but produced nothing
    out.push_back(std::move(o));
  }
  return out;
}

LocalizeOutcome localize(Campaign& campaign, const LocalizeOptions& opts) {
  LocalizeOutcome result;
  if (opts.by == "off") {
    result.skipped_because = "localization is off";
    return result;
  }
  const Units units = choose_units(campaign.ranks(), opts.by);
  if (units.names.size() < 2) {
    result.skipped_because = "fewer than two " + std::string(opts.by == "rank" ? "ranks" : "nodes") +
                             " to compare (use --localize-by rank to compare ranks on one host)";
    return result;
  }
  result.ran = true;
  result.units = units.names;
  analysis::PlannerConfig cfg;
  cfg.outliers.direction = analysis::Direction::HigherIsBetter;  // busbw
  cfg.votes = opts.votes;
  cfg.outliers.rel_cutoff = opts.rel_cutoff;
  cfg.mode = opts.mode == "full" ? analysis::Mode::Full : analysis::Mode::Adaptive;
  cfg.size_bytes = opts.size_bytes;
  analysis::Planner planner(static_cast<int>(units.names.size()), cfg, opts.topology, units.names);
  std::set<int> lost_units;
  while (auto plan = planner.next()) {
    if (stop_requested()) break;
    for (std::size_t u = 0; u < units.rank_of.size(); ++u) {
      auto it = campaign.ranks().find(units.rank_of[u]);
      if (it == campaign.ranks().end() || it->second.lost) lost_units.insert(static_cast<int>(u));
    }
    proto::Round round;
    round.deadline_s = opts.deadline_s;
    round.tests = {{opts.test,
                    {{"min_bytes", opts.size_bytes}, {"max_bytes", opts.size_bytes}, {"deadline_s", opts.deadline_s}}}};
    for (const auto& g : plan->groups) {
      std::vector<int> ranks;
      for (int unit : g)
        if (!lost_units.count(unit)) ranks.push_back(units.rank_of[static_cast<std::size_t>(unit)]);
      round.groups.push_back(ranks);
    }
    const auto rec = campaign.run_round(round, "localize: " + plan->reason, Phase::Localize);
    planner.observe(*plan, outcomes_from_round(*plan, rec, units, lost_units, opts.size_bytes));
  }
  result.findings = planner.findings();
  if (units.kind == "rank")
    for (auto& f : result.findings)
      if (f.entity.kind == "node") f.entity.kind = "rank";
  result.story = planner.story();
  result.rounds = planner.rounds();
  return result;
}

}  // namespace kiln::coord
