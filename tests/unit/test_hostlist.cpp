#include <catch2/catch.hpp>

#include "common/hostlist.hpp"

#include <chrono>
#include <fstream>
#include <limits>
#include <set>
#include <sys/resource.h>

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

namespace {

// The peak resident set of this process in KiB: VmHWM, reset first where the kernel allows
// (/proc/self/clear_refs "5"), else getrusage's ru_maxrss. ctest runs each test case in its own
// process, so the peak before the call is the test runner's own.
long peak_rss_kib(bool reset) {
  if (reset) std::ofstream("/proc/self/clear_refs") << "5";
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace

TEST_CASE("hostlists are counted before they are expanded", "[hostlist]") {
  CHECK(count("gpu[001-004,010],login1") == 6);
  CHECK(count("r[1-2]-n[01-02]") == 4);
  CHECK(count("n1,n1,n[1-2]") == 4);  // duplicates count: expand removes them afterwards
  CHECK(count("a[0-9999999],b[0-9999999],c[0-9999999]") == 30'000'000);
  CHECK(count("a[0-99999][0-99999][0-99999]") == 1'000'000'000'000'000ull);
  // Products and sums past 2^64 saturate instead of wrapping round to a small number.
  const std::string huge = "[0-999999999999999999]";
  CHECK(count("a" + huge + huge) == std::numeric_limits<std::uint64_t>::max());
  CHECK(count("a" + huge + huge + huge + "," + "b" + huge) == std::numeric_limits<std::uint64_t>::max());
  CHECK_THROWS_AS(count("gpu[5-1]"), HostlistError);
}

TEST_CASE("a hostlist naming too many hosts is refused at once, in little memory", "[hostlist]") {
  const std::string three = "a[0-9999999],b[0-9999999],c[0-9999999]";  // 30 M names, ~1.6 GB expanded
  const long before = peak_rss_kib(true);
  const auto t0 = std::chrono::steady_clock::now();
  std::string message;
  try {
    expand(three);
  } catch (const HostlistError& e) {
    message = e.what();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long grown_kib = peak_rss_kib(false) - before;
  INFO(message << " (peak RSS +" << grown_kib << " KiB, " << seconds << " s)");
  CHECK(message.find("names 30000000 hosts, more than the limit of 100000") != std::string::npos);
  CHECK(message.find("a[0-9999999]") != std::string::npos);
  CHECK(grown_kib < 4 * 1024);
  CHECK(seconds < 1.0);
  // Products past 2^64 are refused the same way, not wrapped round to a small count.
  CHECK_THROWS_WITH(expand("a[0-999999999999999999][0-999999999999999999]"),
                    Catch::Contains("more than 2^64 hosts"));
  CHECK_THROWS_WITH(expand("a[0-99999][0-99999][0-99999]"), Catch::Contains("names 1000000000000000 hosts"));
}

TEST_CASE("the host limit is an argument, counted over every name", "[hostlist]") {
  CHECK(kDefaultMaxHosts == 100'000);
  CHECK(expand("n[1-100000]").size() == 100'000);
  CHECK_THROWS_AS(expand("n[0-100000]"), HostlistError);
  CHECK(expand("n[1-1000]", 1000).size() == 1000);
  CHECK_THROWS_AS(expand("n[1-1001]", 1000), HostlistError);
  CHECK_THROWS_AS(expand("n[1-600],m[1-600]", 1000), HostlistError);
  CHECK(expand("n[1-3],n[2-4]") == V{"n1", "n2", "n3", "n4"});
}

TEST_CASE("hostlist text and host names are bounded in length", "[hostlist]") {
  const std::string long_text(kMaxChars + 1, 'a');
  try {
    expand(long_text);
    FAIL("a hostlist over the length limit was accepted");
  } catch (const HostlistError& e) {
    CHECK(std::string(e.what()).find("more than the limit of 1048576") != std::string::npos);
    CHECK(std::string(e.what()).size() < 300);  // the text is quoted in part, not whole
  }
  CHECK(expand(std::string(kMaxNameChars, 'a')).size() == 1);
  CHECK_THROWS_WITH(expand(std::string(kMaxNameChars + 1, 'a')), Catch::Contains("longer than 255"));
  CHECK_THROWS_WITH(expand(std::string(kMaxNameChars - 2, 'a') + "[1-100]"), Catch::Contains("longer than 255"));
  // Many one-number groups make one long name, refused before anything is built.
  std::string groups;
  for (int i = 0; i < 1000; ++i) groups += "[1]";
  CHECK_THROWS_AS(expand("n" + groups), HostlistError);
}

TEST_CASE("names differing only in zero padding stay distinct through compress", "[hostlist]") {
  CHECK(compress({"n1", "n01"}) == "n1,n01");
  CHECK(compress({"n0", "n00", "n000", "n1"}) == "n[0-1],n00,n000");
  CHECK(compress({"n099", "n100", "n7"}) == "n[099-100],n7");
  CHECK(compress({"n001", "n01", "n1000"}) == "n[001,1000],n01");
  for (const V& hosts : {V{"n1", "n01", "n001"}, V{"a9", "a10", "a09", "a010"}, V{"x0", "x00", "x1", "x01"}}) {
    const auto back = expand(compress(hosts));
    CHECK(std::set<std::string>(back.begin(), back.end()) == std::set<std::string>(hosts.begin(), hosts.end()));
    CHECK(back.size() == hosts.size());
  }
}
