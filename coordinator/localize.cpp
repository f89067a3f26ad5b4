#include "coordinator/localize.hpp"

#include <algorithm>
#include <iostream>
#include <set>

#include "common/checks.hpp"
#include "coordinator/analysis/judge.hpp"

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

std::vector<analysis::Switch> unit_switches(const Units& units, const LocalizeOptions& opts) {
  if (!opts.topology.empty() || units.kind != "node") return opts.topology;
  std::map<std::string, int> unit_of;
  for (std::size_t i = 0; i < units.names.size(); ++i) unit_of[units.names[i]] = static_cast<int>(i);
  std::vector<analysis::Switch> out;
  for (const auto& [leaf, hosts] : opts.leaves) {
    analysis::Switch sw{leaf, {}};
    for (const auto& h : hosts)
      if (auto it = unit_of.find(h); it != unit_of.end()) sw.nodes.push_back(it->second);
    if (!sw.nodes.empty()) out.push_back(std::move(sw));
  }
  return out;
}

namespace {

// The spec's figure for the test at its size (analysis::group_reference): across nodes by node; by
// rank, inside the node when every rank is on one host, else none (groups then mix both).
std::optional<analysis::GroupReference> reference_of(const Campaign& campaign, const Units& units,
                                                     const LocalizeOptions& opts, const std::string& metric) {
  std::vector<analysis::NodeSeen> seen;
  std::set<std::string> hosts;
  for (int r : units.rank_of) {
    const auto it = campaign.ranks().find(r);
    if (it == campaign.ranks().end()) return std::nullopt;
    hosts.insert(it->second.host);
    seen.push_back({it->second.host, {r}, {}, it->second.info});
  }
  const auto scope = units.kind == "node" ? spec::GroupScope::Inter
                     : hosts.size() == 1  ? spec::GroupScope::Intra
                                          : spec::GroupScope::None;
  return analysis::group_reference(campaign.expectations(), seen, opts.test, metric, opts.size_bytes, scope);
}

}  // namespace

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
  result.unit_ranks = units.rank_of;
  // The check declares its figure (a bandwidth or a latency) and which way is better.
  const FigureSpec figure = *find_check(opts.test)->figure;  // kiln run checked it is declared
  analysis::PlannerConfig cfg;
  cfg.outliers.direction =
      figure.higher_is_better ? analysis::Direction::HigherIsBetter : analysis::Direction::LowerIsBetter;
  cfg.votes = opts.votes;
  cfg.outliers.rel_cutoff = opts.rel_cutoff;
  cfg.mode = opts.mode == "full" ? analysis::Mode::Full : analysis::Mode::Adaptive;
  cfg.size_bytes = opts.size_bytes;
  result.reference = reference_of(campaign, units, opts, figure.metric);
  if (result.reference) cfg.outliers.reference[opts.size_bytes] = result.reference->value;
  analysis::Planner planner(static_cast<int>(units.names.size()), cfg, unit_switches(units, opts), units.names);
  // One message size: whichever size parameters the check declares all get it.
  nlohmann::json params = {{"deadline_s", opts.deadline_s}};
  for (const auto& ps : find_check(opts.test)->params)
    if (ps.name == "min_bytes" || ps.name == "max_bytes" || ps.name == "message_bytes" || ps.name == "bytes")
      params[ps.name] = opts.size_bytes;
  std::set<int> lost_units;
  while (auto plan = planner.next()) {
    if (campaign.stopping()) break;  // a signal or a disk that refuses writes: no more rounds
    for (std::size_t u = 0; u < units.rank_of.size(); ++u) {
      auto it = campaign.ranks().find(units.rank_of[u]);
      if (it == campaign.ranks().end() || it->second.lost) lost_units.insert(static_cast<int>(u));
    }
    proto::Round round;
    round.deadline_s = opts.deadline_s;
    round.tests = {{opts.test, params}};
    for (const auto& g : plan->groups) {
      std::vector<int> ranks;
      for (int unit : g)
        if (!lost_units.count(unit)) ranks.push_back(units.rank_of[static_cast<std::size_t>(unit)]);
      round.groups.push_back(ranks);
    }
    const auto rec = campaign.run_round(round, "localize: " + plan->reason, Phase::Localize);
    planner.observe(*plan, analysis::group_outcomes(*plan, rec, units.rank_of, lost_units, figure, opts.size_bytes));
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
