// SLURM hostlist syntax: "gpu[001-004,010],login1", "rack[1-2]-n[01-02]".
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::hostlist {

struct HostlistError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Expands a hostlist into host names, in order, keeping duplicates out. Zero padding follows the
// width of the range's lower bound ("01-10" -> 01..10). Several bracket groups in one name expand
// as a cartesian product. Throws HostlistError (with the offending text) on bad syntax, on a range
// whose upper bound is below its lower bound, or when the result would exceed max_hosts.
std::vector<std::string> expand(const std::string& hostlist, std::size_t max_hosts = 1'000'000);

// Compresses host names into the shortest bracket form over the last number in each name:
// {"gpu001","gpu002","gpu003","login1"} -> "gpu[001-003],login1". Order of first appearance of
// each prefix is kept; numbers within a prefix are sorted.
std::string compress(const std::vector<std::string>& hosts);

}  // namespace kiln::hostlist
