#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "common/auth.hpp"

using namespace kiln::auth;
namespace fs = std::filesystem;

TEST_CASE("HMAC-SHA256 matches the RFC 4231 test vector", "[auth]") {
  // RFC 4231 test case 2.
  CHECK(hmac_sha256_hex("Jefe", "what do ya want for nothing?") ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST_CASE("random nonces and constant-time comparison", "[auth]") {
  const auto a = hmac_sha256_hex("s", "m");
  CHECK(equal_constant_time(a, hmac_sha256_hex("s", "m")));
  CHECK_FALSE(equal_constant_time(a, a.substr(1)));
  CHECK_FALSE(equal_constant_time(a, hmac_sha256_hex("t", "m")));
  CHECK(random_hex(16).size() == 32);
  CHECK(random_hex(16) != random_hex(16));
}

TEST_CASE("secret files are created 0600 and refused when others can read them", "[auth]") {
  const fs::path dir = fs::temp_directory_path() / ("kiln-auth-" + random_hex(4));
  fs::create_directories(dir);
  const auto secret = create_secret_file(dir / "secret");
  struct stat st {};
  REQUIRE(::stat((dir / "secret").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(read_secret_file(dir / "secret") == secret);
  CHECK_THROWS_AS(create_secret_file(dir / "secret"), AuthError);  // never overwritten
  fs::permissions(dir / "secret", fs::perms::owner_read | fs::perms::group_read);
  CHECK_THROWS_AS(read_secret_file(dir / "secret"), AuthError);
  CHECK_THROWS_AS(read_secret_file(dir / "missing"), AuthError);
  { std::ofstream(dir / "empty") << ""; }
  fs::permissions(dir / "empty", fs::perms::owner_read | fs::perms::owner_write);
  CHECK_THROWS_AS(read_secret_file(dir / "empty"), AuthError);
  fs::remove_all(dir);
}
