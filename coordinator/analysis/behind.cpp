#include "coordinator/analysis/behind.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "common/checks.hpp"

namespace kiln::analysis {

namespace {

using json = nlohmann::json;

bool is_group_check(const std::string& key) {
  const auto* spec = find_check(key);
  return spec && spec->scope == Scope::Group;
}

// Whether `test` went wrong for this group: a member's check ended in timeout, or a member did
// not finish the round (hung in it, or past it).
bool overran(const RoundRecord& rr, const std::string& test, const std::vector<int>& members) {
  auto member = [&](int r) { return std::find(members.begin(), members.end(), r) != members.end(); };
  for (const auto& e : rr.ends)
    if (e.test == test && e.status == Status::Timeout && member(e.rank)) return true;
  return std::any_of(members.begin(), members.end(), [&](int r) { return rr.missing.count(r) > 0; });
}

// A member's place in the round: which check it was in (by order in the round), then its ops.
struct Place {
  int rank;
  long index;
  std::uint64_t ops;
  int waiting_on;
  double stalled_s;
};

// Stalled (not running at all) for a second or more, and four times longer than any other member.
bool stalled_most(const Place& p, const std::vector<Place>& places) {
  double others = 0;
  for (const auto& q : places)
    if (q.rank != p.rank) others = std::max(others, q.stalled_s);
  return p.stalled_s >= 1.0 && p.stalled_s >= 4 * others;
}

std::vector<int> behind_of(const std::vector<Place>& places, const std::vector<int>& members) {
  std::vector<Place> sorted = places;
  std::sort(sorted.begin(), sorted.end(), [](const Place& a, const Place& b) {
    return a.index != b.index ? a.index < b.index : a.ops < b.ops;
  });
  const Place& median = sorted[sorted.size() / 2];
  std::map<int, int> waited;  // world rank -> members waiting on it
  for (const auto& p : places)
    if (p.waiting_on >= 0 && static_cast<std::size_t>(p.waiting_on) < members.size())
      ++waited[members[static_cast<std::size_t>(p.waiting_on)]];
  std::vector<int> out;
  for (const auto& p : places) {
    const bool earlier_check = p.index < median.index;
    const bool fewer_ops = p.index == median.index && p.ops * 2 <= median.ops && median.ops - p.ops >= 2;
    const bool waited_on = 2 * waited[p.rank] >= static_cast<int>(places.size()) - 1 && waited[p.rank] > 0;
    if (earlier_check || fewer_ops || waited_on || stalled_most(p, places)) out.push_back(p.rank);
  }
  if (out.size() == members.size()) out.clear();  // everyone behind: it cannot tell
  return out;
}

std::optional<Behind> judge_group(const RoundRecord& rr, std::size_t test_index, const std::vector<int>& members) {
  const auto& test = rr.round.tests[test_index].key;
  if (members.size() < 2 || !overran(rr, test, members)) return std::nullopt;
  std::vector<Place> places;
  json ops = json::object(), stalls = json::object(), waits = json::array();
  for (int r : members) {
    const auto it = rr.progress.find(r);
    // No progress from a member in this round: it cannot tell.
    if (it == rr.progress.end() || it->second.round != rr.round.id) return std::nullopt;
    const auto& p = it->second;
    const auto at = std::find_if(rr.round.tests.begin(), rr.round.tests.end(), [&](const auto& t) { return t.key == p.check; });
    const long index = at == rr.round.tests.end() ? -1 : static_cast<long>(at - rr.round.tests.begin());
    places.push_back({r, index, p.ops, p.waiting_on, p.stalled_s});
    stalls[std::to_string(r)] = p.stalled_s;
    ops[std::to_string(r)] = index == static_cast<long>(test_index) ? json(p.ops) : json("in " + (p.check.empty() ? std::string("no check") : p.check));
    if (p.waiting_on >= 0 && static_cast<std::size_t>(p.waiting_on) < members.size())
      waits.push_back({{"rank", r}, {"waiting_on", members[static_cast<std::size_t>(p.waiting_on)]}});
  }
  if (places.size() < 2) return std::nullopt;
  auto behind = behind_of(places, members);
  if (behind.empty()) return std::nullopt;
  json ev = {{"round", rr.round.id}, {"check", test}, {"members", members}, {"ops_done", ops}, {"waits", waits}, {"stalled_s", stalls},
             {"behind", behind}};
  return Behind{test, members, std::move(behind), std::move(ev)};
}

}  // namespace

std::vector<Behind> find_behind(const RoundRecord& rr) {
  std::vector<Behind> out;
  if (rr.progress.empty()) return out;
  std::vector<std::vector<int>> groups = rr.round.groups;
  if (groups.empty()) groups.push_back(std::vector<int>(rr.expected.begin(), rr.expected.end()));
  for (std::size_t t = 0; t < rr.round.tests.size(); ++t) {
    if (!is_group_check(rr.round.tests[t].key)) continue;
    for (const auto& g : groups)
      if (auto b = judge_group(rr, t, g)) out.push_back(std::move(*b));
  }
  return out;
}

}  // namespace kiln::analysis
