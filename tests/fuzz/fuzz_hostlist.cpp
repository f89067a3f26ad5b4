// Hostlists: hostlist::count, expand and compress on arbitrary text.
//
// Expected: HostlistError is the only exception from count and expand, and compress throws
// nothing; count() decides expand's limit exactly; every name expanded is distinct and valid;
// compress(expand(x)) expands to the same names; arbitrary names (the input cut at newlines)
// compress without error. The limit is 4096 hosts here, so that each input stays fast.
#include <set>
#include <string>
#include <vector>

#include "common/hostlist.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace hl = kiln::hostlist;
namespace fz = kiln::fuzz;

namespace {

constexpr std::size_t kLimit = 4096;

bool valid_name(const std::string& h) {
  if (h.empty() || h.size() > hl::kMaxNameChars) return false;
  for (unsigned char c : h)
    if (!std::isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

std::string compress_or_fail(const std::vector<std::string>& names) {
  try {
    return hl::compress(names);
  } catch (const std::exception& e) {
    fz::uncaught("compress", e);
  }
}

void check_expansion(const std::string& text, const std::vector<std::string>& hosts, std::uint64_t counted) {
  fz::expect(hosts.size() <= counted, "expand", "more names than count() says");
  const std::set<std::string> unique(hosts.begin(), hosts.end());
  fz::expect(unique.size() == hosts.size(), "expand", "a name appears twice");
  for (const auto& h : hosts) fz::expect(valid_name(h), "expand", "invalid name '" + h + "' from '" + text + "'");
  const std::string packed = compress_or_fail(hosts);
  std::vector<std::string> back;
  try {
    back = hl::expand(packed, kLimit);
  } catch (const hl::HostlistError& e) {
    fz::fail("compress round trip", "'" + packed + "' does not expand: " + e.what());
  }
  fz::expect(std::set<std::string>(back.begin(), back.end()) == unique && back.size() == hosts.size(),
             "compress round trip", "'" + text + "' -> '" + packed + "' names other hosts");
}

void check_hostlist(const std::string& text) {
  std::uint64_t counted = 0;
  try {
    counted = hl::count(text);
  } catch (const hl::HostlistError&) {
    try {
      hl::expand(text, kLimit);
    } catch (const hl::HostlistError&) {
      return;
    } catch (const std::exception& e) {
      fz::uncaught("expand", e);
    }
    fz::fail("expand", "accepted '" + text + "', which count() refuses");
  } catch (const std::exception& e) {
    fz::uncaught("count", e);
  }
  std::vector<std::string> hosts;
  try {
    hosts = hl::expand(text, kLimit);
  } catch (const hl::HostlistError& e) {
    fz::expect(counted > kLimit, "expand", "refused '" + text + "' within the limit: " + e.what());
    return;
  } catch (const std::exception& e) {
    fz::uncaught("expand", e);
  }
  fz::expect(counted <= kLimit, "expand", "expanded past the limit");
  check_expansion(text, hosts, counted);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(fz::as_text(data, size));
  check_hostlist(text);
  std::vector<std::string> names;
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    names.push_back(text.substr(start, nl - start));
  names.push_back(text.substr(start));
  compress_or_fail(names);
  return 0;
}
