// storage.fio's pure parts: the fio command line for one path and the reading of fio's JSON output
// (--output-format=json), so both are unit-tested on output captured from real fio runs
// (tests/data/fio).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::worker::storage {

// What one path is tested with: three jobs one after another (stonewall) on one file, so the reads
// find the file the write job laid out: seq_write, seq_read, rand_read.
struct FioPlan {
  std::string file;  // the data file, inside the per-node directory
  std::int64_t size = 256 << 20;
  double runtime_s = 5;
  std::int64_t block_size = 1 << 20;
  std::int64_t rand_block_size = 4096;
  int iodepth = 32;
  std::string ioengine = "libaio";
  bool direct = true;
};
std::vector<std::string> fio_argv(const FioPlan& plan);

// One job of fio's report, in the direction it measured.
struct FioJob {
  std::string name;
  int error = 0;  // fio's errno for the job (28: no space left on the device)
  double bw_bytes = 0;
  double iops = 0;
  nlohmann::json clat_us = nlohmann::json::object();  // completion-latency percentiles: p50, p99, p99.9
};

// The figures of one path, from its three jobs.
struct FioFigures {
  double seq_read_gbps = 0;   // GB/s (1e9 bytes)
  double seq_write_gbps = 0;  // GB/s
  double rand_read_kiops = 0;
  nlohmann::json extra = nlohmann::json::object();  // fio version, per-job latency percentiles
};

// Reads fio's JSON report (text before the first '{', such as fio's notes, is skipped). Throws
// std::runtime_error naming what is missing or malformed.
std::vector<FioJob> parse_fio_jobs(const std::string& text, std::string* version = nullptr);
// The figures from the jobs seq_write, seq_read and rand_read; throws std::runtime_error when one is
// missing or reports an error (a full disk says so).
FioFigures fio_figures(const std::string& text);

}  // namespace kiln::worker::storage
