// storage.fio's parser and command line (worker/checks/storage/fio_json), on fio 3.33 reports
// captured from real runs (tests/data/fio/README.md says how each was made).
#include <catch2/catch.hpp>

#include <algorithm>

#include "tests/unit/test_data.hpp"
#include "worker/checks/storage/fio_json.hpp"

using namespace kiln::worker::storage;

namespace {
std::string fio_data(const std::string& name) { return test_data("fio/" + name); }
}  // namespace

TEST_CASE("fio figures from a direct-I/O run on ext4", "[fio]") {
  const auto f = fio_figures(fio_data("ext4_libaio_direct.json"));
  // The report's bw_bytes and iops (2552468383 B/s write, 2230172543 B/s read, 25452.1 IOPS).
  CHECK(f.seq_write_gbps == Approx(2.552468383));
  CHECK(f.seq_read_gbps == Approx(2.230172543));
  CHECK(f.rand_read_kiops == Approx(25.452095808));
  CHECK(f.extra["fio_version"] == "fio-3.33");
  const auto& lat = f.extra["clat_us"]["rand_read"];
  REQUIRE(lat.contains("p50"));
  REQUIRE(lat.contains("p99.9"));
  CHECK(lat["p50"].get<double>() > 0);
  CHECK(lat["p99.9"].get<double>() >= lat["p99"].get<double>());
  CHECK(lat["p99"].get<double>() >= lat["p50"].get<double>());
}

TEST_CASE("fio's notes before the JSON report are skipped", "[fio]") {
  const auto text = fio_data("tmpfs_psync_buffered.json");
  REQUIRE(text.rfind("note:", 0) == 0);  // the capture really starts with fio's notes
  const auto f = fio_figures(text);
  CHECK(f.seq_read_gbps == Approx(1.649842793));
  CHECK(f.rand_read_kiops == Approx(191.691308691));
}

TEST_CASE("a full disk is a clear error, not figures", "[fio]") {
  try {
    fio_figures(fio_data("disk_full.json"));
    FAIL("no error for a full disk");
  } catch (const std::runtime_error& e) {
    CHECK_THAT(e.what(), Catch::Contains("disk full") && Catch::Contains("seq_write"));
  }
}

TEST_CASE("malformed or partial fio output is an error with a reason, never a crash", "[fio]") {
  const auto text = fio_data("ext4_libaio_direct.json");
  for (std::size_t cut = 0; cut + 2 < text.size(); cut += 97) {
    try {
      fio_figures(text.substr(0, cut));
      FAIL("a report cut at " << cut << " was accepted");
    } catch (const std::runtime_error& e) {
      CHECK_THAT(e.what(), Catch::Contains("fio"));
    }
  }
  CHECK_THROWS_WITH(fio_figures(R"({"jobs": [{"jobname": "seq_read", "read": {"iops": 1}}]})"),
                    Catch::Contains("bw_bytes"));
  CHECK_THROWS_WITH(fio_figures(R"({"jobs": []})"), Catch::Contains("no job seq_write"));
  CHECK_THROWS_WITH(fio_figures(R"({"fio version": "fio-3.33"})"), Catch::Contains("no 'jobs'"));
}

TEST_CASE("the fio command line: three stonewalled jobs on one file", "[fio]") {
  FioPlan p;
  p.file = "/scratch/kiln-fio-n1-7/data";
  p.direct = false;
  p.ioengine = "psync";
  const auto a = fio_argv(p);
  auto has = [&](const std::string& s) { return std::find(a.begin(), a.end(), s) != a.end(); };
  CHECK(a.front() == "fio");
  CHECK(has("--output-format=json"));
  CHECK(has("--filename=/scratch/kiln-fio-n1-7/data"));
  CHECK(has("--direct=0"));
  CHECK(has("--ioengine=psync"));
  CHECK(has("--size=268435456"));
  CHECK(std::count(a.begin(), a.end(), "--stonewall") == 2);
  CHECK(has("--rw=randread"));
  CHECK(has("--bs=4096"));
}
