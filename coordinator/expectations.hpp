// What a campaign is judged against (docs/spec.md): a spec file (kiln run --spec FILE, its text
// kept as RUN_DIR/spec.toml), the shipped profiles matched by each node's GPUs (no --spec), or
// nothing (--spec none). campaign.json's "expectations" records which, so that kiln report and
// kiln resume build the same analysis::Expectations as the campaign did.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "coordinator/analysis/expect.hpp"

namespace kiln::coord {

// The spec file's name inside the run directory.
inline constexpr const char* kSpecFile = "spec.toml";

// The embedded profiles, parsed (a unit test shows each parses without an error).
std::vector<spec::Spec> shipped_profiles();

// The checks of a comma-separated --optional list; throws std::invalid_argument with one line for
// an unknown check.
std::set<std::string> parse_optional(const std::string& csv);

struct ExpectRequest {
  std::string spec;      // --spec: "" (detect a profile), "none", or the file as named
  std::string spec_text; // the file's text, when spec names one
  std::string optional;  // --optional
  std::string partition;
  std::string tests;     // --tests, the plan
};

// The expectations of a request; `errors` gets the spec's FILE:LINE:COL lines (nothing is
// returned usable then). Throws std::invalid_argument for a bad --optional.
analysis::Expectations make_expectations(const ExpectRequest& req, std::vector<std::string>& errors);

// campaign.json's "expectations" for a request.
nlohmann::json expectations_record(const ExpectRequest& req);

// The expectations a run directory records: campaign.json's "expectations" and, for a spec, its
// copy in the directory. A run recorded before kiln judged against specs is judged against none.
// Throws std::runtime_error when the spec copy is missing or no longer parses.
analysis::Expectations recorded_expectations(const std::filesystem::path& dir, const nlohmann::json& campaign);

}  // namespace kiln::coord
