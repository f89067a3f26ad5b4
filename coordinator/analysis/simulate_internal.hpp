// Shared between the simulate*.cpp files; not part of the analysis API.
#pragma once

#include "coordinator/analysis/simulate.hpp"

namespace kiln::analysis {

// Throws std::invalid_argument with the option's name on an impossible value.
void validate_options(const SimulateOptions& opt);
// Leaf size of --leaf-size -1: N/4, bounded to 2..32.
int auto_leaf_size(int nodes);

}  // namespace kiln::analysis
