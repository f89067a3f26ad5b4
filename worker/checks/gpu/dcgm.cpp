// gpu.dcgm: NVIDIA DCGM's own diagnostic, `dcgmi diag -r <level> -j`, each of its tests' results per
// GPU mapped to kiln results: Pass -> PASS, Fail -> FAIL, Warn -> PASS with DCGM's warning as the
// reason, Skip -> SKIP with DCGM's text as the reason. Output kiln cannot read is ERROR with why.
#include <algorithm>
#include <cctype>

#include "common/command_runner.hpp"
#include "common/text.hpp"
#include "worker/check.hpp"
#include "worker/checks/gpu/common.hpp"
#include "worker/checks/gpu/dcgm_json.hpp"

namespace kiln::worker::gpu {
namespace {

std::string joined(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return join(a, "; ");
}

std::string metric_of(const std::string& test) {
  std::string m;
  for (char c : test) m += c == ' ' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return m;
}

// What an operator reads for one DCGM result.
void judge(const DcgmEntry& e, Result& r) {
  const std::string text = joined(e.warnings, e.info);
  switch (e.outcome) {
    case DcgmOutcome::Pass: break;
    case DcgmOutcome::Fail:
      r.status = Status::Fail;
      r.reason = "DCGM " + e.test + " failed" + (text.empty() ? "" : ": " + text);
      break;
    case DcgmOutcome::Warn: r.reason = "DCGM " + e.test + " warns" + (text.empty() ? "" : ": " + text); break;
    case DcgmOutcome::Skip:
      r.status = Status::Skip;
      r.reason = "DCGM skipped " + e.test + (text.empty() ? "" : ": " + text);
      break;
  }
}

class DcgmDiag final : public Check {
 public:
  std::string key() const override { return "gpu.dcgm"; }

  std::optional<std::string> applicable(const NodeInfo&) const override {
    if (!on_path("dcgmi")) return "dcgmi not found";
    return std::nullopt;
  }

  void run(Context& ctx, ResultSink& sink) override {
    const int level = ctx.param<int>("level", 1);
    const auto left = std::chrono::milliseconds(static_cast<long long>(ctx.seconds_left() * 1000));
    if (left.count() <= 0) throw DeadlineExceeded("no time left for dcgmi diag");
    ProcessRunner runner;
    const auto res = runner.run({"dcgmi", "diag", "-r", std::to_string(level), "-j"}, left);
    if (res.timed_out) throw DeadlineExceeded("dcgmi diag -r " + std::to_string(level) + " ran past the deadline");
    if (res.spawn_failed) return error(ctx, sink, "could not start dcgmi: " + res.err_tail());
    DcgmReport rep;
    try {
      rep = parse_dcgm_diag(res.out);  // dcgmi exits non-zero when a test fails: the JSON says which
    } catch (const std::exception& e) {
      return error(ctx, sink, std::string(e.what()) + " (exit " + std::to_string(res.exit_code) + ")" +
                                  (res.err.empty() ? "" : "; stderr: " + res.err_tail()));
    }
    if (!rep.runtime_error.empty()) return error(ctx, sink, "DCGM could not run the diagnostic: " + rep.runtime_error);
    if (rep.entries.empty()) return error(ctx, sink, "dcgmi diag reported no test results");
    for (const auto& e : rep.entries) emit(ctx, sink, rep, e, level);
  }

 private:
  static void error(const Context& ctx, ResultSink& sink, const std::string& why) {
    Result r;
    r.entity = node_entity(ctx.node.host);
    r.metric = "diag";
    r.status = Status::Error;
    r.reason = why;
    sink.emit(std::move(r));
  }

  static void emit(const Context& ctx, ResultSink& sink, const DcgmReport& rep, const DcgmEntry& e, int level) {
    std::vector<Entity> who;
    for (int g : e.gpus) who.push_back(gpu_entity(ctx.node.host, g));
    if (who.empty()) who.push_back(node_entity(ctx.node.host));
    for (auto& entity : who) {
      Result r;
      r.entity = std::move(entity);
      r.metric = metric_of(e.test);
      r.value = e.outcome == DcgmOutcome::Fail ? 0 : 1;
      r.extra = {{"category", e.category}, {"test", e.test},        {"dcgm_status", e.raw_status},
                 {"warnings", e.warnings}, {"info", e.info},        {"level", level},
                 {"dcgm_version", rep.version}};
      judge(e, r);
      sink.emit(std::move(r));
    }
  }
};

KILN_REGISTER_CHECK(DcgmDiag);

}  // namespace
}  // namespace kiln::worker::gpu
