// The figures report.html draws that report.json does not hold, read back from results.jsonl.
#include <algorithm>
#include <fstream>

#include "common/checks.hpp"
#include "coordinator/report_html.hpp"

namespace kiln::coord {

namespace {

// The check's declared figure, when `res` is one.
const FigureSpec* figure_of(const Result& res) {
  const auto* spec = find_check(res.test);
  if (!spec || !spec->figure || res.metric != spec->figure->metric) return nullptr;
  // A failed check's figure is the one an operator wants to see; SKIP and ERROR measured nothing.
  if (res.status != Status::Pass && res.status != Status::Fail) return nullptr;
  return &*spec->figure;
}

bool lower_is_better(const std::string& test) {
  const auto* spec = find_check(test);
  return spec && spec->figure && !spec->figure->higher_is_better;
}

// "node1<->node4" or "node1<->node4/mlx5_0" -> {node1, node4}; empty when it names no two ends.
std::pair<std::string, std::string> link_ends(const std::string& id) {
  const auto sep = id.find("<->");
  if (sep == std::string::npos) return {};
  std::string b = id.substr(sep + 3);
  b = b.substr(0, b.find('/'));
  return {id.substr(0, sep), b};
}

}  // namespace

FigureCollector::FigureCollector(const Report& r) {
  for (const auto& k : r.ranks)
    if (!k.host.empty()) rank_host_[k.rank] = k.host;
  for (const auto& round : r.rounds)
    for (std::size_t g = 0; g < round.groups.size(); ++g)
      if (round.groups[g].size() == 2) pair_groups_[{round.id, static_cast<int>(g)}] = round.groups[g];
}

std::string FigureCollector::host_of(int rank) const {
  const auto it = rank_host_.find(rank);
  return it == rank_host_.end() ? "rank " + std::to_string(rank) : it->second;
}

void FigureCollector::add(const Result& res) {
  const auto* fig = figure_of(res);
  if (!fig) return;
  if (res.entity.kind == "gpu" && !fig->per_size) {
    gpu_[res.entity.id] = {res.entity.id, res.host, res.test, res.metric, res.unit, res.value};
    return;
  }
  if (res.entity.kind == "link") return add_link(res);
  if (res.extra.is_object() && res.extra.contains("peers")) add_peers(res);
  const std::int64_t size = res.size_bytes.value_or(0);
  auto& [test, best] = rank_best_[res.rank];
  if (size > best.size) {  // the first figure at the largest size, as the rank's headline
    test = res.test;
    best = {size, res.value, res.unit};
  }
  if (pair_groups_.count({res.round_id, res.group_id})) add_group(res);
}

void FigureCollector::add_link(const Result& res) {
  const auto [a, b] = link_ends(res.entity.id);
  if (!a.empty() && !b.empty()) pairs_.push_back({res.test, res.unit, a, b, res.value});
}

// mpi.alltoall's per-peer figures: one edge per peer, from this rank's side.
void FigureCollector::add_peers(const Result& res) {
  const auto& p = res.extra.at("peers");
  if (!p.is_object() || !p.contains("ranks") || !p.contains("busbw")) return;
  const auto& ranks = p.at("ranks");
  const auto& bw = p.at("busbw");
  if (!ranks.is_array() || !bw.is_array()) return;
  for (std::size_t i = 0; i < ranks.size() && i < bw.size() && i < 4096; ++i)
    if (ranks[i].is_number_integer() && bw[i].is_number())
      pairs_.push_back({res.test + " per peer", res.unit, host_of(res.rank), host_of(ranks[i].get<int>()),
                        bw[i].get<double>()});
}

void FigureCollector::add_group(const Result& res) {
  auto& [test, best] = group_best_[{res.round_id, res.group_id}][res.rank];
  const std::int64_t size = res.size_bytes.value_or(0);
  if (size < best.size) return;
  test = res.test;
  best = {size, res.value, res.unit};
}

HtmlFigures FigureCollector::take() {
  HtmlFigures f;
  for (auto& [id, bar] : gpu_) f.bars.push_back(std::move(bar));
  if (f.bars.empty())
    for (const auto& [rank, tb] : rank_best_)
      f.bars.push_back({host_of(rank) + " rank " + std::to_string(rank), host_of(rank), tb.first, "", tb.second.unit, tb.second.value});
  // A group of two is as fast as its slower member says.
  for (const auto& [key, members] : group_best_) {
    const auto& ranks = pair_groups_.at(key);
    if (members.size() != 2 || host_of(ranks[0]) == host_of(ranks[1])) continue;
    const auto& x = members.begin()->second;
    const auto& y = members.rbegin()->second;
    const bool low = lower_is_better(x.first);
    const double v = low ? std::max(x.second.value, y.second.value) : std::min(x.second.value, y.second.value);
    f.pairs.push_back({x.first + " pairs", x.second.unit, host_of(ranks[0]), host_of(ranks[1]), v});
  }
  f.pairs.insert(f.pairs.end(), pairs_.begin(), pairs_.end());
  return f;
}

HtmlFigures collect_figures(const Report& r, const std::filesystem::path& results_jsonl) {
  FigureCollector c(r);
  TelemetryFigures telemetry;
  std::ifstream in(results_jsonl);
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || (j.contains("record") && j.at("record") != "result")) continue;
    if (telemetry.add(j)) continue;
    try {
      c.add(j.get<Result>());
    } catch (const std::exception&) {  // an unreadable line: the report already counts it
    }
  }
  auto figures = c.take();
  figures.telemetry = std::move(telemetry);
  return figures;
}

}  // namespace kiln::coord
