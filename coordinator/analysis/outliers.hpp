// Outlier rules: is a group's figure slow compared with what was expected of it?
//
// Expected values come from the spec when one is given for the message size, otherwise from peers
// (the median of equal-size groups measured in the same round), otherwise from the history of
// earlier rounds. A group is slow when it is worse than expected by the relative cutoff AND its
// robust z-score (log scale, MAD-based) reaches the z cutoff, so neither a wide-but-harmless spread
// nor a tiny-but-tight difference makes a finding on its own.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::analysis {

// Which way a figure points: seconds per op (lower is better) or bandwidth (higher is better).
enum class Direction { LowerIsBetter, HigherIsBetter };

struct OutlierConfig {
  Direction direction = Direction::LowerIsBetter;
  // Slow when performance falls below rel_cutoff x expected (for times: time > expected / 0.8).
  double rel_cutoff = 0.8;
  // ... and the robust z of log(figure) against the baseline is at least z_cutoff.
  double z_cutoff = 4.0;
  // Floor on the relative spread, so ties (MAD = 0) do not make tiny differences significant.
  double min_rel_sigma = 0.01;
  // Fewest groups of one key in a round for their median to serve as the baseline.
  int min_peers = 3;
  // Fewest peers for their own MAD to be trusted over the history's spread.
  int min_peers_for_spread = 8;
  // Floor on the spread of pair figures (groups of 2) from outside them, 0 for none: a MAD from the
  // few pair figures of a small cluster can come out at a quarter of their true spread.
  double pair_sigma_floor = 0.0;
  // ... and the floor while the pair spread rests on fewer than deep_pair_figures figures (this
  // round's or the history's, whichever is deeper): a MAD from 12 figures may come out at a third
  // of the true spread, which pair_sigma_floor, set to stay clear of a spread measured right, allows.
  double shallow_pair_sigma_floor = 0.0;
  std::size_t deep_pair_figures = 28;
  // A round of pairs over the whole cluster gives fewer than History::kOwnSpread figures (under 16
  // nodes), so a healthy campaign's pair tests rest on a shallow history for many rounds; with a
  // reference its spread is then the history's own where that is wider than the reference's
  // (reference_sigma, outliers.cpp).
  bool shallow_pair_rounds = false;
  // The figure does not depend on group size (e.g. busbw, which nccl-tests normalises for the
  // number of ranks): history from groups of any size is a valid baseline.
  bool size_invariant = false;
  // Spec per message size (bytes), in the figure's own unit. With spec_is_limit the spec is the
  // pass/fail limit itself (e.g. minimum busbw); otherwise it is the typical healthy figure and
  // the relative cutoff applies to it.
  std::map<std::int64_t, double> spec;
  bool spec_is_limit = true;
  // What a healthy group reaches, per message size, in the figure's own unit (a spec's figure for
  // the check across nodes, kiln run --spec): not a limit. A round whose median is worse than it by
  // the relative cutoff is all slow, and is judged against it (or its own fast cluster, where that
  // is faster) instead of its peers; a history slower than it by as much gives way to it. Without
  // one, the history decides that, which in a small cluster cannot tell half the nodes slow from
  // wide noise. Groups of any size, as size_invariant figures are.
  std::map<std::int64_t, double> reference;
};

// One group's figure in a round.
struct GroupSample {
  int group_size = 0;
  std::int64_t size_bytes = 0;  // message size the figure was measured at
  std::optional<double> value;  // absent when the group produced no figure
  bool timed_out = false;       // missing the deadline is a positive (slow) result
};

enum class Verdict { Fast, Slow, Unknown };
std::string to_string(Verdict v);

struct Judgement {
  Verdict verdict = Verdict::Unknown;
  double expected = 0.0;  // baseline in the figure's unit (0 when none)
  double slowness = 0.0;  // how many times worse than expected (>1 is worse); inf for timeouts
  double z = 0.0;         // robust z on log scale; inf for timeouts
  std::string basis;      // spec | peers | peers(fast cluster) | history | history(all-slow) |
                          // history(reference spread) |
                          // reference | reference(all-slow) |
                          // fastest peer | timeout | none
  double sigma = 0.0;     // the log spread z was taken with (0 where none: spec, timeouts); not reported
};
void to_json(nlohmann::json& j, const Judgement& x);

// Judged against earlier rounds' figures: any of the history bases.
inline bool on_history(const Judgement& j) { return j.basis.rfind("history", 0) == 0; }

// Baseline from earlier rounds: log-costs of groups judged fast, per key. Bounded memory.
class History {
 public:
  explicit History(bool size_invariant = false, std::size_t cap_per_key = 512)
      : size_invariant_(size_invariant), cap_(cap_per_key) {}
  // cost: a lower-is-better figure (time, or 1/bandwidth).
  void add(int group_size, std::int64_t size_bytes, double cost);
  struct Ref {
    double log_median = 0.0;
    // MAD-based. Below kOwnSpread values it is at least the spread floor: the median spread of
    // the keys that have enough values of their own (the same figure measured again and again).
    double log_sigma = 0.0;
    std::size_t count = 0;
    // Too few values for a spread and no other key to borrow one from: log_sigma is 0 and the
    // caller must not treat the baseline as exact.
    bool no_spread = false;
  };
  static constexpr std::size_t kOwnSpread = 8;
  std::optional<Ref> reference(int group_size, std::int64_t size_bytes) const;
  // Drops the figures of this key: a level control pairs refuted (strategy_control.cpp).
  void forget(int group_size, std::int64_t size_bytes) { buckets_.erase(key(group_size, size_bytes)); }

 private:
  using Key = std::pair<int, std::int64_t>;
  Key key(int group_size, std::int64_t size_bytes) const {
    return {size_invariant_ ? 0 : group_size, size_bytes};
  }
  struct Bucket {
    std::vector<double> logs;
    std::uint64_t seen = 0;
  };
  bool size_invariant_;
  std::size_t cap_;
  std::map<Key, Bucket> buckets_;
};

// Judges every group of one round. Does not modify history; the caller adds the fast ones.
std::vector<Judgement> classify_round(const std::vector<GroupSample>& groups,
                                      const OutlierConfig& cfg, const History* history);

// The lower-is-better cost of a figure (the figure itself for times, 1/figure for bandwidths).
double to_cost(double value, Direction d);

// The reference's figure at a message size (OutlierConfig::reference) where there is a usable one:
// positive and finite.
std::optional<double> reference_figure(const OutlierConfig& cfg, std::int64_t size_bytes);

// The log-slowness the relative cutoff allows: log(1 / rel_cutoff).
double relative_limit(const OutlierConfig& cfg);
// The fast cluster of figures (logs of costs) that fall into two clusters, or nothing: split at the
// widest gap between sorted values, at least a tenth (and 2) on each side, when that gap exceeds the
// relative cutoff and z_cutoff times the spread inside either cluster (peer_baseline, outliers.cpp).
std::vector<double> fast_cluster(const std::vector<double>& logs, const OutlierConfig& cfg, double rel_limit);

// The log spread a figure judged against the reference is judged with while no history spread is
// deep enough: a third of the relative cutoff (slow from 1.35x at z_cutoff 4).
double reference_spread(const OutlierConfig& cfg);

}  // namespace kiln::analysis
