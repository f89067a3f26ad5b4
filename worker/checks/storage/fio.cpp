// storage.fio: fio on a node-local and a shared directory (params local_path, shared_path), each in
// its own per-node directory <path>/kiln-fio-<host>-<pid>, removed afterwards. Per path: sequential
// write and read bandwidth and random-read IOPS (fio_json.hpp), O_DIRECT where the file system
// takes it (ramfs does not: buffered, with a note in extra).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "common/command_runner.hpp"
#include "common/text.hpp"
#include "worker/check.hpp"
#include "worker/checks/storage/fio_json.hpp"

namespace kiln::worker::storage {
namespace {

namespace fs = std::filesystem;

// Whether files in `dir` can be opened with O_DIRECT (ramfs, tmpfs before Linux 6.6 and some FUSE file systems refuse).
bool direct_io_works(const fs::path& dir) {
  const auto probe = dir / "direct-probe";
  const int fd = ::open(probe.c_str(), O_CREAT | O_WRONLY | O_DIRECT, 0600);
  if (fd >= 0) ::close(fd);
  std::error_code ec;
  fs::remove(probe, ec);
  return fd >= 0;
}

// The per-node directory, removed with everything fio wrote when the check is done with the path,
// whatever happened (a full disk included).
struct ScratchDir {
  fs::path path;
  ~ScratchDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

class StorageFio final : public Check {
 public:
  std::string key() const override { return "storage.fio"; }

  std::optional<std::string> applicable(const NodeInfo&) const override {
    if (!on_path("fio")) return "fio not found on PATH";
    return std::nullopt;
  }

  void run(Context& ctx, ResultSink& sink) override {
    const auto local = ctx.param<std::string>("local_path", "");
    const auto shared = ctx.param<std::string>("shared_path", "");
    if (local.empty() && shared.empty()) return status(ctx, sink, "path", Status::Skip, "no path given: set local_path and/or shared_path");
    for (const auto& [role, path] : {std::pair{std::string("local"), local}, {std::string("shared"), shared}}) {
      if (path.empty()) status(ctx, sink, role, Status::Skip, role + "_path not set");
      else test_path(ctx, sink, role, path);
    }
  }

 private:
  static Entity node(const Context& ctx) { return {"node", ctx.node.host}; }

  // A result about a path (or the check) that carries no figure: SKIP or ERROR with its reason.
  static void status(const Context& ctx, ResultSink& sink, const std::string& metric, Status st,
                     const std::string& why) {
    Result r;
    r.entity = node(ctx);
    r.metric = metric;
    r.status = st;
    r.reason = why;
    sink.emit(std::move(r));
  }

  static std::optional<std::string> unusable(const std::string& path) {
    std::error_code ec;
    if (!fs::is_directory(path, ec)) return "path " + path + " is missing or not a directory";
    if (::access(path.c_str(), W_OK) != 0) return "path " + path + " is not writable";
    return std::nullopt;
  }

  static std::string engine(const Context& ctx, ProcessRunner& runner) {
    auto e = ctx.param<std::string>("ioengine", "auto");
    if (e != "auto") return e;
    return runner.run({"fio", "--enghelp=libaio"}, std::chrono::seconds(10)).ok() ? "libaio" : "psync";
  }

  void test_path(Context& ctx, ResultSink& sink, const std::string& role, const std::string& path) {
    if (auto why = unusable(path)) return status(ctx, sink, role, Status::Skip, *why);
    ScratchDir dir{fs::path(path) / ("kiln-fio-" + ctx.node.host + "-" + std::to_string(::getpid()))};
    std::error_code ec;
    if (!fs::create_directory(dir.path, ec))
      return status(ctx, sink, role, Status::Error, "cannot create " + dir.path.string() + ": " + ec.message());
    ProcessRunner runner;
    FioPlan plan;
    plan.file = (dir.path / "data").string();
    plan.size = ctx.param<std::int64_t>("size", plan.size);
    plan.runtime_s = ctx.param<double>("runtime_s", plan.runtime_s);
    plan.block_size = ctx.param<std::int64_t>("block_size", plan.block_size);
    plan.rand_block_size = ctx.param<std::int64_t>("rand_block_size", plan.rand_block_size);
    plan.iodepth = ctx.param<int>("iodepth", plan.iodepth);
    plan.ioengine = engine(ctx, runner);
    plan.direct = direct_io_works(dir.path);
    const auto left = std::chrono::milliseconds(static_cast<long long>(ctx.seconds_left() * 1000));
    if (left.count() <= 0) throw DeadlineExceeded("no time left for fio on " + path);
    const auto res = runner.run(fio_argv(plan), left);
    if (res.timed_out) throw DeadlineExceeded("fio on " + path + " ran past the deadline");
    report(ctx, sink, role, path, plan, res);
  }

  static void report(const Context& ctx, ResultSink& sink, const std::string& role, const std::string& path,
                     const FioPlan& plan, const CommandResult& res) {
    // fio repeats its ENOSPC line for every failed I/O: its first one says it all.
    if (const auto at = res.err.find("No space left"); at != std::string::npos) {
      const auto from = res.err.rfind('\n', at);
      const auto line = res.err.substr(from == std::string::npos ? 0 : from + 1, 300);
      return status(ctx, sink, role, Status::Error,
                    "disk full on " + path + " (size " + std::to_string(plan.size) + " bytes): " +
                        printable(line.substr(0, line.find('\n'))));
    }
    if (!res.ok() && res.out.find('{') == std::string::npos)
      return status(ctx, sink, role, Status::Error, "fio failed on " + path + ": " + res.err_tail());
    FioFigures f;
    try {
      f = fio_figures(res.out);
    } catch (const std::exception& e) {
      return status(ctx, sink, role, Status::Error, path + ": " + e.what() + (res.err.empty() ? "" : "; fio: " + res.err_tail()));
    }
    nlohmann::json extra = f.extra;
    extra.update({{"path", path}, {"ioengine", plan.ioengine}, {"direct", plan.direct}, {"size", plan.size},
                  {"runtime_s", plan.runtime_s}, {"iodepth", plan.iodepth}});
    if (!plan.direct) extra["note"] = "O_DIRECT refused by the file system: buffered I/O (page cache) measured";
    for (const auto& [metric, value, unit] : {std::tuple{"seq_read", f.seq_read_gbps, "GB/s"},
                                              {"seq_write", f.seq_write_gbps, "GB/s"},
                                              {"rand_read", f.rand_read_kiops, "kIOPS"}}) {
      Result r;
      r.entity = node(ctx);
      r.metric = role + "_" + metric;
      r.value = value;
      r.unit = unit;
      r.extra = extra;
      if (!(value > 0)) {
        r.status = Status::Fail;
        r.reason = r.metric + " measured nothing on " + path;
      }
      sink.emit(std::move(r));
    }
  }
};

KILN_REGISTER_CHECK(StorageFio);

}  // namespace
}  // namespace kiln::worker::storage
