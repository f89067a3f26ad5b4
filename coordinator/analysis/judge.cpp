#include "coordinator/analysis/judge.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "common/findings.hpp"
#include "coordinator/analysis/behind.hpp"

namespace kiln::analysis {

namespace {

using json = nlohmann::json;

bool bad(Status s) { return s == Status::Fail || s == Status::Error || s == Status::Timeout; }

Code code_for(Status s) {
  return s == Status::Timeout ? Code::TestTimeout : s == Status::Error ? Code::TestError : Code::TestFail;
}

void fate_findings(int expected_ranks, const std::vector<RankFate>& fates, std::vector<Finding>& out) {
  std::map<int, const RankFate*> by_rank;
  for (const auto& f : fates) by_rank[f.rank] = &f;
  for (int r = 0; r < expected_ranks; ++r) {
    const auto it = by_rank.find(r);
    const Entity ent{"rank", std::to_string(r)};
    if (it == by_rank.end() || !it->second->joined) {
      out.push_back(make_finding(Code::RankMissing, ent, "rank " + std::to_string(r) + " never connected to the coordinator"));
    } else if (it->second->lost) {
      const auto& f = *it->second;
      out.push_back(make_finding(Code::RankLost, ent, "rank " + std::to_string(r) + " on " + f.host + " was lost: " + f.lost_reason,
                                 json::array({{{"host", f.host}, {"reason", f.lost_reason}}})));
    }
  }
}

// One finding per (code, entity), with up to five results as evidence.
struct Bucket {
  std::vector<json> evidence;
  std::size_t count = 0;
  std::string summary;
};

void add(std::map<std::tuple<Code, std::string, std::string>, Bucket>& bad_by, Code code, const Entity& ent,
         const std::string& summary, json evidence) {
  auto& b = bad_by[{code, ent.kind, ent.id}];
  if (b.count == 0) b.summary = summary;
  if (b.evidence.size() < 5) b.evidence.push_back(std::move(evidence));
  ++b.count;
}

std::string describe(const std::string& test, Status s, const Entity& ent, const std::string& host,
                     const std::string& reason) {
  std::string out = test + " " + to_string(s) + " on " + ent.kind + " " + ent.id + " (" + host + ")";
  if (!reason.empty()) out += ": " + reason;
  return out;
}

// The ranks of a round whose group check went wrong because a peer was lost in that round: they
// waited on a rank that was gone (an MPI collective hangs or errors), so their timeouts, errors and
// failures of group checks say nothing about them. The lost rank has its own finding.
std::set<int> collateral_of(const RoundRecord& rr, const std::set<int>& lost) {
  std::set<int> gone;
  for (int r : rr.missing)
    if (lost.count(r)) gone.insert(r);
  std::set<int> out;
  if (gone.empty()) return out;
  auto take = [&](const std::vector<int>& members) {
    if (std::none_of(members.begin(), members.end(), [&](int m) { return gone.count(m) > 0; })) return;
    for (int m : members)
      if (!gone.count(m)) out.insert(m);
  };
  if (rr.round.groups.empty()) take(std::vector<int>(rr.expected.begin(), rr.expected.end()));
  for (const auto& g : rr.round.groups) take(g);
  return out;
}

Finding behind_finding(const Behind& b) {
  std::string names;
  for (int r : b.behind) names += (names.empty() ? "" : ", ") + std::to_string(r);
  const std::string summary = b.test + " overran its deadline in round " + b.evidence.value("round", json()).dump() +
                              ": the group was waiting for rank" + (b.behind.size() > 1 ? "s " : " ") + names;
  return make_finding(Code::GroupBehind, {"rank", std::to_string(b.behind.front())}, summary, b.evidence);
}

bool group_check(const std::string& key) {
  const auto* spec = find_check(key);
  return spec && spec->scope == Scope::Group;
}

// A result that carries the group's figure at the localization size.
bool figure_result(const Result& r, const std::set<int>& live, const FigureSpec& figure, std::int64_t size_bytes) {
  if (!live.count(r.rank) || r.metric != figure.metric) return false;
  if (r.status != Status::Pass && r.status != Status::Fail) return false;
  return !figure.per_size || (r.size_bytes && *r.size_bytes >= size_bytes * 9 / 10);
}

// Per-edge figures from the members' per-peer timings (extra.peers: world ranks of the peers and
// the figure for each, as mpi.alltoall reports them). A member's entry for a peer is the peer's
// block arriving at it, one direction; an edge keeps the worse of the two it has. Peers outside
// the group's live members and malformed entries (a worker's word, bounded here) are left out.
std::vector<EdgeFigure> edges_of(const std::vector<Result>& results, const std::map<int, int>& unit_of,
                                 const std::set<int>& live, const FigureSpec& figure, std::int64_t size_bytes) {
  std::map<std::pair<int, int>, double> worst;
  for (const auto& r : results) {
    if (!figure_result(r, live, figure, size_bytes)) continue;
    const auto peers = r.extra.find("peers");
    if (peers == r.extra.end() || !peers->is_object()) continue;
    const auto ranks = peers->find("ranks");
    const auto values = peers->find(figure.metric);
    if (ranks == peers->end() || values == peers->end() || !ranks->is_array() || !values->is_array()) continue;
    for (std::size_t i = 0; i < std::min(ranks->size(), values->size()); ++i) {
      const auto& pr = (*ranks)[i];
      const auto& pv = (*values)[i];
      if (!pr.is_number_integer() || !pv.is_number()) continue;
      const int peer = pr.get<int>();
      const double v = pv.get<double>();
      if (peer == r.rank || !live.count(peer) || !std::isfinite(v) || v <= 0) continue;
      const std::pair<int, int> key = std::minmax(unit_of.at(r.rank), unit_of.at(peer));
      const auto [it, fresh] = worst.emplace(key, v);
      if (!fresh) it->second = figure.higher_is_better ? std::min(it->second, v) : std::max(it->second, v);
    }
  }
  std::vector<EdgeFigure> out;
  for (const auto& [key, v] : worst) out.push_back({key.first, key.second, v});
  return out;
}

}  // namespace

std::vector<Finding> judge_plan(int expected_ranks, const std::vector<RankFate>& fates,
                                const std::vector<RoundRecord>& rounds) {
  std::vector<Finding> out;
  fate_findings(expected_ranks, fates, out);
  std::set<int> lost;
  for (const auto& f : fates)
    if (f.lost) lost.insert(f.rank);
  std::map<std::tuple<Code, std::string, std::string>, Bucket> bad_by;
  for (const auto& rr : rounds) {
    if (rr.phase == Phase::Localize) continue;  // the planner judges those
    if (!rr.finished) continue;                 // cut short: run again on resume, judged there
    const auto collateral = collateral_of(rr, lost);
    // A group that overran while waiting for some of its members: one finding names them, and
    // every member's timeout in that check (and a member left unfinished) is its consequence.
    std::set<std::pair<int, std::string>> behind_spared;
    std::set<int> behind_groups;
    for (auto& b : find_behind(rr)) {
      for (int m : b.members) behind_spared.insert({m, b.test}), behind_groups.insert(m);
      out.push_back(behind_finding(b));
    }
    auto spared = [&](int rank, const std::string& test) {
      return (collateral.count(rank) && group_check(test)) || behind_spared.count({rank, test});
    };
    for (const auto& r : rr.results) {
      if (!bad(r.status) || spared(r.rank, r.test)) continue;
      // Workers stamp the entity; a record without one (read back from a hand-edited file) is the rank's.
      const Entity ent = r.entity.kind.empty() ? Entity{"rank", std::to_string(r.rank)} : r.entity;
      const auto summary = describe(r.test, r.status, ent, r.host, r.reason);
      if (r.problems.empty()) add(bad_by, code_for(r.status), ent, summary, r);
      for (const auto& p : r.problems)
        add(bad_by, p.code, ent, p.code == Code::ResultInvalid ? summary + " (" + p.what + ")" : summary, r);
    }
    // A check that failed has its failing measurements as evidence; one that ended in error or
    // timeout may have none, so its end is the finding.
    for (const auto& e : rr.ends)
      if ((e.status == Status::Error || e.status == Status::Timeout) && !spared(e.rank, e.test)) {
        const Entity ent{"rank", std::to_string(e.rank)};
        add(bad_by, code_for(e.status), ent, describe(e.test, e.status, ent, e.host, e.reason), e);
      }
    for (int r : rr.missing) {
      if (lost.count(r) || behind_groups.count(r)) continue;  // already a rank.lost or group.behind finding
      if (collateral.count(r) && std::any_of(rr.round.tests.begin(), rr.round.tests.end(),
                                             [](const auto& t) { return group_check(t.key); }))
        continue;  // hung in a collective with a rank that was gone
      add(bad_by, Code::TestTimeout, {"rank", std::to_string(r)},
          "rank " + std::to_string(r) + " did not finish round " + std::to_string(rr.round.id) + " before its deadline",
          {{"round", rr.round.id}, {"duration_s", rr.duration_s}});
    }
  }
  for (auto& [key, b] : bad_by) {
    const auto& [code, kind, id] = key;
    std::string summary = b.summary;
    if (b.count > 1) summary += " [" + std::to_string(b.count) + " results]";
    out.push_back(make_finding(code, {kind, id}, summary, json(b.evidence)));
  }
  return out;
}

std::vector<GroupOutcome> group_outcomes(const RoundPlan& plan, const RoundRecord& rec,
                                         const std::vector<int>& unit_rank, const std::set<int>& lost_units,
                                         const FigureSpec& figure, std::int64_t size_bytes) {
  std::vector<GroupOutcome> out;
  for (const auto& group : plan.groups) {
    GroupOutcome o;
    o.members = group;
    std::set<int> live;
    std::map<int, int> unit_of;  // rank -> unit, live members only
    for (int unit : group) {
      const int rank = unit_rank.at(static_cast<std::size_t>(unit));
      if (lost_units.count(unit) || rec.missing.count(rank)) {
        o.missing.push_back(unit);
      } else {
        live.insert(rank);
        unit_of[rank] = unit;
      }
    }
    for (const auto& e : rec.ends)
      if (live.count(e.rank) && e.status == Status::Timeout) o.timed_out = true;
    std::optional<double> slowest;
    for (const auto& r : rec.results) {
      if (!figure_result(r, live, figure, size_bytes)) continue;
      if (!slowest) slowest = r.value;
      else slowest = figure.higher_is_better ? std::min(*slowest, r.value) : std::max(*slowest, r.value);
    }
    if (!o.timed_out) o.value = slowest;
    if (!o.value && !o.timed_out && o.missing.empty()) o.timed_out = true;  // ran, but produced nothing
    o.edges = edges_of(rec.results, unit_of, live, figure, size_bytes);
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace kiln::analysis
