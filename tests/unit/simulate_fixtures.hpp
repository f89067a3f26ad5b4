// Shared by the unit tests of `kiln simulate` (test_analysis_simulate.cpp, test_analysis_simulate_cores.cpp).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace simulate_fixtures {

// Whether a conclusion in a trial's story (SimulateOptions::story) holds the text.
inline bool story_says(const nlohmann::json& detail, const std::string& text) {
  for (const auto& round : detail["story"]["rounds"])
    for (const auto& c : round["concluded"])
      if (c.get<std::string>().find(text) != std::string::npos) return true;
  return false;
}

}  // namespace simulate_fixtures
