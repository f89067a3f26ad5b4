#include "coordinator/spec_baseline.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "common/checks.hpp"
#include "common/hostlist.hpp"
#include "common/stats.hpp"
#include "common/text.hpp"

namespace kiln::coord {

namespace {

std::string size_label(std::int64_t b) {
  for (const auto& [unit, shift] : std::vector<std::pair<const char*, int>>{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}})
    if (b >= (std::int64_t{1} << shift) && b % (std::int64_t{1} << shift) == 0)
      return std::to_string(b >> shift) + unit;
  return std::to_string(b);
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

struct Samples {
  std::vector<double> values;
  std::map<int, int> group_sizes;  // group size -> how many groups
  std::set<std::string> entities;
};

// (check, scope, metric, size) -> what the run measured. Scope: "" for per-GPU/per-node checks,
// "intra" or "inter" for group checks.
using Key = std::tuple<std::string, std::string, std::string, std::int64_t>;

std::map<Key, Samples> gather(const LoadedRun& run) {
  std::map<int, std::string> host_of;
  for (const auto& k : run.seen) host_of[k.rank] = k.host;
  std::map<Key, Samples> out;
  for (const auto& rr : run.rounds) {
    if (rr.phase != analysis::Phase::Plan || !rr.finished) continue;
    for (const auto& r : rr.results) {
      const auto* spec = find_check(r.test);
      if (!spec || !spec->figure || r.metric != spec->figure->metric || r.status != Status::Pass) continue;
      if (!std::isfinite(r.value) || r.value <= 0) continue;
      if (spec->scope != Scope::Group) {
        auto& s = out[{r.test, "", r.metric, -1}];
        s.values.push_back(r.value);
        s.entities.insert(r.entity.kind + ":" + r.entity.id);
        continue;
      }
      const bool sized = spec->figure->per_size;
      // Sweeps from 64 MiB only: below that busbw is latency-bound and varies run to run (on the
      // H200 machine 1 MiB gave 72 GB/s in one run and 42 in the next), which would make the
      // baseline a source of false alarms.
      if ((sized && (!r.size_bytes || *r.size_bytes < (64 << 20))) || r.group_id < 0 ||
          r.group_id >= static_cast<int>(rr.round.groups.size()))
        continue;
      const auto& members = rr.round.groups[static_cast<std::size_t>(r.group_id)];
      std::set<std::string> hosts;
      for (int m : members) hosts.insert(host_of.count(m) ? host_of[m] : "?");
      auto& s = out[{r.test, hosts.size() == 1 ? "intra" : "inter", r.metric, sized ? *r.size_bytes : -1}];
      s.values.push_back(r.value);
      ++s.group_sizes[static_cast<int>(members.size())];
      s.entities.insert(std::to_string(rr.round.id) + "/" + std::to_string(r.group_id));
    }
  }
  return out;
}

// The entry of a count map with the highest count.
template <class M>
auto most(const M& m) {
  return std::max_element(m.begin(), m.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
}

void hardware(std::ostream& os, const LoadedRun& run) {
  std::map<int, int> counts;
  std::map<std::string, int> models;
  for (const auto& k : run.seen) {
    if (!k.joined) continue;
    ++counts[k.info.gpu_count];
    for (const auto& m : k.info.gpu_models) ++models[m.rfind("NVIDIA ", 0) == 0 ? m.substr(7) : m];
  }
  if (counts.empty() || most(counts)->first <= 0) return;
  os << "\n[class.hardware]\n";
  if (!models.empty()) os << "gpu_model = " << quoted(most(models)->first) << "\n";
  os << "gpus_per_node = " << most(counts)->first << "\n";
}

}  // namespace

std::string baseline_spec(const LoadedRun& run, const BaselineOptions& opts) {
  const auto samples = gather(run);
  if (samples.empty())
    throw std::runtime_error("the run has no passing figure of merit to baseline (run the checks first)");
  std::vector<std::string> hosts;
  for (const auto& k : run.seen)
    if (k.joined) hosts.push_back(k.host);
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  const std::string run_id = run.campaign.is_object() ? run.campaign.value("run_id", std::string{}) : "";
  std::ostringstream os;
  os << "# Written by kiln spec from-run " << opts.run_dir << " (run " << run_id << ").\n"
     << "# Each figure is the run's median; edit the tolerances, or the selector, as the site needs.\n"
     << "title = " << quoted("baseline from run " + run_id) << "\n\n[[class]]\nname = " << quoted(opts.name) << "\n"
     << "hosts = " << quoted(hostlist::compress(hosts)) << "\n";
  hardware(os, run);
  std::string table;
  for (const auto& [key, s] : samples) {
    const auto& [check, scope, metric, size] = key;
    const std::string want = "[class.figures." + quoted(check) + (scope.empty() ? "" : "." + scope) +
                             (size >= 0 ? "." + metric : "") + "]";
    if (want != table) os << "\n" << (table = want) << "\n";
    os << (size >= 0 ? quoted(size_label(size)) : metric) << " = { value = " << short_number(stats::median(s.values))
       << ", tolerance = " << short_number(opts.tolerance);
    if (!s.group_sizes.empty()) {
      const auto common = most(s.group_sizes);
      if (common->first >= 2) os << ", ranks = " << common->first;
    }
    os << ", source = "
       << quoted("kiln spec from-run " + opts.run_dir + " (run " + run_id + "): median of " +
                 std::to_string(s.values.size()) + " results from " + std::to_string(s.entities.size()) +
                 (scope.empty() ? " GPU(s) or node(s)" : " group(s)"))
       << " }\n";
  }
  return os.str();
}

}  // namespace kiln::coord
