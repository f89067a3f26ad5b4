#include "coordinator/expectations.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/checks.hpp"
#include "coordinator/profiles.hpp"

namespace kiln::coord {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::vector<std::string> split_csv(const std::string& csv) {
  std::vector<std::string> out;
  std::stringstream in(csv);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

std::vector<spec::Spec> shipped_profiles() {
  std::vector<spec::Spec> out;
  for (const auto& p : embedded_profiles()) {
    auto parsed = spec::parse_spec(p.text, "profiles/" + std::string(p.name) + ".toml");
    if (!parsed.spec) throw std::logic_error("shipped profile " + std::string(p.name) + " does not parse: " + parsed.errors.front());
    out.push_back(std::move(*parsed.spec));
  }
  return out;
}

std::set<std::string> parse_optional(const std::string& csv) {
  std::set<std::string> out;
  for (const auto& key : split_csv(csv)) {
    if (!find_check(key)) throw std::invalid_argument("--optional: unknown check '" + key.substr(0, 64) + "' (kiln catalog lists them)");
    out.insert(key);
  }
  return out;
}

analysis::Expectations make_expectations(const ExpectRequest& req, std::vector<std::string>& errors) {
  analysis::Expectations e;
  e.optional = parse_optional(req.optional);
  e.partition = req.partition;
  e.planned = split_csv(req.tests);
  if (req.spec == "none") {
    e.mode = analysis::ExpectMode::Off;
    e.label = "--spec none";
    return e;
  }
  if (req.spec.empty()) {
    e.mode = analysis::ExpectMode::Profiles;
    e.label = "the shipped profiles";
    e.specs = shipped_profiles();
    return e;
  }
  auto parsed = spec::parse_spec(req.spec_text, req.spec);
  errors = parsed.errors;
  e.mode = analysis::ExpectMode::Spec;
  e.label = req.spec;
  if (parsed.spec) e.specs.push_back(std::move(*parsed.spec));
  return e;
}

json expectations_record(const ExpectRequest& req) {
  const std::string mode = req.spec == "none" ? "off" : req.spec.empty() ? "profiles" : "spec";
  json j = {{"mode", mode}, {"spec", req.spec}, {"optional", req.optional}, {"partition", req.partition},
            {"tests", req.tests}};
  if (mode == "spec") j["file"] = kSpecFile;
  return j;
}

analysis::Expectations recorded_expectations(const fs::path& dir, const json& campaign) {
  if (!campaign.is_object() || !campaign.contains("expectations") || !campaign.at("expectations").is_object()) {
    analysis::Expectations e;
    e.label = "the run was recorded before kiln judged against specs";
    return e;
  }
  const json& j = campaign.at("expectations");
  ExpectRequest req;
  const auto mode = j.value("mode", std::string("off"));
  req.spec = mode == "off" ? "none" : mode == "profiles" ? "" : j.value("spec", std::string(kSpecFile));
  req.optional = j.value("optional", std::string{});
  req.partition = j.value("partition", std::string{});
  req.tests = j.value("tests", std::string{});
  if (mode == "spec") {
    const fs::path file = dir / j.value("file", std::string(kSpecFile));
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + file.string() + ", the spec the campaign was judged against");
    std::stringstream text;
    text << in.rdbuf();
    req.spec_text = text.str();
  }
  std::vector<std::string> errors;
  analysis::Expectations e;
  try {
    e = make_expectations(req, errors);
  } catch (const std::invalid_argument& ex) {
    throw std::runtime_error(dir.string() + "/campaign.json: " + ex.what());
  }
  if (!errors.empty()) throw std::runtime_error("the run's spec no longer parses: " + errors.front());
  return e;
}

}  // namespace kiln::coord
