// Leaf switches for `kiln simulate`: read from a SLURM topology.conf, or laid out in equal blocks.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "coordinator/analysis/planner.hpp"

namespace kiln::analysis {

struct SimTopology {
  std::vector<std::string> names;  // node names, in order of first appearance (node index = position)
  std::vector<Switch> leaves;      // switches with Nodes= (node indices into names)
};

// Parses topology.conf text: `SwitchName=leaf1 Nodes=node[1-32]` lines make leaves; lines with
// Switches= (spines) and other keys are accepted and ignored; `#` starts a comment. A node under two
// leaves, a leaf without a name, or a file naming no node throws std::invalid_argument.
SimTopology parse_topology_conf(const std::string& text);

// The longest topology.conf accepted (a 100,000-node cluster's fits in well under 1 MiB).
inline constexpr std::size_t kMaxTopologyConfBytes = 4u << 20;

// n nodes in leaves of leaf_size ("leaf0", "leaf1", ...; the last may be smaller); names empty.
std::vector<Switch> block_leaves(int n, int leaf_size);

}  // namespace kiln::analysis
