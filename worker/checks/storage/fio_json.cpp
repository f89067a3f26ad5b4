#include "worker/checks/storage/fio_json.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace kiln::worker::storage {

using json = nlohmann::json;

std::vector<std::string> fio_argv(const FioPlan& p) {
  const std::string depth = std::to_string(p.iodepth);
  std::vector<std::string> a{"fio",
                             "--output-format=json",
                             "--eta=never",
                             "--filename=" + p.file,
                             "--size=" + std::to_string(p.size),
                             "--runtime=" + std::to_string(p.runtime_s) + "s",
                             "--time_based",
                             "--ioengine=" + p.ioengine,
                             std::string("--direct=") + (p.direct ? "1" : "0"),
                             "--iodepth=" + depth};
  const std::string bs = "--bs=" + std::to_string(p.block_size);
  for (const auto& job : {std::vector<std::string>{"--name=seq_write", "--rw=write", bs},
                          std::vector<std::string>{"--name=seq_read", "--stonewall", "--rw=read", bs},
                          std::vector<std::string>{"--name=rand_read", "--stonewall", "--rw=randread",
                                                   "--bs=" + std::to_string(p.rand_block_size)}})
    a.insert(a.end(), job.begin(), job.end());
  return a;
}

namespace {

double number_at(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) throw std::runtime_error("fio output: " + where + " has no number '" + key + "'");
  return it->get<double>();
}

// p50/p99/p99.9 of the completion latency, in microseconds (fio reports nanoseconds).
json percentiles(const json& dir) {
  json out = json::object();
  auto clat = dir.find("clat_ns");
  if (clat == dir.end() || !clat->is_object()) return out;
  auto pct = clat->find("percentile");
  if (pct == clat->end() || !pct->is_object()) return out;
  for (const auto& [key, name] : {std::pair{"50.000000", "p50"}, {"99.000000", "p99"}, {"99.900000", "p99.9"}})
    if (auto v = pct->find(key); v != pct->end() && v->is_number()) out[name] = v->get<double>() / 1000.0;
  return out;
}

FioJob read_job(const json& j) {
  if (!j.is_object()) throw std::runtime_error("fio output: a job is not an object");
  FioJob job;
  auto name = j.find("jobname");
  if (name == j.end() || !name->is_string()) throw std::runtime_error("fio output: a job has no jobname");
  job.name = name->get<std::string>();
  if (auto e = j.find("error"); e != j.end() && e->is_number_integer()) job.error = e->get<int>();
  const char* dir_key = job.name.find("write") != std::string::npos ? "write" : "read";
  auto dir = j.find(dir_key);
  if (dir == j.end() || !dir->is_object())
    throw std::runtime_error("fio output: job " + job.name + " has no '" + dir_key + "' section");
  job.bw_bytes = number_at(*dir, "bw_bytes", "job " + job.name);
  job.iops = number_at(*dir, "iops", "job " + job.name);
  job.clat_us = percentiles(*dir);
  return job;
}

}  // namespace

std::vector<FioJob> parse_fio_jobs(const std::string& text, std::string* version) {
  const auto start = text.find('{');
  if (start == std::string::npos) throw std::runtime_error("fio output: no JSON report");
  const json doc = json::parse(text.begin() + static_cast<std::ptrdiff_t>(start), text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) throw std::runtime_error("fio output: the JSON report is malformed");
  auto jobs = doc.find("jobs");
  if (jobs == doc.end() || !jobs->is_array()) throw std::runtime_error("fio output: no 'jobs' list");
  if (version)
    if (auto v = doc.find("fio version"); v != doc.end() && v->is_string()) *version = v->get<std::string>();
  std::vector<FioJob> out;
  for (const auto& j : *jobs) out.push_back(read_job(j));
  return out;
}

FioFigures fio_figures(const std::string& text) {
  std::string version;
  const auto jobs = parse_fio_jobs(text, &version);
  auto find = [&](const std::string& name) -> const FioJob& {
    for (const auto& j : jobs) {
      if (j.name != name) continue;
      if (j.error == ENOSPC) throw std::runtime_error("disk full: fio job " + name + " ran out of space");
      if (j.error != 0)
        throw std::runtime_error("fio job " + name + " failed: " + std::strerror(j.error) + " (errno " +
                                 std::to_string(j.error) + ")");
      return j;
    }
    throw std::runtime_error("fio output: no job " + name);
  };
  const FioJob& w = find("seq_write");
  const FioJob& r = find("seq_read");
  const FioJob& rr = find("rand_read");
  FioFigures f;
  f.seq_write_gbps = w.bw_bytes / 1e9;
  f.seq_read_gbps = r.bw_bytes / 1e9;
  f.rand_read_kiops = rr.iops / 1000.0;
  f.extra = {{"fio_version", version},
             {"clat_us", {{"seq_write", w.clat_us}, {"seq_read", r.clat_us}, {"rand_read", rr.clat_us}}}};
  return f;
}

}  // namespace kiln::worker::storage
