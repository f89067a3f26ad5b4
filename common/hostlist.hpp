// SLURM hostlist syntax: "gpu[001-004,010],login1", "rack[1-2]-n[01-02]".
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::hostlist {

struct HostlistError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Far more hosts than any cluster has; a hostlist naming more is a typo ("a[0-9999999]").
inline constexpr std::size_t kDefaultMaxHosts = 100'000;
// The longest hostlist text accepted, and the longest host name one may expand to.
inline constexpr std::size_t kMaxChars = 1u << 20;
inline constexpr std::size_t kMaxNameChars = 255;

// How many names a hostlist expands to, counting duplicates, without expanding it: ranges are
// summed and bracket groups multiplied, saturating at UINT64_MAX. Throws HostlistError on bad
// syntax (as expand does).
std::uint64_t count(const std::string& hostlist);

// Expands a hostlist into host names, in order, keeping duplicates out. Zero padding follows the
// width of the range's lower bound ("01-10" -> 01..10). Several bracket groups in one name expand
// as a cartesian product. Throws HostlistError (with the offending text) on bad syntax, on a range
// whose upper bound is below its lower bound, on text longer than kMaxChars, on a name longer than
// kMaxNameChars, or when count() exceeds max_hosts: the count is taken before anything is expanded,
// so a refused hostlist costs no more memory than its text.
std::vector<std::string> expand(const std::string& hostlist, std::size_t max_hosts = kDefaultMaxHosts);

// Compresses host names into the shortest bracket form over the last number in each name:
// {"gpu001","gpu002","gpu003","login1"} -> "gpu[001-003],login1". Order of first appearance of
// each prefix is kept; numbers within a prefix are sorted. Names that differ only in zero padding
// ("n1", "n01") stay distinct, so expand(compress(hosts)) names the same hosts.
std::string compress(const std::vector<std::string>& hosts);

}  // namespace kiln::hostlist
