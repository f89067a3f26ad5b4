// The findings catalog: every finding code maps to a severity, a one-line meaning and the next
// step an operator should take. Operators read actions, not error numbers. See docs/findings.md.
#pragma once

#include <string>
#include <vector>

#include "common/types.hpp"

namespace kiln::coord {

struct CatalogEntry {
  std::string code;
  Severity severity;
  std::string meaning;
  std::string next_step;
};

const std::vector<CatalogEntry>& catalog();
// The entry for CODE, or a generic one naming the code when it is not in the catalog.
CatalogEntry lookup(const std::string& code);
// A finding for CODE about ENTITY, with the catalog's severity and next step.
Finding make_finding(const std::string& code, const Entity& entity, const std::string& summary,
                     nlohmann::json evidence = nlohmann::json::array(), double confidence = 1.0);

}  // namespace kiln::coord
