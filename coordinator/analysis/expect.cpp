#include "coordinator/analysis/expect.hpp"
#include "coordinator/analysis/expect_internal.hpp"

#include <algorithm>
#include <cctype>
#include <iomanip>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include "common/checks.hpp"
#include "common/findings.hpp"
#include "common/hostlist.hpp"
#include "common/text.hpp"

namespace kiln::analysis {

namespace {

using json = nlohmann::json;
using spec::Figure;
using spec::GroupScope;
using spec::NodeClass;
using spec::Spec;

struct Assigned {
  const Spec* spec = nullptr;
  const NodeClass* cls = nullptr;
};

std::string short_host(const std::string& h) { return h.substr(0, h.find('.')); }

std::string profile_name(const Spec& s) {
  std::string name = s.path.substr(s.path.find_last_of('/') + 1);
  if (name.size() > 5 && name.ends_with(".toml")) name.resize(name.size() - 5);
  return name;
}

std::string detected(const NodeInfo& n) {
  return std::to_string(n.gpu_count) + " x " + (n.gpu_models.empty() ? std::string("GPU") : n.gpu_models.front());
}

Assigned class_in_spec(const Spec& s, const NodeSeen& n, const std::string& partition) {
  const NodeClass* c = s.class_for(n.host, partition);
  if (!c) c = s.class_for(short_host(n.host), partition);
  for (const auto& k : s.classes)
    if (!c && k.match_hardware && spec::matches_hardware(k, n.info)) c = &k;
  return {c ? &s : nullptr, c};
}

Assigned class_of(const Expectations& e, const NodeSeen& n) {
  if (e.mode == ExpectMode::Spec && !e.specs.empty()) return class_in_spec(e.specs.front(), n, e.partition);
  if (e.mode != ExpectMode::Profiles) return {};
  const Spec* p = spec::match_profile(e.specs, n.info);
  if (!p) return {};
  for (const auto& k : p->classes)
    if (spec::matches_hardware(k, n.info)) return {p, &k};
  return {};
}

std::string size_text(std::int64_t bytes) {
  const char* units[] = {"GiB", "MiB", "KiB"};
  const std::int64_t scale[] = {1LL << 30, 1LL << 20, 1LL << 10};
  for (int i = 0; i < 3; ++i)
    if (bytes >= scale[i] && bytes % scale[i] == 0) return std::to_string(bytes / scale[i]) + " " + units[i];
  return std::to_string(bytes) + " B";
}

std::string percent(double fraction) { return short_number(fraction * 100) + "%"; }

// ---- not.tested ----

// How a check fared on one node over the plan.
struct CheckState {
  bool verdict = false;  // a rank of the node ended it PASS or FAIL
  bool bad = false;      // ERROR or TIMEOUT: a finding already
  std::string skip_reason;
  bool skipped = false;
};

struct PlanView {
  std::map<int, std::string> host_of;  // rank -> host
  std::map<std::pair<std::string, std::string>, CheckState> state;  // (host, check)
  std::set<std::string> finished_rounds;  // checks a finished plan round ran
  std::set<std::string> cut_rounds;       // checks a plan round ran that was cut short
};

PlanView plan_view(const std::vector<NodeSeen>& nodes, const std::vector<RoundRecord>& rounds) {
  PlanView v;
  for (const auto& n : nodes)
    for (int r : n.ranks) v.host_of[r] = n.host;
  for (const auto& rr : rounds) {
    if (rr.phase != Phase::Plan) continue;
    for (const auto& t : rr.round.tests) (rr.finished ? v.finished_rounds : v.cut_rounds).insert(t.key);
    if (!rr.finished) continue;
    for (const auto& e : rr.ends) {
      const auto it = v.host_of.find(e.rank);
      auto& st = v.state[{it == v.host_of.end() ? e.host : it->second, e.test}];
      if (e.status == Status::Pass || e.status == Status::Fail) st.verdict = true;
      if (e.status == Status::Error || e.status == Status::Timeout) st.bad = true;
      if (e.status == Status::Skip && !st.skipped) {
        st.skipped = true;
        st.skip_reason = e.reason;
      }
    }
  }
  return v;
}

// Why `check` has no verdict on `n`, or nullopt when it has one (or ended in a finding already).
std::optional<std::string> untested_reason(const Expectations& e, const PlanView& v, const NodeSeen& n,
                                           const std::string& check) {
  const auto it = v.state.find({n.host, check});
  if (it != v.state.end() && (it->second.verdict || it->second.bad)) return std::nullopt;
  if (it != v.state.end() && it->second.skipped)
    return "skipped: " + (it->second.skip_reason.empty() ? std::string("no reason given") : it->second.skip_reason);
  if (!v.finished_rounds.count(check)) {
    if (v.cut_rounds.count(check)) return std::string("never ran: its round was cut short");
    if (std::find(e.planned.begin(), e.planned.end(), check) == e.planned.end())
      return std::string("never ran: not in the plan (kiln run --tests)");
    return std::string("never ran: the campaign ended before its round");
  }
  if (!n.ranks.empty() && n.lost.size() >= n.ranks.size())
    return std::string("never ran: the node's ranks were lost before it");
  return std::string("never ran: no rank of the node reported it");
}

Finding not_tested(const NodeSeen& n, const NodeClass& c, const std::string& check, const std::string& reason) {
  return make_finding(Code::NotTested, {"node", n.host},
                      check + " was not tested on " + n.host + " (class " + c.name + "): " + reason,
                      json::array({{{"check", check}, {"reason", reason}, {"class", c.name}}}));
}

void untested_findings(const Expectations& e, const PlanView& v, const NodeSeen& n, const NodeClass& c,
                       std::vector<Finding>& out) {
  for (const auto& check : c.required) {
    if (e.optional.count(check)) continue;
    if (auto why = untested_reason(e, v, n, check)) out.push_back(not_tested(n, c, check, *why));
  }
}

// ---- figures ----

// The worst measurement of one figure on one entity.
struct Worst {
  const Figure* figure = nullptr;
  double value = 0;
  Entity entity;
  int ranks = 0;
  std::int64_t round = 0;
};

using WorstKey = std::tuple<std::string, std::string, std::string, std::string, std::int64_t>;

void keep_worst(std::map<WorstKey, Worst>& worst, const Figure& f, const Entity& ent, double value, int ranks,
                std::int64_t round) {
  const WorstKey key{ent.kind, ent.id, f.check, f.metric, f.size_bytes.value_or(-1)};
  auto it = worst.find(key);
  if (it == worst.end()) {
    worst[key] = {&f, value, ent, ranks, round};
    return;
  }
  const bool worse = f.higher_is_better ? value < it->second.value : value > it->second.value;
  if (worse) it->second = {&f, value, ent, ranks, round};
}

struct GroupPlace {
  GroupScope scope = GroupScope::None;
  Entity entity;
  std::string first_host;
  int size = 0;
};

std::optional<GroupPlace> group_place(const RoundRecord& rr, const Result& r, const std::map<int, std::string>& host_of) {
  if (r.group_id < 0 || static_cast<std::size_t>(r.group_id) >= rr.round.groups.size()) return std::nullopt;
  const auto& members = rr.round.groups[static_cast<std::size_t>(r.group_id)];
  std::set<std::string> hosts;
  std::string first;
  for (int m : members) {
    const auto it = host_of.find(m);
    if (it == host_of.end()) return std::nullopt;
    hosts.insert(it->second);
    if (first.empty()) first = it->second;
  }
  if (hosts.empty()) return std::nullopt;
  GroupPlace p;
  p.size = static_cast<int>(members.size());
  p.first_host = first;
  if (hosts.size() == 1) {
    p.scope = GroupScope::Intra;
    p.entity = {"node", first};
  } else {
    p.scope = GroupScope::Inter;
    p.entity = {"group", hostlist::compress({hosts.begin(), hosts.end()})};
  }
  return p;
}

std::map<WorstKey, Worst> worst_figures(const std::map<std::string, Assigned>& classes, const PlanView& v,
                                        const std::vector<RoundRecord>& rounds) {
  std::map<WorstKey, Worst> worst;
  auto cls = [&](const std::string& host) -> const NodeClass* {
    const auto it = classes.find(host);
    return it == classes.end() ? nullptr : it->second.cls;
  };
  for (const auto& rr : rounds) {
    if (rr.phase != Phase::Plan || !rr.finished) continue;
    for (const auto& r : rr.results) {
      if (r.status != Status::Pass && r.status != Status::Fail) continue;
      const auto* check = find_check(r.test);
      if (!check) continue;
      if (check->scope != Scope::Group) {
        const auto* c = cls(r.host);
        const Figure* f = c ? c->figure(r.test, r.metric, GroupScope::None, r.size_bytes) : nullptr;
        if (f) keep_worst(worst, *f, r.entity.kind.empty() ? Entity{"rank", std::to_string(r.rank)} : r.entity, r.value, 1, rr.round.id);
        continue;
      }
      const auto place = group_place(rr, r, v.host_of);
      const auto* c = place ? cls(place->first_host) : nullptr;
      const Figure* f = c ? c->figure(r.test, r.metric, place->scope, r.size_bytes) : nullptr;
      if (f && (!f->ranks || *f->ranks == place->size)) keep_worst(worst, *f, place->entity, r.value, place->size, rr.round.id);
    }
  }
  return worst;
}

Finding below(const Worst& w) {
  const Figure& f = *w.figure;
  std::string what = f.check + " " + f.metric;
  if (f.size_bytes) what += " at " + size_text(*f.size_bytes);
  if (f.scope != GroupScope::None) what += " (" + spec::to_string(f.scope) + ", " + std::to_string(w.ranks) + " ranks)";
  const std::string summary = what + " on " + w.entity.kind + " " + w.entity.id + ": measured " + short_number(w.value) + " " +
                              f.unit + ", expected " + short_number(f.value) + " " + f.unit + " (" +
                              (f.higher_is_better ? "at least " : "at most ") + short_number(f.limit()) + " " + f.unit +
                              " with tolerance " + percent(f.tolerance) + "; source: " + f.source + ")";
  json ev = {{"check", f.check},       {"metric", f.metric},       {"size", f.size_bytes ? json(*f.size_bytes) : json(nullptr)},
             {"measured", w.value},    {"expected", f.value},      {"limit", f.limit()},
             {"tolerance", f.tolerance}, {"source", f.source},     {"unit", f.unit},
             {"scope", spec::to_string(f.scope)}, {"ranks", w.ranks}, {"round", w.round}};
  return make_finding(Code::SpecBelow, w.entity, summary, json::array({ev}));
}

// ---- the line ----

std::string plural(std::size_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

std::string spec_line(const Expectations& e, const std::vector<NodeSeen>& nodes, const std::map<std::string, Assigned>& classes) {
  std::map<std::string, std::size_t> by_class;
  std::size_t none = 0;
  for (const auto& n : nodes) {
    const auto* c = classes.at(n.host).cls;
    if (c) ++by_class[c->name]; else ++none;
  }
  if (by_class.empty())
    return "judged against spec " + e.label + ", but no node is in any of its classes: figures were compared only with each other";
  std::string line = "judged against spec " + e.label + ":";
  bool first = true;
  for (const auto& [name, count] : by_class) {
    line += std::string(first ? " " : ", ") + "class " + name + " (" + plural(count, "node") + ")";
    first = false;
  }
  if (none) line += "; " + plural(none, "node") + " in no class, compared only with each other";
  return line;
}

std::string profile_line(const std::vector<NodeSeen>& nodes, const std::map<std::string, Assigned>& classes) {
  std::map<std::string, std::size_t> by_profile;  // "NAME (detected: ...)" -> nodes
  std::size_t none = 0;
  for (const auto& n : nodes) {
    const auto& a = classes.at(n.host);
    if (a.spec) ++by_profile["profile " + profile_name(*a.spec) + " (detected: " + detected(n.info) + ")"];
    else ++none;
  }
  if (by_profile.empty()) return "no spec and no matching profile: nothing was judged against expectations; figures were compared only "
           "with each other";
  std::string line = "judged against ";
  bool first = true;
  for (const auto& [what, count] : by_profile) {
    line += (first ? "" : "; ") + what + (by_profile.size() > 1 || none ? " on " + plural(count, "node") : "");
    first = false;
  }
  if (none) line += "; " + plural(none, "node") + " matched no profile, compared only with each other";
  return line;
}

}  // namespace

bool kept_for_expectations(const Expectations& e, const Result& r) {
  if (e.mode == ExpectMode::Off) return false;
  if ((r.test == "gpu.health" && (r.metric == "driver" || r.metric == "health")) ||
      (r.test == "host.inventory" && r.metric == "inventory") || (r.test == "ib.ports" && r.metric == "rate"))
    return true;
  for (const auto& s : e.specs)
    for (const auto& c : s.classes)
      for (const auto& f : c.figures)
        // Only the sizes a figure names: a sweep's other sizes are on disk, not in memory.
        if (f.check == r.test && f.metric == r.metric && (!f.size_bytes || f.size_bytes == r.size_bytes)) return true;
  return false;
}

ExpectOutcome judge_expectations(const Expectations& e, const std::vector<NodeSeen>& nodes,
                                 const std::vector<RoundRecord>& rounds) {
  ExpectOutcome out;
  std::map<std::string, Assigned> classes;
  for (const auto& n : nodes) classes[n.host] = class_of(e, n);
  if (e.mode == ExpectMode::Off) {
    out.source = "off";
    out.line = (e.label.empty() ? std::string("--spec none") : e.label) +
               ": nothing was judged against expectations; figures were compared only with each other";
    return out;
  }
  out.source = e.mode == ExpectMode::Spec ? "spec" : "profile";
  out.line = e.mode == ExpectMode::Spec ? spec_line(e, nodes, classes) : profile_line(nodes, classes);
  if (e.mode == ExpectMode::Profiles && out.line.starts_with("no spec")) out.source = "none";
  const PlanView v = plan_view(nodes, rounds);
  const auto rep = expect_detail::reported(rounds);
  const expect_detail::Reported nothing;  // a node none of whose records was read
  for (const auto& n : nodes) {
    const auto& a = classes.at(n.host);
    if (!a.cls) continue;
    out.classes.push_back({n.host, (e.mode == ExpectMode::Spec ? e.label : profile_name(*a.spec)) + ":" + a.cls->name});
    untested_findings(e, v, n, *a.cls, out.findings);
    const auto it = rep.find(n.host);
    expect_detail::node_findings(e, n, *a.cls, it == rep.end() ? nothing : it->second, out.findings);
  }
  for (const auto& [key, w] : worst_figures(classes, v, rounds))
    if (!w.figure->acceptable(w.value)) out.findings.push_back(below(w));
  return out;
}

std::optional<GroupReference> group_reference(const Expectations& e, const std::vector<NodeSeen>& nodes,
                                              const std::string& check, const std::string& metric,
                                              std::int64_t size_bytes, GroupScope scope) {
  if (e.mode == ExpectMode::Off || nodes.empty() || scope == GroupScope::None) return std::nullopt;
  const Figure* chosen = nullptr;
  Assigned chosen_class;
  for (const auto& n : nodes) {
    const Assigned a = class_of(e, n);
    // A class has at most one figure per check, metric, scope and size (the spec refuses a repeat).
    const Figure* f = a.cls ? a.cls->figure(check, metric, scope, size_bytes) : nullptr;
    if (!f || f->ranks) return std::nullopt;
    const bool easier = !chosen || (f->higher_is_better ? f->value < chosen->value : f->value > chosen->value);
    if (easier) chosen = f, chosen_class = a;
  }
  const std::string where = e.mode == ExpectMode::Spec ? e.label : profile_name(*chosen_class.spec);
  return GroupReference{chosen->value, spec::to_string(scope),
                        where + ": class " + chosen_class.cls->name + ", " + short_number(chosen->value) + " " +
                            chosen->unit + " (" + chosen->source + ")"};
}

std::string verdict_of(const std::vector<Finding>& findings) {
  bool untested = false, other = false;
  for (const auto& f : findings) {
    if (f.code == Code::NotTested) {
      untested = true;
      continue;
    }
    if (f.severity == Severity::Error || f.severity == Severity::Critical) return "fail";
    other = true;
  }
  if (untested) return "incomplete";
  return other ? "fail" : "pass";
}

}  // namespace kiln::analysis
