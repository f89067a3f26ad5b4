// The run directory on disk: whole lines only in the append logs (a torn tail from a crash is cut,
// a refused write is cut back), temporary files that never follow a link, an exclusive 0700 run
// directory, one coordinator per run.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/auth.hpp"
#include "coordinator/store.hpp"

using namespace kiln;
using namespace kiln::coord;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("kiln-store-" + auth::random_hex(4));
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void spit(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary);
  out << s;
}

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("append log: a torn last line from a crash is cut off when the log is opened again", "[store]") {
  TempDir d;
  const auto path = d.path / "results.jsonl";
  spit(path, "{\"a\":1}\n{\"b\":2}\n{\"c\":");
  {
    AppendLog log(path);
    CHECK(log.lines() == 2);
    CHECK(log.torn_bytes() == 5);
    log.append("{\"d\":4}");
    log.sync();
    CHECK(log.lines() == 3);
  }
  CHECK(slurp(path) == "{\"a\":1}\n{\"b\":2}\n{\"d\":4}\n");
}

TEST_CASE("append log: a write the file system refuses leaves no partial line", "[store]") {
  TempDir d;
  const auto path = d.path / "results.jsonl";
  AppendLog log(path);
  log.append("first");
  log.sync();
  // RLIMIT_FSIZE makes the kernel take only part of the next line, as a disk that fills mid-write
  // does; SIGXFSZ is ignored so that the write returns instead of killing the test.
  struct rlimit old {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 6 + 10;  // "first\n" and 10 more bytes
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  int err = 0;
  try {
    log.append(std::string(100, 'x'));
  } catch (const StorageError& e) {
    err = e.error;
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  CHECK(err == EFBIG);
  CHECK(slurp(path) == "first\n");  // cut back to the last whole line
  CHECK(log.lines() == 1);
  log.append("second");
  CHECK(slurp(path) == "first\nsecond\n");
}

TEST_CASE("append log: one coordinator per run; the lock says whether it is running", "[store]") {
  TempDir d;
  CHECK_FALSE(campaign_running(d.path));
  {
    ResultStore store(d.path);
    CHECK(campaign_running(d.path));
    CHECK_THROWS_WITH(ResultStore(d.path), Catch::Contains("another kiln is still running"));
    CHECK(mode_of(d.path / "results.jsonl") == 0600);
  }
  CHECK_FALSE(campaign_running(d.path));
}

TEST_CASE("atomic writes replace a planted link, never write through it", "[store]") {
  TempDir d;
  spit(d.path / "victim", "precious\n");
  fs::create_symlink(d.path / "victim", d.path / "report.json.tmp");
  write_json_atomic(d.path / "report.json", {{"verdict", "pass"}});
  CHECK(slurp(d.path / "victim") == "precious\n");
  CHECK(slurp(d.path / "report.json").find("\"verdict\": \"pass\"") != std::string::npos);
  CHECK_FALSE(fs::exists(fs::symlink_status(d.path / "report.json.tmp")));
  CHECK(mode_of(d.path / "report.json") == 0600);
  // A link at the report itself is replaced by the file, and its target left alone.
  fs::remove(d.path / "report.json");
  fs::create_symlink(d.path / "victim", d.path / "report.json");
  write_json_atomic(d.path / "report.json", {{"verdict", "fail"}});
  CHECK(slurp(d.path / "victim") == "precious\n");
  CHECK_FALSE(fs::is_symlink(d.path / "report.json"));
}

TEST_CASE("run directories are created exclusively, mode 0700 whatever the umask", "[store]") {
  TempDir d;
  const auto run = d.path / "kiln-runs" / "r1";
  const mode_t old = ::umask(0277);
  create_run_dir(run);
  ::umask(old);
  CHECK(mode_of(run) == 0700);
  CHECK_THROWS_WITH(create_run_dir(run), Catch::Contains("already exists"));
  create_run_dir(d.path / "kiln-runs" / "r2");  // the parent may exist; the run itself may not
  CHECK(mode_of(d.path / "kiln-runs" / "r2") == 0700);
}

TEST_CASE("space set aside for the report is given back on release", "[store]") {
  TempDir d;
  SpaceReserve r(d.path, 1 << 20);
  REQUIRE(r.held());
  CHECK(fs::file_size(d.path / ".kiln-reserve") == (1u << 20));
  CHECK(mode_of(d.path / ".kiln-reserve") == 0600);
  r.release();
  CHECK_FALSE(fs::exists(d.path / ".kiln-reserve"));
}
