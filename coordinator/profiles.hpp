// The shipped profiles (profiles/*.toml, docs/spec.md), embedded in kiln at build time by
// cmake/EmbedProfiles.cmake: kiln run matches each node against them when no --spec is given.
#pragma once

#include <string_view>
#include <vector>

namespace kiln::coord {

struct EmbeddedProfile {
  std::string_view name;  // the file name without .toml: "hgx-h200-8gpu"
  std::string_view text;  // the TOML
};

const std::vector<EmbeddedProfile>& embedded_profiles();

}  // namespace kiln::coord
