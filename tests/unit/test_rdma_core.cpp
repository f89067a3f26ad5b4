// The rdma-core version of a node (worker/hw/rdma_core): from the libibverbs file name, from a dpkg
// status file, and what read_rdma_core says on this machine.
#include <catch2/catch.hpp>

#include "worker/hw/rdma_core.hpp"

using namespace kiln::worker;

TEST_CASE("the rdma-core version from the libibverbs file name", "[rdma]") {
  CHECK(rdma::rdma_core_from_soname("libibverbs.so.1.14.44.0") == "44.0");
  CHECK(rdma::rdma_core_from_soname("/usr/lib64/libibverbs.so.1.14.48.0") == "48.0");
  CHECK(rdma::rdma_core_from_soname("libibverbs.so.1.14.2307mlnx47") == "2307mlnx47");
  CHECK(rdma::rdma_core_from_soname("libibverbs.so.1.0.0").empty());  // the legacy libibverbs
  CHECK(rdma::rdma_core_from_soname("libibverbs.so.1").empty());
  CHECK(rdma::rdma_core_from_soname("libmlx5.so.1.24.44.0").empty());
}

TEST_CASE("the rdma-core version from a dpkg status file", "[rdma]") {
  const std::string status = R"(Package: libibverbs1
Status: install ok installed
Source: rdma-core
Version: 44.0-2
Description: Library for direct userspace use of RDMA (InfiniBand/iWARP)
 libibverbs is a library that allows userspace processes to use RDMA
 Version: 1.0 in a continuation line is not the package's

Package: rdma-core
Status: deinstall ok config-files
Version: 43.0-1

Package: bash
Status: install ok installed
Version: 5.2.15-2+b7
)";
  // rdma-core is only configuration files left: libibverbs1 is what is installed.
  CHECK(rdma::rdma_core_from_dpkg(status) == "44.0");
  CHECK(rdma::rdma_core_from_dpkg("Package: rdma-core\nStatus: install ok installed\nVersion: 1:50.0-2ubuntu0.2\n") == "50.0");
  CHECK(rdma::rdma_core_from_dpkg("Package: bash\nStatus: install ok installed\nVersion: 5.2\n").empty());
  CHECK(rdma::rdma_core_from_dpkg("").empty());
}

TEST_CASE("reading the node's rdma-core says where the version came from, or why there is none", "[rdma]") {
  const auto v = rdma::read_rdma_core("/nonexistent/dpkg/status");
  // This machine may or may not have libibverbs; either way the source is said.
  CHECK_FALSE(v.source.empty());
  if (v.version.empty()) CHECK_THAT(v.source, Catch::Contains("/nonexistent/dpkg/status"));
  else CHECK_THAT(v.source, Catch::Contains("libibverbs.so.1."));
}
