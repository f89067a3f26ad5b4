#include "worker/checks/gpu/dcgm_json.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace kiln::worker::gpu {
namespace {

using json = nlohmann::json;

[[noreturn]] void bad(const std::string& what) { throw std::runtime_error("dcgmi diag output: " + what); }

std::string string_at(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

DcgmOutcome outcome_of(const std::string& raw) {
  std::string s;
  for (char c : raw) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "pass") return DcgmOutcome::Pass;
  if (s == "fail") return DcgmOutcome::Fail;
  if (s == "warn" || s == "warning") return DcgmOutcome::Warn;
  if (s == "skip" || s == "skipped" || s == "not run" || s == "notrun") return DcgmOutcome::Skip;
  bad("unknown status '" + raw.substr(0, 40) + "'");
}

std::vector<std::string> messages(const json& r, const char* key) {
  std::vector<std::string> out;
  auto it = r.find(key);
  if (it == r.end() || it->is_null()) return out;
  if (!it->is_array()) bad(std::string("'") + key + "' is not a list");
  for (const auto& m : *it) {
    if (m.is_string()) out.push_back(m.get<std::string>());
    else if (m.is_object() && m.contains("warning") && m["warning"].is_string()) out.push_back(m["warning"].get<std::string>());
    else bad(std::string("an entry of '") + key + "' is neither text nor {\"warning\": text}");
  }
  return out;
}

// "0,1,2" (1.x-3.x gpu_ids) or entity_group/entity_id (4.x).
std::vector<int> gpus_of(const json& r) {
  std::vector<int> out;
  if (auto id = r.find("entity_id"); id != r.end()) {
    if (!id->is_number_integer()) bad("entity_id is not an integer");
    if (string_at(r, "entity_group") == "GPU" || !r.contains("entity_group")) out.push_back(id->get<int>());
    return out;
  }
  auto ids = r.find("gpu_ids");
  if (ids == r.end()) return out;
  if (ids->is_number_integer()) return {ids->get<int>()};
  if (!ids->is_string()) bad("gpu_ids is neither text nor a number");
  std::string text = ids->get<std::string>(), item;
  text += ',';
  for (char c : text) {
    if (c != ',') { item += c; continue; }
    if (item.empty()) continue;
    if (item.size() > 6 || !std::all_of(item.begin(), item.end(), [](unsigned char d) { return std::isdigit(d); }))
      bad("bad GPU id '" + item.substr(0, 20) + "' in gpu_ids");
    out.push_back(std::stoi(item));
    item.clear();
  }
  return out;
}

DcgmEntry entry_of(const std::string& category, const std::string& test, const json& r) {
  if (!r.is_object()) bad("a result of test '" + test + "' is not an object");
  DcgmEntry e{category, test, gpus_of(r), DcgmOutcome::Pass, string_at(r, "status"), {}, {}};
  if (e.raw_status.empty()) bad("a result of test '" + test + "' has no status");
  e.outcome = outcome_of(e.raw_status);
  e.warnings = messages(r, "warnings");
  e.info = messages(r, "info");
  return e;
}

void read_test(const std::string& category, const json& t, DcgmReport& out) {
  if (t.is_null()) return;  // DCGM 2.x/3.x leave nulls between tests
  if (!t.is_object()) bad("a test is not an object");
  const std::string name = string_at(t, "name");
  if (name.empty()) bad("a test has no name");
  auto results = t.find("results");
  const bool have_results = results != t.end() && results->is_array() && !results->empty();
  if (have_results) {
    for (const auto& r : *results)
      if (!r.is_null()) out.entries.push_back(entry_of(category, name, r));
  } else if (auto s = t.find("test_summary"); s != t.end() && s->is_object()) {
    out.entries.push_back(entry_of(category, name, *s));
  } else {
    bad("test '" + name + "' has neither results nor a test_summary");
  }
}

}  // namespace

DcgmReport parse_dcgm_diag(const std::string& text) {
  const auto start = text.find('{');
  if (start == std::string::npos) bad("no JSON object");
  const json doc = json::parse(text.begin() + static_cast<std::ptrdiff_t>(start), text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) bad("malformed JSON");
  const json* root = nullptr;
  for (const char* key : {"DCGM Diagnostic", "DCGM GPU Diagnostic"})
    if (auto it = doc.find(key); it != doc.end() && it->is_object()) root = &*it;
  if (!root) bad("neither \"DCGM Diagnostic\" nor \"DCGM GPU Diagnostic\" in it");
  DcgmReport out;
  out.version = string_at(*root, "version");
  if (auto m = doc.find("metadata"); out.version.empty() && m != doc.end() && m->is_object())
    out.version = string_at(*m, "version");
  out.runtime_error = string_at(*root, "runtime_error");
  if (out.runtime_error.empty()) out.runtime_error = string_at(doc, "runtime_error");
  auto cats = root->find("test_categories");
  if (cats == root->end() || cats->is_null()) {
    if (out.runtime_error.empty()) bad("no test_categories and no runtime_error");
    return out;
  }
  if (!cats->is_array()) bad("test_categories is not a list");
  for (const auto& c : *cats) {
    if (c.is_null()) continue;
    if (!c.is_object()) bad("a test category is not an object");
    auto tests = c.find("tests");
    if (tests == c.end() || !tests->is_array()) bad("category '" + string_at(c, "category") + "' has no tests list");
    for (const auto& t : *tests) read_test(string_at(c, "category"), t, out);
  }
  return out;
}

}  // namespace kiln::worker::gpu
