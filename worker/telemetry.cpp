#include "worker/telemetry.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/stats.hpp"
#include "worker/hw/ib_sysfs.hpp"

namespace kiln::worker::telemetry {

namespace {

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Two decimals: enough for W, C, MHz and MB/s, and it keeps the lines short.
double rounded(double v) { return std::round(v * 100) / 100; }

using Columns = std::map<std::string, std::vector<double>>;

void collect(const Fields& f, Columns& into) {
  for (const auto& [k, v] : f)
    if (std::isfinite(v)) into[k].push_back(v);
}

std::map<std::string, Span> spans(const Columns& cols) {
  std::map<std::string, Span> out;
  for (const auto& [k, xs] : cols) {
    if (xs.empty()) continue;
    const auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
    out[k] = {*lo, stats::median(xs), *hi};
  }
  return out;
}

}  // namespace

Summary summarize(const std::vector<Sample>& samples) {
  Columns node;
  std::vector<Columns> gpus;
  for (const auto& s : samples) {
    collect(s.node, node);
    if (gpus.size() < s.gpus.size()) gpus.resize(s.gpus.size());
    for (std::size_t i = 0; i < s.gpus.size(); ++i) collect(s.gpus[i], gpus[i]);
  }
  Summary out;
  out.samples = static_cast<int>(samples.size());
  out.node = spans(node);
  for (const auto& g : gpus) out.gpus.push_back(spans(g));
  return out;
}

Result sample_record(const Sample& s) {
  Result r;
  r.metric = kSampleMetric;
  r.value = std::round(s.t_s * 10) / 10;
  r.unit = "s";
  nlohmann::json node = nlohmann::json::object(), gpus = nlohmann::json::array();
  for (const auto& [k, v] : s.node)
    if (std::isfinite(v)) node[k] = rounded(v);
  for (const auto& g : s.gpus) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [k, v] : g)
      if (std::isfinite(v)) o[k] = k == "throttle" ? v : rounded(v);  // a bit mask stays whole
    gpus.push_back(std::move(o));
  }
  r.extra = {{"node", std::move(node)}, {"gpus", std::move(gpus)}};
  return r;
}

Result summary_record(const Summary& s, double t_s) {
  Result r;
  r.metric = kSummaryMetric;
  r.value = s.samples;
  r.unit = "samples";
  auto put = [](nlohmann::json& o, const std::string& k, const Span& v) {
    o[k] = k == "throttle" ? nlohmann::json{v[0], v[1], v[2]}
                           : nlohmann::json{rounded(v[0]), rounded(v[1]), rounded(v[2])};
  };
  nlohmann::json node = nlohmann::json::object(), gpus = nlohmann::json::array();
  for (const auto& [k, v] : s.node) put(node, k, v);
  for (const auto& g : s.gpus) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [k, v] : g) put(o, k, v);
    gpus.push_back(std::move(o));
  }
  r.extra = {{"t_s", std::round(t_s * 10) / 10}, {"node", std::move(node)}, {"gpus", std::move(gpus)}};
  return r;
}

Sampler::Sampler(double interval_s, std::unique_ptr<Reader> reader, const NodeInfo& node, Emit emit)
    : interval_s_(interval_s), reader_(std::move(reader)), node_(node), emit_(std::move(emit)) {
  thread_ = std::thread([this] { loop(); });
}

Sampler::~Sampler() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Result Sampler::stamped(Result r) const {
  r.test = test_;
  r.host = node_.host;
  r.rank = node_.world_rank;
  r.entity = {"node", node_.host};
  r.round_id = round_;
  r.ts = gpu::nvml::unix_now();
  return r;
}

void Sampler::take(std::unique_lock<std::mutex>& l, double t_s) {
  const auto gen = gen_;
  l.unlock();
  Sample s = reader_->read(t_s);
  l.lock();
  if (gen != gen_) return;  // read for a check already summarized: too late to count
  emit_(Record(stamped(sample_record(s))));
  if (samples_.size() < kMaxKeptSamples) samples_.push_back(std::move(s));
}

void Sampler::begin(const std::string& test, std::int64_t round_id) {
  std::lock_guard<std::mutex> l(mu_);
  ++gen_;
  test_ = test;
  round_ = round_id;
  samples_.clear();
  t0_ = steady_s();
  baseline_due_ = true;  // the first reading's rates need one before it
  tail_due_ = false;
  active_ = true;
  cv_.notify_all();
}

void Sampler::end() {
  std::unique_lock<std::mutex> l(mu_);
  if (!active_) return;
  active_ = false;
  const double t = steady_s() - t0_;
  // A last reading covers the tail of the check (and is the only one of a check shorter than the
  // interval), unless one was just taken: the thread decides, after any reading it is in the middle
  // of. A reader stuck past kTailWait leaves the summary to the readings already in.
  tail_t_ = t;
  tail_due_ = true;
  tail_done_ = false;
  cv_.notify_all();
  cv_.wait_for(l, kTailWait, [&] { return tail_done_; });
  tail_due_ = false;
  emit_(Record(stamped(summary_record(summarize(samples_), t))));
  samples_.clear();
  ++gen_;
}

void Sampler::loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    if (baseline_due_) {
      baseline_due_ = false;
      l.unlock();
      reader_->read(0);
      l.lock();
      continue;
    }
    if (tail_due_) {
      tail_due_ = false;
      const auto gen = gen_;
      if (samples_.empty() || tail_t_ - samples_.back().t_s >= 0.1) take(l, steady_s() - t0_);
      // Only for the check that asked: a tail that came back after its end() gave up is not the
      // next check's.
      if (gen == gen_) tail_done_ = true;
      cv_.notify_all();
      continue;
    }
    if (!active_) {
      cv_.wait(l, [&] { return stop_ || active_ || baseline_due_ || tail_due_; });
      continue;
    }
    // The next reading falls on the interval grid of this check's start.
    const double t = steady_s() - t0_;
    const double next = (std::floor(t / interval_s_ + 1e-9) + 1) * interval_s_;
    const auto when = std::chrono::steady_clock::now() + std::chrono::duration<double>(next - t);
    const auto gen = gen_;
    if (cv_.wait_until(l, when, [&] { return stop_ || !active_ || gen_ != gen || baseline_due_ || tail_due_; }))
      continue;
    take(l, steady_s() - t0_);
  }
}

std::unique_ptr<Sampler> node_sampler(double interval_s, const NodeInfo& node, Sampler::Emit emit) {
  if (interval_s <= 0 || node.local_rank != 0) return nullptr;
  auto reader = std::make_unique<Reader>("/proc", rdma::ib_root_from_env(), gpu::nvml::shared());
  return std::make_unique<Sampler>(interval_s, std::move(reader), node, std::move(emit));
}

}  // namespace kiln::worker::telemetry
