// Reading spec files (docs/spec.md): TOML through toml++, every problem collected as one
// "FILE:LINE:COL: message" line. The types it fills, and what they mean, are in spec.cpp.
#include "common/spec.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <tuple>

#include "common/checks.hpp"
#include "common/hostlist.hpp"

namespace kiln::spec {

// ---- parsing ----

namespace {

struct Pos {
  std::uint32_t line = 1, column = 1;
};

Pos pos_of(const toml::source_region& r) {
  if (r.begin.line == 0) return {};
  return {r.begin.line, r.begin.column};
}

std::string type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}

std::string in_quotes(std::string_view s) { return "\"" + std::string(s.substr(0, 80)) + "\""; }

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// One spec file's problems, each with its position; reported in file order.
class Errors {
 public:
  explicit Errors(std::string path) : path_(std::move(path)) {}
  void add(Pos p, const std::string& msg) { list_.push_back({p.line, p.column, list_.size(), msg}); }
  void add(const toml::node& n, const std::string& msg) { add(pos_of(n.source()), msg); }
  void add(const toml::key& k, const std::string& msg) { add(pos_of(k.source()), msg); }
  bool empty() const { return list_.empty(); }
  std::vector<std::string> lines() {
    std::sort(list_.begin(), list_.end());
    std::vector<std::string> out;
    for (const auto& [line, col, seq, msg] : list_)
      out.push_back(path_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + msg);
    return out;
  }

 private:
  std::string path_;
  std::vector<std::tuple<std::uint32_t, std::uint32_t, std::size_t, std::string>> list_;
};

// A table's entries in the order the file has them (toml::table keeps them sorted by key), so
// that "given twice" names the later one.
std::vector<std::pair<const toml::key*, const toml::node*>> in_file_order(const toml::table& t) {
  std::vector<std::pair<const toml::key*, const toml::node*>> out;
  for (auto&& [k, v] : t) out.emplace_back(&k, &v);
  auto at = [](const toml::key* k) {
    const Pos p = pos_of(k->source());
    return std::pair{p.line, p.column};
  };
  std::stable_sort(out.begin(), out.end(), [&](const auto& a, const auto& b) { return at(a.first) < at(b.first); });
  return out;
}

// A table's keys and what to do with each; any other key is an error naming the known ones.
using Handler = std::function<void(const toml::key&, const toml::node&)>;
struct Field {
  std::string_view key;
  Handler read;
};

void walk(Errors& err, const toml::table& t, const std::string& where, const std::vector<Field>& fields) {
  for (const auto& [key, value] : in_file_order(t)) {
    const toml::key& k = *key;
    const toml::node& v = *value;
    const auto it = std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.key == k.str(); });
    if (it != fields.end()) {
      it->read(k, v);
      continue;
    }
    std::vector<std::string> known;
    for (const auto& f : fields) known.emplace_back(f.key);
    err.add(k, "unknown key " + in_quotes(k.str()) + " in " + where + " (known: " + join(known) + ")");
  }
}

std::optional<std::string> string_value(Errors& err, const toml::key& k, const toml::node& v) {
  if (const auto* s = v.as_string()) {
    if (!s->get().empty()) return s->get();
    err.add(v, std::string(k.str()) + " must not be empty");
    return std::nullopt;
  }
  err.add(v, std::string(k.str()) + " must be a string, not " + type_name(v));
  return std::nullopt;
}

std::optional<std::int64_t> integer_value(Errors& err, const toml::key& k, const toml::node& v, std::int64_t lo,
                                      std::int64_t hi) {
  const auto* i = v.as_integer();
  if (!i) {
    err.add(v, std::string(k.str()) + " must be an integer, not " + type_name(v));
    return std::nullopt;
  }
  const std::int64_t n = i->get();
  if (n < 0 && lo >= 0) err.add(v, std::string(k.str()) + " must not be negative (got " + std::to_string(n) + ")");
  else if (n < lo || n > hi)
    err.add(v, std::string(k.str()) + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                   " (got " + std::to_string(n) + ")");
  else return n;
  return std::nullopt;
}

std::string number_text(double d) {
  std::ostringstream os;
  os << d;
  return os.str();
}

// A finite number (an integer is taken as one) above zero.
std::optional<double> positive_value(Errors& err, const toml::key& k, const toml::node& v) {
  if (!v.is_number()) {
    err.add(v, std::string(k.str()) + " must be a number, not " + type_name(v));
    return std::nullopt;
  }
  const double d = *v.value<double>();
  if (std::isfinite(d) && d > 0) return d;
  err.add(v, std::string(k.str()) + " must be a finite number above 0 (got " + number_text(d) + ")");
  return std::nullopt;
}

std::optional<int> count_into(Errors& err, const toml::key& k, const toml::node& v, int lo, int hi) {
  const auto n = integer_value(err, k, v, lo, hi);
  if (n) return static_cast<int>(*n);
  return std::nullopt;
}

const toml::table* table_value(Errors& err, const std::string& what, const toml::node& v) {
  if (const auto* t = v.as_table()) return t;
  err.add(v, what + " must be a table, not " + type_name(v));
  return nullptr;
}

class Parser {
 public:
  explicit Parser(Errors& err) : err_(err) {}

  void document(const toml::table& root, Spec& s) {
    bool any_class = false;
    walk(err_, root, "the spec",
         {{"title", [&](auto& k, auto& v) { s.title = string_value(err_, k, v).value_or(""); }},
          {"class", [&](auto&, auto& v) { any_class = classes(v, s); }}});
    if (!any_class && !root.contains("class"))
      err_.add(Pos{}, "the spec has no node class: add a [[class]] table");
    duplicate_names(s);
  }

 private:
  Errors& err_;
  std::vector<Pos> class_pos_;  // where each class's name is, for duplicates

  bool classes(const toml::node& v, Spec& s) {
    const auto* arr = v.as_array();
    if (!arr || !arr->is_array_of_tables()) {
      err_.add(v, "class must be an array of tables: write each class as [[class]]");
      return false;
    }
    for (const auto& el : *arr) {
      s.classes.emplace_back();
      node_class(*el.as_table(), s.classes.back());
    }
    return !arr->empty();
  }

  void node_class(const toml::table& t, NodeClass& c) {
    Pos name_pos = pos_of(t.source());
    walk(err_, t, "[[class]]",
         {{"name",
           [&](auto& k, auto& v) {
             c.name = string_value(err_, k, v).value_or("");
             name_pos = pos_of(v.source());
           }},
          {"description", [&](auto& k, auto& v) { c.description = string_value(err_, k, v).value_or(""); }},
          {"partition", [&](auto& k, auto& v) { c.partition = string_value(err_, k, v).value_or(""); }},
          {"hosts", [&](auto& k, auto& v) { hosts(k, v, c); }},
          {"match_hardware", [&](auto&, auto& v) { match_hardware(v, c); }},
          {"hardware", [&](auto&, auto& v) { hardware(v, c.hardware); }},
          {"software", [&](auto&, auto& v) { software(v, c.software); }},
          {"figures", [&](auto&, auto& v) { figures(v, c); }},
          {"optional", [&](auto&, auto& v) { optional_checks(v, c); }}});
    class_pos_.push_back(name_pos);
    if (!t.contains("name")) err_.add(t, "a class has no name");
    selector(t, c);
    c.required = required_checks(c);
  }

  void hosts(const toml::key& k, const toml::node& v, NodeClass& c) {
    const auto text = string_value(err_, k, v);
    if (!text) return;
    try {
      c.hosts = hostlist::expand(*text);
      c.hosts_text = *text;
    } catch (const hostlist::HostlistError& e) {
      err_.add(v, std::string("hosts: ") + e.what());
    }
  }

  void match_hardware(const toml::node& v, NodeClass& c) {
    if (const auto* b = v.as_boolean()) c.match_hardware = b->get();
    else err_.add(v, "match_hardware must be true or false, not " + type_name(v));
  }

  void selector(const toml::table& t, NodeClass& c) {
    const std::string who = c.name.empty() ? "the class" : "class " + in_quotes(c.name);
    const int given = t.contains("partition") + t.contains("hosts") + c.match_hardware;
    if (given == 0)
      err_.add(t, who + " has no selector: give partition, hosts or match_hardware = true");
    else if (given > 1)
      err_.add(t, who + " has more than one selector: give one of partition, hosts, match_hardware = true");
    if (c.match_hardware && c.hardware.gpu_model.empty() && !c.hardware.gpus_per_node)
      err_.add(t, who + " selects by hardware but has no hardware.gpu_model or hardware.gpus_per_node");
  }

  void hardware(const toml::node& v, Hardware& h) {
    const auto* t = table_value(err_, "hardware", v);
    if (!t) return;
    auto count = [this](std::optional<int>& out, int lo, int hi) {
      return [this, o = &out, lo, hi](auto& k, auto& n) { *o = count_into(err_, k, n, lo, hi); };
    };
    auto positive = [this](std::optional<double>& out) {
      return [this, o = &out](auto& k, auto& n) { *o = positive_value(err_, k, n); };
    };
    walk(err_, *t, "[class.hardware]",
         {{"gpu_model", [&](auto& k, auto& n) { h.gpu_model = string_value(err_, k, n).value_or(""); }},
          {"gpus_per_node", count(h.gpus_per_node, 0, 1024)},
          {"gpu_memory_gib", positive(h.gpu_memory_gib)},
          // gpu.health reads links 0..17, NVML_NVLINK_MAX_LINKS: more could never be met.
          {"nvlinks_per_gpu", count(h.nvlinks_per_gpu, 0, 18)},
          {"pcie_gen", count(h.pcie_gen, 1, 7)},
          {"pcie_width", [&](auto& k, auto& n) { pcie_width(k, n, h); }},
          {"hcas_per_node", count(h.hcas_per_node, 0, 1024)},
          {"hca_rate_gbps", positive(h.hca_rate_gbps)}});
  }

  void pcie_width(const toml::key& k, const toml::node& v, Hardware& h) {
    const auto n = count_into(err_, k, v, 1, 32);
    if (!n) return;
    if (*n == 1 || *n == 2 || *n == 4 || *n == 8 || *n == 16 || *n == 32) h.pcie_width = n;
    else err_.add(v, "pcie_width must be 1, 2, 4, 8, 16 or 32 lanes (got " + std::to_string(*n) + ")");
  }

  void software(const toml::node& v, Software& s) {
    const auto* t = table_value(err_, "software", v);
    if (!t) return;
    auto req = [this](std::optional<VersionReq>& out) {
      return [this, o = &out](auto& k, auto& n) { *o = version(k, n); };
    };
    walk(err_, *t, "[class.software]",
         {{"driver", req(s.driver)},
          {"cuda", req(s.cuda)},
          {"nccl", req(s.nccl)},
          {"mpi", req(s.mpi)},
          {"rdma_core", req(s.rdma_core)},
          {"kernel", req(s.kernel)}});
  }

  std::optional<VersionReq> version(const toml::key& k, const toml::node& v) {
    const std::string name(k.str());
    VersionReq r;
    const toml::node* text = &v;
    if (const auto* t = v.as_table()) {
      r.minimum = true;
      text = nullptr;
      walk(err_, *t, "software." + name, {{"min", [&](auto&, auto& n) { text = &n; }}});
      if (!text) {
        if (t->empty()) err_.add(v, name + " needs a version: write " + name + " = { min = \"1.2\" }");
        return std::nullopt;
      }
    } else if (!v.is_string()) {
      err_.add(v, name + " must be a version string or { min = \"...\" }, not " + type_name(v));
      return std::nullopt;
    }
    const auto* s = text->as_string();
    if (!s) {
      err_.add(*text, name + ".min must be a version string, not " + type_name(*text));
      return std::nullopt;
    }
    if (!valid_version(s->get())) {
      err_.add(*text, name + ": bad version " + in_quotes(s->get()) + " (digits first, then digits, letters, . - + _ ~)");
      return std::nullopt;
    }
    r.version = s->get();
    return r;
  }

  // [class.figures."check"]: metrics, or for a group check intra/inter tables of metrics.
  void figures(const toml::node& v, NodeClass& c) {
    const auto* t = table_value(err_, "figures", v);
    if (!t) return;
    for (const auto& [key, node] : in_file_order(*t)) {
      const toml::key& k = *key;
      const toml::node& n = *node;
      const std::string check(k.str());
      const CheckSpec* cs = find_check(check);
      if (!cs) {
        err_.add(k, "unknown check " + in_quotes(check) + " in figures (kiln catalog lists the checks)");
        continue;
      }
      if (spec_metrics(check).empty()) {
        err_.add(k, "check " + in_quotes(check) + " has no figures: give what it checks in [class.hardware] or " +
                        "[class.software]");
        continue;
      }
      const auto* metrics = table_value(err_, "figures." + check, n);
      if (!metrics) continue;
      if (cs->scope != Scope::Group) {
        check_metrics(*metrics, check, GroupScope::None, c);
        continue;
      }
      walk(err_, *metrics, "the group check " + in_quotes(check),
           {{"intra", [&](auto&, auto& s) { scoped(s, check, GroupScope::Intra, c); }},
            {"inter", [&](auto&, auto& s) { scoped(s, check, GroupScope::Inter, c); }}});
    }
  }

  void scoped(const toml::node& v, const std::string& check, GroupScope scope, NodeClass& c) {
    if (const auto* t = table_value(err_, "figures." + check + "." + to_string(scope), v))
      check_metrics(*t, check, scope, c);
  }

  void check_metrics(const toml::table& t, const std::string& check, GroupScope scope, NodeClass& c) {
    const auto known = spec_metrics(check);
    for (const auto& [key, value] : in_file_order(t)) {
      const toml::key& k = *key;
      const toml::node& v = *value;
      const auto m = std::find_if(known.begin(), known.end(), [&](const SpecMetric& s) { return s.metric == k.str(); });
      if (m == known.end()) {
        std::vector<std::string> names;
        for (const auto& s : known) names.push_back(s.metric);
        err_.add(k, "unknown metric " + in_quotes(k.str()) + " for " + check + " (known: " + join(names) + ")");
        continue;
      }
      Figure f{check, m->metric, scope, std::nullopt, std::nullopt, 0, 0, "", m->unit, m->higher_is_better};
      if (m->per_size) sized(v, f, c);
      else entry(v, f, c);
    }
  }

  // busbw = { "1GiB" = {...}, "256MiB" = {...} }
  void sized(const toml::node& v, const Figure& base, NodeClass& c) {
    const std::string what = base.check + "." + base.metric;
    const auto* t = table_value(err_, what, v);
    if (!t) return;
    if (t->contains("value")) {
      err_.add(v, what + " is per message size: key its figures by size, e.g. " + base.metric +
                      ".\"1GiB\" = { value = ..., tolerance = ..., source = \"...\" }");
      return;
    }
    std::map<std::int64_t, std::string> seen;  // size -> the key that named it first
    for (const auto& [key, node] : in_file_order(*t)) {
      const toml::key& k = *key;
      const toml::node& n = *node;
      const auto bytes = size_key(k.str());
      if (!bytes) {
        err_.add(k, "bad message size " + in_quotes(k.str()) + " for " + what + ": write it as 1GiB, 256MiB, 8KiB or bytes");
        continue;
      }
      const auto [first, fresh] = seen.emplace(*bytes, std::string(k.str()));
      if (!fresh) {
        err_.add(k, what + ": size " + in_quotes(k.str()) + " is given twice (as " + in_quotes(first->second) + ")");
        continue;
      }
      Figure f = base;
      f.size_bytes = *bytes;
      entry(n, f, c);
    }
  }

  // "1GiB", "256MiB", "8KiB", "4096" (bytes); K, M, G, T alone and a trailing B are accepted too.
  static std::optional<std::int64_t> size_key(std::string_view key) {
    const std::size_t digits = key.find_first_not_of("0123456789");
    const std::string_view unit = digits == std::string_view::npos ? "" : key.substr(digits);
    static const std::vector<std::string_view> units{"", "B", "K", "KiB", "M", "MiB", "G", "GiB", "T", "TiB"};
    if (digits == 0 || std::find(units.begin(), units.end(), unit) == units.end()) return std::nullopt;
    std::string text(key.substr(0, digits));
    if (!unit.empty() && unit != "B") text += unit.front();
    try {
      const std::int64_t n = parse_size(nlohmann::json(text));
      if (n > 0) return n;
    } catch (const std::exception&) {
    }
    return std::nullopt;
  }

  // { value = ..., tolerance = ..., source = "...", ranks = ... }
  void entry(const toml::node& v, Figure f, NodeClass& c) {
    std::string what = f.check + "." + f.metric;
    const auto* t = v.as_table();
    if (!t) {
      err_.add(v, what + " must be a table { value = ..., tolerance = ..., source = \"...\" }, not " + type_name(v));
      return;
    }
    bool ok = true;
    auto fail_if_empty = [&](auto opt) {
      ok = ok && opt.has_value();
      return opt;
    };
    std::vector<Field> fields{
        {"value", [&](auto& k, auto& n) { f.value = fail_if_empty(positive_value(err_, k, n)).value_or(0); }},
        {"tolerance", [&](auto&, auto& n) { ok = tolerance(n, f) && ok; }},
        {"source", [&](auto& k, auto& n) { f.source = fail_if_empty(source(k, n)).value_or(""); }}};
    if (f.scope != GroupScope::None)
      fields.push_back({"ranks", [&](auto& k, auto& n) { f.ranks = fail_if_empty(count_into(err_, k, n, 2, 1 << 20)); }});
    walk(err_, *t, "the figure " + what, fields);
    for (const char* need : {"value", "tolerance", "source"})
      if (!t->contains(need)) {
        err_.add(v, what + " has no " + need + (std::string(need) == "source" ? " (say where the figure came from)" : ""));
        ok = false;
      }
    if (ok) c.figures.push_back(std::move(f));
  }

  bool tolerance(const toml::node& v, Figure& f) {
    if (!v.is_number()) {
      err_.add(v, "tolerance must be a number, not " + type_name(v));
      return false;
    }
    const double d = *v.value<double>();
    if (!(d > 0 && d < 1)) {
      err_.add(v, "tolerance must be a fraction between 0 and 1, exclusive, such as 0.10 (got " + number_text(d) + ")");
      return false;
    }
    f.tolerance = d;
    return true;
  }

  std::optional<std::string> source(const toml::key& k, const toml::node& v) {
    auto s = string_value(err_, k, v);
    if (s && s->find_first_not_of(" \t\r\n") == std::string::npos) {
      err_.add(v, "source must say where the figure came from");
      return std::nullopt;
    }
    return s;
  }

  void optional_checks(const toml::node& v, NodeClass& c) {
    const auto* arr = v.as_array();
    if (!arr) {
      err_.add(v, "optional must be an array of check keys, not " + type_name(v));
      return;
    }
    for (const auto& el : *arr) {
      const auto* s = el.as_string();
      if (!s) err_.add(el, "optional: a check key must be a string, not " + type_name(el));
      else if (!find_check(s->get())) err_.add(el, "optional: unknown check " + in_quotes(s->get()));
      else if (std::find(c.optional.begin(), c.optional.end(), s->get()) != c.optional.end())
        err_.add(el, "optional: " + in_quotes(s->get()) + " is listed twice");
      else c.optional.push_back(s->get());
    }
  }

  static std::vector<std::string> required_checks(const NodeClass& c) {
    const auto implied = required_by_fields(c);
    std::vector<std::string> out;
    for (const auto& cs : check_catalog()) {
      const bool figured = std::any_of(c.figures.begin(), c.figures.end(), [&](auto& f) { return f.check == cs.key; });
      const bool by_field = std::find(implied.begin(), implied.end(), cs.key) != implied.end();
      const bool optional = std::find(c.optional.begin(), c.optional.end(), cs.key) != c.optional.end();
      if ((figured || by_field) && !optional) out.push_back(cs.key);
    }
    return out;
  }

  void duplicate_names(const Spec& s) {
    std::map<std::string, Pos> first;
    for (std::size_t i = 0; i < s.classes.size() && i < class_pos_.size(); ++i) {
      const auto& name = s.classes[i].name;
      if (name.empty()) continue;
      const auto [it, fresh] = first.emplace(name, class_pos_[i]);
      if (!fresh)
        err_.add(class_pos_[i], "class " + in_quotes(name) + " is defined twice (first at line " +
                                    std::to_string(it->second.line) + ")");
    }
  }
};

}  // namespace

ParseResult parse_spec(std::string_view text, const std::string& path) {
  Errors err(path);
  ParseResult out;
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    err.add(pos_of(e.source()), std::string(e.description()));
    out.errors = err.lines();
    return out;
  }
  Spec s;
  s.path = path;
  Parser(err).document(root, s);
  if (err.empty()) out.spec = std::move(s);
  out.errors = err.lines();
  return out;
}

ParseResult load_spec(const std::string& path) {
  constexpr std::size_t kMaxBytes = 1 << 20;
  std::ifstream in(path, std::ios::binary);
  if (!in) return {std::nullopt, {path + ": cannot read (" + std::strerror(errno) + ")"}};
  std::string text(kMaxBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return {std::nullopt, {path + ": cannot read"}};
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxBytes) return {std::nullopt, {path + ": larger than 1 MiB; not a spec"}};
  return parse_spec(text, path);
}

}  // namespace kiln::spec
