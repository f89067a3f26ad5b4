// The spec's types and what they mean: versions and how they compare, figures and their limits,
// which checks a class requires, and the profile matcher. Reading files is spec_parse.cpp.
#include "common/spec.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "common/checks.hpp"
#include "common/hostlist.hpp"

namespace kiln::spec {

// ---- versions ----

namespace {

bool is_separator(char c) { return c == '.' || c == '-' || c == '+' || c == '_' || c == '~'; }

std::vector<std::string_view> components(std::string_view v) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= v.size(); ++i)
    if (i == v.size() || is_separator(v[i])) {
      out.push_back(v.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

bool is_number(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int sign(int v) { return (v > 0) - (v < 0); }

int compare_component(std::string_view a, std::string_view b) {
  const bool na = is_number(a), nb = is_number(b);
  if (na != nb) return na ? -1 : 1;
  if (na) {
    a.remove_prefix(std::min(a.find_first_not_of('0'), a.size()));
    b.remove_prefix(std::min(b.find_first_not_of('0'), b.size()));
    if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  }
  return sign(a.compare(b));
}

}  // namespace

int compare_versions(std::string_view a, std::string_view b) {
  const auto ca = components(a), cb = components(b);
  for (std::size_t i = 0; i < std::max(ca.size(), cb.size()); ++i) {
    const int c = compare_component(i < ca.size() ? ca[i] : "0", i < cb.size() ? cb[i] : "0");
    if (c != 0) return c;
  }
  return 0;
}

bool valid_version(std::string_view v) {
  if (v.empty() || v.size() > 128 || !(v[0] >= '0' && v[0] <= '9')) return false;
  for (char c : v)
    if (!std::isalnum(static_cast<unsigned char>(c)) && !is_separator(c)) return false;
  for (auto c : components(v))
    if (c.empty()) return false;
  return true;
}

bool VersionReq::satisfied_by(std::string_view actual) const {
  if (!valid_version(actual)) return false;
  if (minimum) return compare_versions(actual, version) >= 0;
  const auto want = components(version), have = components(actual);
  if (want.size() > have.size()) return false;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (compare_component(want[i], have[i]) != 0) return false;
  return true;
}

// ---- figures, classes, specs ----

std::string to_string(GroupScope s) {
  switch (s) {
    case GroupScope::None: return "none";
    case GroupScope::Intra: return "intra";
    case GroupScope::Inter: return "inter";
  }
  return "?";
}

double Figure::limit() const { return higher_is_better ? value * (1 - tolerance) : value * (1 + tolerance); }

bool Figure::acceptable(double measured) const {
  return higher_is_better ? measured >= limit() : measured <= limit();
}

bool NodeClass::is_required(std::string_view check) const {
  return std::find(required.begin(), required.end(), check) != required.end();
}

const Figure* NodeClass::figure(std::string_view check, std::string_view metric, GroupScope scope,
                                std::optional<std::int64_t> size_bytes) const {
  for (const auto& f : figures)
    if (f.check == check && f.metric == metric && f.scope == scope && f.size_bytes == size_bytes) return &f;
  return nullptr;
}

const NodeClass* Spec::class_for(std::string_view host, std::string_view partition) const {
  for (const auto& c : classes)
    if (std::find(c.hosts.begin(), c.hosts.end(), host) != c.hosts.end()) return &c;
  if (partition.empty()) return nullptr;
  for (const auto& c : classes)
    if (c.partition == partition) return &c;
  return nullptr;
}

std::size_t Spec::figure_count() const {
  std::size_t n = 0;
  for (const auto& c : classes) n += c.figures.size();
  return n;
}

std::vector<SpecMetric> spec_metrics(std::string_view check) {
  const CheckSpec* cs = find_check(check);
  if (!cs || !cs->figure) return {};
  const auto& f = *cs->figure;
  std::vector<SpecMetric> out{{f.metric, f.unit, f.higher_is_better, f.per_size}};
  for (const auto& m : cs->more_figures) out.push_back({m.metric, m.unit, m.higher_is_better, m.per_size});
  // What the checks emit besides their figure of merit that a spec may expect.
  if (check == "gpu.memtest") out.push_back({"write_bw", "GB/s", true, false});
  if (check == "gpu.copy_bw")
    for (const char* m : {"h2d", "d2h", "d2d"}) out.push_back({m, "GB/s", true, false});
  if (check == "net.pair_bw") out.push_back({"latency", "us", false, false});
  if (check == "rdma.write_bw" || check == "rdma.read_bw") out.push_back({"bw_total", "Gb/s", true, false});
  return out;
}

std::vector<std::string> required_by_fields(const NodeClass& c) {
  const auto& h = c.hardware;
  const auto& s = c.software;
  std::vector<std::string> out;
  if (!h.gpu_model.empty() || h.gpus_per_node || h.gpu_memory_gib || h.nvlinks_per_gpu || h.pcie_gen ||
      h.pcie_width || s.driver)
    out.push_back("gpu.health");
  // hcas_per_node = 0 (a class without HCAs) needs no reading: fewer than none cannot be.
  if ((h.hcas_per_node && *h.hcas_per_node > 0) || h.hca_rate_gbps) out.push_back("ib.ports");
  if (s.cuda || s.nccl || s.mpi || s.rdma_core || s.kernel) out.push_back("host.inventory");
  return out;
}

// ---- the profile matcher ----

namespace {

bool contains_nocase(std::string_view hay, std::string_view needle) {
  auto lower = [](unsigned char ch) { return std::tolower(ch); };
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end(),
                     [&](char a, char b) { return lower(a) == lower(b); }) != hay.end();
}

}  // namespace

bool matches_hardware(const NodeClass& c, const NodeInfo& node) {
  const auto& h = c.hardware;
  if (h.gpu_model.empty() && !h.gpus_per_node) return false;
  if (h.gpus_per_node && node.gpu_count != *h.gpus_per_node) return false;
  if (h.gpu_model.empty()) return true;
  if (node.gpu_models.empty()) return false;
  return std::all_of(node.gpu_models.begin(), node.gpu_models.end(),
                     [&](const std::string& m) { return contains_nocase(m, h.gpu_model); });
}

const Spec* match_profile(const std::vector<Spec>& profiles, const NodeInfo& node) {
  const Spec* best = nullptr;
  std::pair<std::size_t, bool> best_rank{0, false};
  for (const auto& p : profiles)
    for (const auto& c : p.classes) {
      if (!matches_hardware(c, node)) continue;
      const std::pair<std::size_t, bool> rank{c.hardware.gpu_model.size(),
                                              c.hardware.hcas_per_node == node.ib_device_count};
      if (!best || rank > best_rank) {
        best = &p;
        best_rank = rank;
      }
    }
  return best;
}

}  // namespace kiln::spec
