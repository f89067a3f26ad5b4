// Node telemetry (worker/telemetry.hpp, docs/telemetry.md): the /proc parsers on files recorded
// from a real machine (tests/data/proc/), the summary math, the record bounds, the sampler's
// rhythm, and report.html's plots (bounded, no NaN, escaped).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "coordinator/report_html.hpp"
#include "test_data.hpp"
#include "worker/hw/proc_stats.hpp"
#include "worker/telemetry.hpp"

using namespace kiln;
using namespace kiln::worker;
namespace fs = std::filesystem;

namespace {

// The "cpu " line's numbers, read independently of the parser.
std::vector<std::uint64_t> cpu_line(const std::string& text) {
  std::istringstream in(text.substr(text.find("cpu ") + 4));
  std::vector<std::uint64_t> v;
  std::uint64_t x;
  while (v.size() < 8 && in >> x) v.push_back(x);
  return v;
}

std::uint64_t meminfo_field(const std::string& text, const std::string& key) {
  const auto at = text.find(key);
  return std::stoull(text.substr(at + key.size()));
}

std::size_t count(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (auto p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("telemetry: /proc/stat gives busy and total jiffies of the cpu line") {
  const auto text = test_data("proc/stat.1");
  const auto v = cpu_line(text);
  REQUIRE(v.size() == 8);
  const auto t = host::parse_proc_stat(text);
  REQUIRE(t);
  std::uint64_t total = 0;
  for (auto x : v) total += x;
  CHECK(t->total == total);
  CHECK(t->busy == total - v[3] - v[4]);
  CHECK_FALSE(host::parse_proc_stat("intr 1 2 3\n"));
  CHECK_FALSE(host::parse_proc_stat("cpu  1 2\n"));
}

TEST_CASE("telemetry: CPU percent between two recorded readings") {
  const auto a = host::parse_proc_stat(test_data("proc/stat.1"));
  const auto b = host::parse_proc_stat(test_data("proc/stat.2"));
  REQUIRE((a && b));
  const auto pct = host::cpu_percent(*a, *b);
  REQUIRE(pct);
  CHECK(*pct == Approx(100.0 * double(b->busy - a->busy) / double(b->total - a->total)));
  CHECK(*pct >= 0);
  CHECK(*pct <= 100);
  CHECK_FALSE(host::cpu_percent(*a, *a));  // no time passed
  CHECK_FALSE(host::cpu_percent(*b, *a));  // went back
}

TEST_CASE("telemetry: /proc/meminfo total and available") {
  const auto text = test_data("proc/meminfo");
  const auto m = host::parse_meminfo(text);
  REQUIRE(m);
  CHECK(m->total_kib == meminfo_field(text, "MemTotal:"));
  CHECK(m->available_kib == meminfo_field(text, "MemAvailable:"));
  CHECK_FALSE(host::parse_meminfo("MemTotal: 10 kB\n"));
  CHECK_FALSE(host::parse_meminfo("MemTotal: 10 kB\nMemAvailable: 20 kB\n"));
}

TEST_CASE("telemetry: IB data counters summed over ports, in bytes") {
  const fs::path root = fs::path(KILN_TEST_DATA) / "ib/before";
  std::uint64_t rx = 0;
  int ports = 0;
  for (const auto& dev : fs::directory_iterator(root))
    for (const auto& port : fs::directory_iterator(dev.path() / "ports")) {
      std::ifstream in(port.path() / "counters/port_rcv_data");
      std::uint64_t v = 0;
      if (in >> v) rx += v * 4, ++ports;
    }
  const auto b = host::read_ib_bytes(root);
  CHECK(b.ports == ports);
  CHECK(b.ports > 0);
  CHECK(b.rx == rx);
  CHECK(host::read_ib_bytes(root / "absent").ports == 0);
  CHECK_FALSE(host::rate(10, 5, 1.0));  // a reset counter is no rate
  CHECK(*host::rate(5, 10, 0.5) == Approx(10));
}

TEST_CASE("telemetry: the reader turns two readings into a CPU rate and memory figures") {
  const fs::path dir = fs::temp_directory_path() / ("kiln-telemetry-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(fs::path(KILN_TEST_DATA) / "proc/meminfo", dir / "meminfo", fs::copy_options::overwrite_existing);
  fs::copy_file(fs::path(KILN_TEST_DATA) / "proc/stat.1", dir / "stat", fs::copy_options::overwrite_existing);
  telemetry::Reader reader(dir, dir / "no-ib", nullptr);
  const auto first = reader.read(0);
  CHECK_FALSE(first.node.count("cpu_pct"));  // no rate from one reading
  fs::copy_file(fs::path(KILN_TEST_DATA) / "proc/stat.2", dir / "stat", fs::copy_options::overwrite_existing);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto second = reader.read(1);
  const auto a = host::parse_proc_stat(test_data("proc/stat.1"));
  const auto b = host::parse_proc_stat(test_data("proc/stat.2"));
  REQUIRE(second.node.count("cpu_pct"));
  CHECK(second.node.at("cpu_pct") == Approx(*host::cpu_percent(*a, *b)));
  const auto m = host::parse_meminfo(test_data("proc/meminfo"));
  CHECK(second.node.at("mem_used_pct") == Approx(100.0 * double(m->total_kib - m->available_kib) / double(m->total_kib)));
  CHECK_FALSE(second.node.count("ib_rx_MB_s"));  // no HCA
  CHECK(second.gpus.empty());                   // no NVML
  fs::remove_all(dir);
}

TEST_CASE("telemetry: summary is min, median and max per field, over the samples that have it") {
  std::vector<telemetry::Sample> s(5);
  for (int i = 0; i < 5; ++i) {
    s[i].node["cpu_pct"] = 10.0 * (5 - i);  // 50 40 30 20 10
    s[i].gpus.resize(2);
    s[i].gpus[0]["power_w"] = 100 + i;
    if (i % 2 == 0) s[i].gpus[1]["temp_c"] = 60 + i;  // 60 62 64: read in 3 samples of 5
  }
  s[2].node["mem_used_gib"] = std::nan("");  // never reaches a summary
  const auto sum = telemetry::summarize(s);
  CHECK(sum.samples == 5);
  CHECK(sum.node.at("cpu_pct") == telemetry::Span{10, 30, 50});
  CHECK_FALSE(sum.node.count("mem_used_gib"));
  REQUIRE(sum.gpus.size() == 2);
  CHECK(sum.gpus[0].at("power_w") == telemetry::Span{100, 102, 104});
  CHECK(sum.gpus[1].at("temp_c") == telemetry::Span{60, 62, 64});
  const auto rec = telemetry::summary_record(sum, 4.96);
  CHECK(rec.metric == "telemetry_summary");
  CHECK(rec.value == 5);
  CHECK(rec.extra.at("t_s") == 5.0);
  CHECK(rec.extra.at("node").at("cpu_pct") == nlohmann::json{10, 30, 50});
  CHECK(rec.extra.at("gpus").at(1).at("temp_c") == nlohmann::json{60, 62, 64});
  CHECK(telemetry::summarize({}).samples == 0);
}

TEST_CASE("telemetry: a reading becomes a compact result, non-finite values left out") {
  telemetry::Sample s;
  s.t_s = 2.04;
  s.node = {{"cpu_pct", 12.345}, {"mem_used_gib", std::nan("")}};
  s.gpus = {{{"power_w", 612.3456}, {"throttle", 4.0}}};
  const Result r = telemetry::sample_record(s);
  CHECK(r.metric == "telemetry");
  CHECK(r.value == Approx(2.0));
  CHECK(r.extra.at("node").at("cpu_pct") == 12.35);
  CHECK_FALSE(r.extra.at("node").contains("mem_used_gib"));
  CHECK(r.extra.at("gpus").at(0).at("power_w") == 612.35);
  CHECK(r.extra.at("gpus").at(0).at("throttle") == 4.0);
  const auto line = nlohmann::json(Record(r)).dump();
  CHECK(line.find("null") == std::string::npos);
  CHECK(line.size() < 400);  // one node, one GPU: a short line
}

TEST_CASE("telemetry: the sampler reads on its interval during a check and ends it with a summary") {
  NodeInfo node;
  node.host = "n1";
  node.world_rank = 4;
  std::mutex mu;
  std::vector<Result> got;
  {
    auto reader = std::make_unique<telemetry::Reader>("/proc", "/nonexistent", nullptr);
    telemetry::Sampler sampler(0.1, std::move(reader), node, [&](const Record& r) {
      std::lock_guard<std::mutex> l(mu);
      got.push_back(std::get<Result>(r));
    });
    sampler.begin("host.inventory", 7);
    std::this_thread::sleep_for(std::chrono::milliseconds(550));
    sampler.end();
    std::this_thread::sleep_for(std::chrono::milliseconds(250));  // between checks: nothing
  }
  REQUIRE(got.size() >= 5);
  CHECK(got.size() <= 8);
  for (const auto& r : got) {
    CHECK(r.test == "host.inventory");
    CHECK(r.round_id == 7);
    CHECK(r.rank == 4);
    CHECK(r.entity == Entity{"node", "n1"});
    CHECK(r.extra.at("node").contains("mem_used_pct"));
  }
  CHECK(got.back().metric == "telemetry_summary");
  CHECK(got.back().value == static_cast<double>(got.size() - 1));
  CHECK(got[1].metric == "telemetry");
  CHECK(got[1].value == Approx(0.2).margin(0.05));
}

TEST_CASE("telemetry: a reader stuck in NVML stalls neither the start nor the end of a check") {
  // The runner calls begin() and end() around every check. A reading that hangs (NVML on a sick
  // GPU) used to hold the sampler's lock, and begin() and end() read too, so every check waited.
  struct StuckReader : telemetry::Reader {
    std::atomic<bool> stuck{false};
    std::atomic<int> slow_ms{0};  // a reader that works but takes its time, as NVML over 8 GPUs
    StuckReader() : Reader("/proc", "/nonexistent", nullptr) {}
    telemetry::Sample read(double t_s) override {
      std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms.load()));
      if (!stuck) return Reader::read(t_s);
      std::this_thread::sleep_for(std::chrono::seconds(3));
      telemetry::Sample late = Reader::read(t_s);
      late.t_s = -99;  // marks a reading that came back after its check gave up on it
      return late;
    }
  };
  NodeInfo node;
  node.host = "n1";
  std::mutex mu;
  std::vector<Result> got;
  auto reader = std::make_unique<StuckReader>();
  auto* stuck = &reader->stuck;
  auto* slow_ms = &reader->slow_ms;
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  auto summary_of = [&](const std::string& test) {
    std::lock_guard<std::mutex> l(mu);
    for (const auto& r : got)
      if (r.test == test && r.metric == "telemetry_summary") return r.value;
    return -1.0;
  };
  {
    // A 1 s interval: the check's only reading is the last one, taken by end().
    telemetry::Sampler sampler(1.0, std::move(reader), node, [&](const Record& r) {
      std::lock_guard<std::mutex> l(mu);
      got.push_back(std::get<Result>(r));
    });
    sampler.begin("gpu.burn", 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    *stuck = true;  // the check's last reading hangs for 3 s
    auto t0 = Clock::now();
    sampler.end();
    CHECK(seconds(t0) > 1.5);  // it did wait for the reading...
    CHECK(seconds(t0) < 2.6);  // ...kTailWait, not the reader's 3 s (and a second read before)
    CHECK(summary_of("gpu.burn") == 0);  // summarized without it
    t0 = Clock::now();
    sampler.begin("nccl.all_reduce", 2);
    CHECK(seconds(t0) < 0.5);
    *stuck = false;
    *slow_ms = 50;  // so that an end() woken too early would find its last reading not yet in
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    sampler.end();  // waits for the stuck reading to come back, then takes its own last reading
  }
  // The hung reading is dropped, not given to the next check, and the next check still gets its
  // own last reading (a done signal left over from the hung one must not end it with none).
  CHECK(summary_of("nccl.all_reduce") >= 1);
  std::lock_guard<std::mutex> l(mu);
  for (const auto& r : got) CHECK(r.value != -99);
}

TEST_CASE("telemetry: report.html plots each node, bounded and finite, names escaped") {
  coord::TelemetryFigures f;
  const std::string hostile = "<b>n2";
  for (const std::string& host : {std::string("n1"), hostile})
    for (int i = 0; i < 5000; ++i) {
      const nlohmann::json extra = {{"node", {{"cpu_pct", i % 100}, {"mem_used_pct", 40}}},
                                    {"gpus", {{{"power_w", 600 + i % 7}, {"temp_c", 60}, {"sm_mhz", 1980}}}}};
      CHECK(f.add({{"record", "result"}, {"host", host}, {"test", "gpu.burn"}, {"metric", "telemetry"},
                   {"ts", 1000.0 + i}, {"value", double(i)}, {"extra", extra}}));
    }
  f.add({{"record", "result"}, {"host", "n1"}, {"test", "<gpu.burn>"}, {"metric", "telemetry_summary"},
         {"ts", 6000.0}, {"value", 5000}, {"extra", {{"t_s", 5000.0}, {"node", nlohmann::json::object()}}}});
  CHECK(f.add({{"record", "result"}, {"host", "n1"}, {"metric", "telemetry"}, {"ts", "x"}}));  // malformed: skipped
  CHECK_FALSE(f.add({{"record", "result"}, {"host", "n1"}, {"metric", "busbw"}, {"ts", 1.0}}));
  std::ostringstream os;
  coord::telemetry_section(os, f);
  const auto html = os.str();
  CHECK(count(html, "class=\"telemetry-node\"") == 2);
  CHECK(count(html, "data-plot=\"power\"") == 2);
  CHECK(count(html, "data-plot=\"host\"") == 2);
  CHECK(count(html, "<line class=\"check\"") == 4);  // n1's one check, in each of its 4 plots
  CHECK(html.find("&lt;gpu.burn&gt;") != std::string::npos);
  CHECK(html.find("<b>n2") == std::string::npos);
  CHECK(html.find("nan") == std::string::npos);
  CHECK(html.find("inf") == std::string::npos);
  CHECK(html.size() < 200000);  // 10000 readings, a bounded page
  for (const auto& [host, n] : f.nodes)
    for (const auto& [k, s] : n.series) CHECK(s.points.size() < coord::kTelemetryPoints);
  std::ostringstream empty;
  coord::telemetry_section(empty, coord::TelemetryFigures{});
  CHECK(empty.str().find("no telemetry") != std::string::npos);
}
