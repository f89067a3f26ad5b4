// The rdma-core version of the node (the user-space verbs stack: libibverbs and its providers),
// for the spec's `rdma_core` requirement. Read first from the libibverbs the dynamic loader finds:
// rdma-core names the file libibverbs.so.1.<ABI>.<rdma-core version> (libibverbs.so.1.14.44.0 is
// rdma-core 44.0, on Debian, Ubuntu and RHEL alike); else from the dpkg status file (the rdma-core
// or libibverbs1 package, its upstream version). No libibverbs headers needed.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace kiln::worker::rdma {

// "libibverbs.so.1.14.44.0" -> "44.0"; "" when the name carries no rdma-core version (the legacy
// libibverbs.so.1.0.0, or not a libibverbs file name at all).
std::string rdma_core_from_soname(std::string_view file_name);

// The upstream version (no epoch, no Debian revision: "1:44.0-2" -> "44.0") of the installed
// rdma-core package in a dpkg status file's text, else of libibverbs1; "" when neither is
// installed.
std::string rdma_core_from_dpkg(std::string_view status_text);

struct RdmaCoreVersion {
  std::string version;  // "" when none was found
  std::string source;   // the file it was read from, or why none was found
};

// What this node has: the libibverbs.so.1 dlopen finds, then `dpkg_status`.
RdmaCoreVersion read_rdma_core(const std::filesystem::path& dpkg_status = "/var/lib/dpkg/status");

}  // namespace kiln::worker::rdma
