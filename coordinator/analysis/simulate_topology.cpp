#include "coordinator/analysis/simulate_topology.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "common/hostlist.hpp"

namespace kiln::analysis {

namespace {

// key=value tokens of one line, comment removed.
std::unordered_map<std::string, std::string> line_fields(const std::string& line) {
  std::unordered_map<std::string, std::string> kv;
  std::istringstream in(line.substr(0, line.find('#')));
  std::string token;
  while (in >> token) {
    const auto eq = token.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("topology.conf: expected key=value, got '" + token + "'");
    kv[token.substr(0, eq)] = token.substr(eq + 1);
  }
  return kv;
}

}  // namespace

SimTopology parse_topology_conf(const std::string& text) {
  if (text.size() > kMaxTopologyConfBytes) throw std::invalid_argument("topology.conf: over 4 MiB");
  SimTopology t;
  std::unordered_map<std::string, int> index;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto kv = line_fields(line);
    const auto nodes = kv.find("Nodes");
    if (nodes == kv.end()) continue;  // a spine (Switches=) or a blank line
    const auto name = kv.find("SwitchName");
    if (name == kv.end() || name->second.empty())
      throw std::invalid_argument("topology.conf: Nodes= without SwitchName=: " + line);
    Switch leaf{name->second, {}};
    for (const auto& host : kiln::hostlist::expand(nodes->second)) {
      if (index.count(host)) throw std::invalid_argument("topology.conf: " + host + " is under two leaves");
      index[host] = static_cast<int>(t.names.size());
      leaf.nodes.push_back(static_cast<int>(t.names.size()));
      t.names.push_back(host);
    }
    t.leaves.push_back(std::move(leaf));
  }
  if (t.names.size() < 2) throw std::invalid_argument("topology.conf: fewer than 2 nodes under leaf switches");
  return t;
}

std::vector<Switch> block_leaves(int n, int leaf_size) {
  std::vector<Switch> leaves;
  for (int first = 0; first < n; first += leaf_size) {
    Switch s{"leaf" + std::to_string(leaves.size()), {}};
    for (int u = first; u < std::min(n, first + leaf_size); ++u) s.nodes.push_back(u);
    leaves.push_back(std::move(s));
  }
  return leaves;
}

}  // namespace kiln::analysis
