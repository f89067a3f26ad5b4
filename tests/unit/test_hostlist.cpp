#include <catch2/catch.hpp>

#include "common/hostlist.hpp"

using namespace kiln::hostlist;
using V = std::vector<std::string>;

TEST_CASE("hostlists expand ranges, padding, lists and plain names", "[hostlist]") {
  CHECK(expand("gpu[001-004,010],login1") == V{"gpu001", "gpu002", "gpu003", "gpu004", "gpu010", "login1"});
  CHECK(expand("node1") == V{"node1"});
  CHECK(expand("n[1-3]") == V{"n1", "n2", "n3"});
  CHECK(expand("n[08-11]") == V{"n08", "n09", "n10", "n11"});
  CHECK(expand("n[7]") == V{"n7"});
  CHECK(expand("a,b, c") == V{"a", "b", "c"});
  CHECK(expand("r[1-2]-n[01-02]") == V{"r1-n01", "r1-n02", "r2-n01", "r2-n02"});
  CHECK(expand("n[1-2]x") == V{"n1x", "n2x"});
  CHECK(expand("n1,n1,n2") == V{"n1", "n2"});
}

TEST_CASE("bad hostlists are refused with the text at fault", "[hostlist]") {
  for (const char* bad : {"", "gpu[01-", "gpu01-]", "gpu[a-b]", "gpu[5-1]", "gpu[1-2", "a,,b", "gpu[[1]]", "gp u$",
                          "gpu[]", "gpu[1,]"}) {
    INFO(bad);
    CHECK_THROWS_AS(expand(bad), HostlistError);
  }
  try {
    expand("gpu[5-1]");
  } catch (const HostlistError& e) {
    CHECK(std::string(e.what()).find("gpu[5-1]") != std::string::npos);
  }
  CHECK_THROWS_AS(expand("n[1-2000000]", 1000), HostlistError);
}

TEST_CASE("hostlists compress to bracket form and back", "[hostlist]") {
  CHECK(compress({"gpu001", "gpu002", "gpu003", "gpu004", "gpu010", "login1"}) == "gpu[001-004,010],login1");
  CHECK(compress({"node1"}) == "node1");
  CHECK(compress({"node3", "node1", "node2"}) == "node[1-3]");
  CHECK(compress({"n099", "n100"}) == "n[099-100]");
  CHECK(compress({"login", "n1", "n2"}) == "login,n[1-2]");
  CHECK(compress({}).empty());
  for (const char* s : {"gpu[001-004,010],login1", "a[1-5,7,9-10]", "x,y,z"}) {
    INFO(s);
    CHECK(expand(compress(expand(s))) == expand(s));
  }
}
