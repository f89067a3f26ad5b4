#include "coordinator/analysis/outliers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/stats.hpp"

namespace kiln::analysis {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
double median(const std::vector<double>& v) { return kiln::stats::median(v); }
double mad_sigma(const std::vector<double>& v) { return kiln::stats::mad_sigma(v); }

// A MAD from n values is itself uncertain (about 1.2/sqrt(n) relative); widen it so that a spread
// that happened to come out low on a few dozen groups does not turn noise into slow groups.
double widen(double sigma, std::size_t n) {
  return sigma * (1.0 + 1.0 / std::sqrt(static_cast<double>(std::max<std::size_t>(n, 1))));
}

// Spread from the fast side only: slowness is one-sided, so up to half of the peers may be slow
// without inflating the spread that their z-scores are measured against.
double fast_side_sigma(const std::vector<double>& logs) {
  const double m = median(logs);
  std::vector<double> dev;
  for (double x : logs)
    if (x <= m) dev.push_back(m - x);
  return dev.size() < 2 ? widen(mad_sigma(logs), logs.size()) : widen(1.4826 * median(dev), dev.size());
}

// A spread measured on fewer values than cfg.min_peers_for_spread is no spread: the MAD of two or
// four figures comes out at a tenth of the true spread often enough that z >= 4 means nothing (at 20%
// noise, 8-node healthy clusters split their 4 pair figures into a "fast cluster" of 2 at z 6-43, and
// 22 of 1,000 ended with a node reported unresolved). Such a spread is floored as a history too short
// for one is (History::Ref::no_spread): at half the relative cutoff, so only a clear slowdown counts.
double few_values_floor(double rel_limit) { return 0.5 * rel_limit; }

}  // namespace

std::vector<double> fast_cluster(const std::vector<double>& logs, const OutlierConfig& cfg, double rel_limit) {
  const std::size_t n = logs.size();
  const std::size_t min_fast = std::max<std::size_t>(2, (n + 9) / 10);
  if (n < min_fast + 1) return {};
  std::vector<double> sorted = logs;
  std::sort(sorted.begin(), sorted.end());
  std::size_t cut = 0;
  double widest = 0.0;
  for (std::size_t k = min_fast; k < n; ++k)
    if (sorted[k] - sorted[k - 1] > widest) widest = sorted[k] - sorted[k - 1], cut = k;
  // Both sides must be clusters: one group far above the rest is a slow group, not a slow cluster.
  // A fast majority is still re-centred on: with many slow groups the median of all is pulled to the
  // slow end of the fast cluster even when it stays inside it.
  if (cut == 0 || widest <= rel_limit || n - cut < min_fast) return {};
  const std::vector<double> lo(sorted.begin(), sorted.begin() + static_cast<long>(cut));
  const std::vector<double> hi(sorted.begin() + static_cast<long>(cut), sorted.end());
  double spread = std::max(widen(mad_sigma(lo), lo.size()), cfg.min_rel_sigma);
  if (hi.size() >= 2) spread = std::max(spread, widen(mad_sigma(hi), hi.size()));
  const auto few = static_cast<std::size_t>(cfg.min_peers_for_spread);
  if (lo.size() < few && hi.size() < few) spread = std::max(spread, few_values_floor(rel_limit));
  if (widest < cfg.z_cutoff * spread) return {};
  return lo;
}

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::Fast: return "fast";
    case Verdict::Slow: return "slow";
    case Verdict::Unknown: return "unknown";
  }
  return "unknown";
}

void to_json(nlohmann::json& j, const Judgement& x) {
  auto finite = [](double d) { return std::isfinite(d) ? nlohmann::json(d) : nlohmann::json("inf"); };
  j = {{"verdict", to_string(x.verdict)}, {"expected", x.expected}, {"slowness", finite(x.slowness)},
       {"z", finite(x.z)}, {"basis", x.basis}};
}

double to_cost(double value, Direction d) {
  if (d == Direction::LowerIsBetter) return value;
  return value > 0.0 ? 1.0 / value : kInf;
}

std::optional<double> reference_figure(const OutlierConfig& cfg, std::int64_t size_bytes) {
  const auto r = cfg.reference.find(size_bytes);
  if (r == cfg.reference.end() || !(r->second > 0.0) || !std::isfinite(r->second)) return std::nullopt;
  return r->second;
}

// The reference's spread is the relative cutoff's third (reference_sigma below says why).
constexpr double kReferenceSpreadParts = 3.0;
constexpr std::size_t kFewSpread = 5;
constexpr double kFewSpreadShare = 0.75;

double relative_limit(const OutlierConfig& cfg) { return std::log(1.0 / cfg.rel_cutoff); }

double reference_spread(const OutlierConfig& cfg) { return relative_limit(cfg) / kReferenceSpreadParts; }

void History::add(int group_size, std::int64_t size_bytes, double cost) {
  if (!(cost > 0.0) || !std::isfinite(cost)) return;
  auto& b = buckets_[key(group_size, size_bytes)];
  ++b.seen;
  if (b.logs.size() < cap_) {
    b.logs.push_back(std::log(cost));
  } else {
    // Overwrite in a fixed rotation: bounded memory, and recent rounds keep a voice.
    b.logs[(b.seen - 1) % cap_] = std::log(cost);
  }
}

std::optional<History::Ref> History::reference(int group_size, std::int64_t size_bytes) const {
  auto it = buckets_.find(key(group_size, size_bytes));
  if (it == buckets_.end() || it->second.logs.empty()) return std::nullopt;
  const auto& logs = it->second.logs;
  Ref r{median(logs), logs.size() >= 2 ? widen(mad_sigma(logs), logs.size()) : 0.0, logs.size(), false};
  if (logs.size() >= kOwnSpread) return r;
  // Few values: a MAD from them may be 0 (one value, or ties). Floor it with the spread measured
  // where the history is deep: the median over keys with enough values of their own.
  std::vector<double> spreads;
  for (const auto& [k, b] : buckets_)
    if (b.logs.size() >= kOwnSpread) spreads.push_back(widen(mad_sigma(b.logs), b.logs.size()));
  if (!spreads.empty()) r.log_sigma = std::max(r.log_sigma, median(spreads));
  else r.no_spread = true;
  return r;
}

namespace {

struct Baseline {
  double log_exp = 0.0;
  double sigma = 0.0;
  std::string basis;
};

// 1. A spec for this message size. The spread still matters when the spec is a typical figure
// rather than a limit: the history's when it rests on at least as many groups as this round.
void judge_by_spec(const std::vector<double>& logs, const std::vector<std::size_t>& idx, double spec,
                   const std::optional<History::Ref>& h, const OutlierConfig& cfg, double rel_limit,
                   std::vector<Judgement>& out) {
  const double log_exp = std::log(to_cost(spec, cfg.direction));
  double sigma = cfg.min_rel_sigma;
  if (h && h->count >= logs.size()) sigma = std::max(sigma, h->log_sigma);
  else if (static_cast<int>(logs.size()) >= cfg.min_peers_for_spread)
    sigma = std::max(sigma, fast_side_sigma(logs));
  else if (h) sigma = std::max(sigma, h->log_sigma);
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const double d = logs[k] - log_exp;
    const bool slow = cfg.spec_is_limit ? d > 0.0 : (d > rel_limit && d / sigma >= cfg.z_cutoff);
    out[idx[k]] = {slow ? Verdict::Slow : Verdict::Fast, spec, std::exp(d), d / sigma, "spec"};
  }
}

// The spread a round judged against the history is judged with: the history's, floored while no
// key has enough figures for a spread of its own (History::Ref::no_spread).
double history_sigma(const History::Ref& hist, double rel_limit) {
  return hist.no_spread ? std::max(hist.log_sigma, few_values_floor(rel_limit)) : hist.log_sigma;
}

// The spread a round judged against the reference is judged with: the history's only when it rests on
// enough figures, else a floor of a third of the relative cutoff, so a group is slow against the
// reference from 1.35x (z_cutoff 4). The MAD of 2-4 fast pair figures came out at 0.17 against a
// true 0.05, a 2x suspect read z 3.8 and passed for fine, and the healthy nodes it was then paired
// with read slow against it (k = 8 of 16 nodes 2x at 10% noise: 10 campaigns in 100 with a false
// node.slow, none with a floor; recall 0.67 -> 0.97). The floor was half the relative cutoff (slow
// from 1.56x): on the 12-node testbed with 6 ports at half rate, a slow node with a healthy one read
// 1.5x (z 3.6), passed for fine, and its pairs fed the history; nothing was found. With a third,
// all 6 were node.slow in 5 rounds. Simulated, 100 seeds (12 nodes, 6 of them 1.5x, at 2/5/10%
// noise: recall 0.82/0.46/0.02 -> 0.98/0.91/0.49, false 1/4/4 -> 0/0/3, silent 3/10/79 -> 1/1/19;
// 8 of 16 nodes 2x at 20%: 0.64 -> 0.87, false 4 -> 0). A quarter (slow from the cutoff's 1.25x)
// named healthy nodes there in 10 campaigns in 100.
//
// In a cluster whose pair rounds stay shallow (OutlierConfig::shallow_pair_rounds, under 16 nodes) the
// floor is raised to the history's own spread from kFewSpread figures on, at kFewSpreadShare of it
// (about their MAD before the small-sample widening). There a healthy campaign's pair tests are judged
// on the floor for many rounds, and at 20% noise a healthy node read 1.48x, 1.89x and 1.64x at z 3.5,
// 5.7 and 6.6 and was named (8 nodes, seed 736; 1-3 such campaigns in 1,000). Larger clusters are
// judged on the floor only while most of their screen's pairs read slow, where a wider spread
// loses slow nodes: 24 nodes with 12 of them 2x at 20% noise, recall 0.94 -> 0.84.
double reference_sigma(const History::Ref* hist, double rel_limit, const OutlierConfig& cfg) {
  if (hist && hist->count >= History::kOwnSpread) return hist->log_sigma;
  const double floor = rel_limit / kReferenceSpreadParts;
  if (cfg.shallow_pair_rounds && hist && hist->count >= kFewSpread)
    return std::max(floor, kFewSpreadShare * hist->log_sigma);
  return floor;
}

// 2. Peers, unless every peer is slow against the reference or, without one, against history (no
// peer baseline in an all-slow round).
// The reference (OutlierConfig::reference: what a healthy group reaches, from a spec) decides
// whether a round is all slow; the history does only without one. A history of the few fast pair
// figures of a small cluster cannot tell a round made slow by half its nodes (2x, 5% noise: 6 of 8
// pairs read 1.7-2.1x) from one after two pairs read fast by chance (healthy, 20% noise, 16-node
// seed 1213: 0.73x of a healthy pair, and the next round 1.4-1.75x of those, a false node.slow); a
// reference can. The baseline is the reference, or the round's fast cluster where that is faster
// (a reference set loose still leaves the healthy pairs as the baseline): 16 nodes, 8 of them 2x,
// 100 seeds, 5% noise: recall 0.677 -> 0.995, campaigns with no finding 32 -> 0, no false finding.
Baseline peer_baseline(const std::vector<double>& logs, const History::Ref* hist, const double* ref,
                       const OutlierConfig& cfg, double rel_limit) {
  const double med = median(logs);
  if (ref && med - *ref > rel_limit) {
    const auto fast = fast_cluster(logs, cfg, rel_limit);
    const double lo = fast.size() >= 2 ? std::min(*ref, median(fast)) : *ref;
    return {lo, reference_sigma(hist, rel_limit, cfg), "reference(all-slow)"};
  }
  if (!ref && hist && med - hist->log_median > rel_limit)
    return {hist->log_median, history_sigma(*hist, rel_limit), "history(all-slow)"};
  Baseline b;
  b.log_exp = med;
  // The history's spread when it rests on more groups than this round has.
  const bool own_spread = !hist || (static_cast<int>(logs.size()) >= cfg.min_peers_for_spread &&
                                    logs.size() > hist->count);
  b.sigma = own_spread ? fast_side_sigma(logs) : hist->log_sigma;
  if (own_spread ? static_cast<int>(logs.size()) < cfg.min_peers_for_spread : hist->no_spread)
    b.sigma = std::max(b.sigma, few_values_floor(rel_limit));
  b.basis = "peers";
  // Two clusters, a fast one and a slow one, mean the median may be made of slow groups (half or
  // more are slow, e.g. every node under one switch): re-centre on the fast cluster. The clusters
  // are split at the widest gap between sorted figures, and the split counts only when that gap
  // exceeds the relative cutoff AND z_cutoff times the spread inside either cluster. The spread is
  // each cluster's own, not a fixed distance, so noise alone does not make a "fast cluster" (at 30%
  // noise twice the relative cutoff is only 1.5 sigma, which a tenth of healthy groups reach), and
  // an even split of fast and slow groups, whose median sits between the two, is still seen.
  std::vector<double> fast = fast_cluster(logs, cfg, rel_limit);
  if (fast.size() >= 2 && fast.size() * 10 >= logs.size()) {
    b.log_exp = median(fast);
    // A fast majority holds the median, so the fast side of the whole round is its spread already,
    // measured on more groups; a fast minority gives its own.
    if (fast.size() * 2 <= logs.size()) {
      b.sigma = fast_side_sigma(fast);
      if (hist) b.sigma = std::max(b.sigma, hist->log_sigma);
      if (static_cast<int>(fast.size()) < cfg.min_peers_for_spread && (!hist || hist->no_spread))
        b.sigma = std::max(b.sigma, few_values_floor(rel_limit));
    }
    b.basis = "peers(fast cluster)";
  }
  return b;
}

// Without a spec: peers, else history, else the faster of two groups; nothing when none applies.
// A reference stands in for a missing history, and for one slower than it by the relative cutoff
// (a history of groups that were all slow).
std::optional<Baseline> baseline(const std::vector<double>& logs, const History::Ref* hist, const double* ref,
                                 const OutlierConfig& cfg, double rel_limit, bool pairs) {
  if (static_cast<int>(logs.size()) >= cfg.min_peers)
    return peer_baseline(logs, hist, ref, cfg, rel_limit);
  if (ref && (!hist || hist->log_median - *ref > rel_limit))
    return Baseline{*ref, reference_sigma(hist, rel_limit, cfg), "reference"};
  if (hist) {
    // A shallow history whose level the reference vouches for (within the relative cutoff of it) is
    // judged with the reference's spread: the floor at half the cutoff is there for a level that rests
    // on a few figures, and the reference says what the level is. On the 12-node testbed with 6 ports
    // at half rate, the lone pair retests of the slow nodes (1.5x) were judged against 4 fast pair
    // figures at half the cutoff (slow from 1.56x) and passed for fine.
    if (pairs && ref && hist->count < History::kOwnSpread && std::abs(hist->log_median - *ref) <= rel_limit)
      return Baseline{hist->log_median, reference_sigma(hist, rel_limit, cfg), "history(reference spread)"};
    // One or two earlier figures and no spread anywhere: they cannot tell a 25% slowdown from
    // noise, so only a clear one counts (z_cutoff x half the relative cutoff), not 1% of it.
    return Baseline{hist->log_median, history_sigma(*hist, rel_limit), "history"};
  }
  // Two groups and nothing else to go by (a tiny cluster, or a timeout took a peer): the
  // faster one is the reference and only the relative cutoff can speak.
  if (logs.size() >= 2)
    return Baseline{*std::min_element(logs.begin(), logs.end()), cfg.min_rel_sigma, "fastest peer"};
  return std::nullopt;
}

}  // namespace

std::vector<Judgement> classify_round(const std::vector<GroupSample>& groups,
                                      const OutlierConfig& cfg, const History* history) {
  std::vector<Judgement> out(groups.size());
  const double rel_limit = relative_limit(cfg);

  // Peers: groups of the same size measured at the same message size in this round.
  std::map<std::pair<int, std::int64_t>, std::vector<std::size_t>> by_key;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto& g = groups[i];
    if (g.timed_out) {
      out[i] = {Verdict::Slow, 0.0, kInf, kInf, "timeout"};
      continue;
    }
    if (!g.value || !(*g.value > 0.0)) {
      out[i] = {Verdict::Unknown, 0.0, 0.0, 0.0, "none"};
      continue;
    }
    by_key[{g.group_size, g.size_bytes}].push_back(i);
  }

  OutlierConfig pair_cfg = cfg;
  for (const auto& [key, idx] : by_key) {
    std::vector<double> logs;
    logs.reserve(idx.size());
    for (auto i : idx) logs.push_back(std::log(to_cost(*groups[i].value, cfg.direction)));
    const std::optional<History::Ref> hist =
        history ? history->reference(key.first, key.second) : std::nullopt;
    if (key.first == 2) {  // pairs get their floor, the higher one while their spread is shallow
      const std::size_t depth = std::max(logs.size(), hist ? hist->count : std::size_t{0});
      const double floor = depth < cfg.deep_pair_figures ? std::max(cfg.pair_sigma_floor, cfg.shallow_pair_sigma_floor)
                                                         : cfg.pair_sigma_floor;
      pair_cfg.min_rel_sigma = std::max(cfg.min_rel_sigma, floor);
    }
    const OutlierConfig& rules = key.first == 2 ? pair_cfg : cfg;
    if (auto s = rules.spec.find(key.second); s != rules.spec.end()) {
      judge_by_spec(logs, idx, s->second, hist, rules, rel_limit, out);
      continue;
    }
    const auto ref = reference_figure(rules, key.second);
    const bool has_ref = ref.has_value();
    const double ref_log = has_ref ? std::log(to_cost(*ref, cfg.direction)) : 0.0;
    const auto b = baseline(logs, hist ? &*hist : nullptr, has_ref ? &ref_log : nullptr, rules, rel_limit, key.first == 2);
    if (!b) {
      for (auto i : idx) out[i] = {Verdict::Unknown, 0.0, 0.0, 0.0, "none"};
      continue;
    }
    const double sigma = std::max(b->sigma, rules.min_rel_sigma);
    const double expected_cost = std::exp(b->log_exp);
    const double expected =
        rules.direction == Direction::LowerIsBetter ? expected_cost : 1.0 / expected_cost;
    for (std::size_t k = 0; k < idx.size(); ++k) {
      const double d = logs[k] - b->log_exp;
      const double z = d / sigma;
      const bool slow = d > rel_limit && z >= rules.z_cutoff;
      out[idx[k]] = {slow ? Verdict::Slow : Verdict::Fast, expected, std::exp(d), z, b->basis, sigma};
    }
  }
  return out;
}

}  // namespace kiln::analysis
