// The campaign directory: results.jsonl (append-only, flushed to disk before a result is
// acknowledged), report.json (written atomically), and the files a launcher needs.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "common/types.hpp"

namespace kiln::coord {

class ResultStore {
 public:
  // Opens DIR/results.jsonl for appending. Throws std::runtime_error with a one-line reason.
  explicit ResultStore(const std::filesystem::path& dir);
  ~ResultStore();
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;

  void append(const Record& r);  // buffered; call sync() before acknowledging
  void sync();                   // fflush + fdatasync
  std::size_t count() const { return count_; }

 private:
  std::FILE* f_ = nullptr;
  std::size_t count_ = 0;
  std::filesystem::path path_;
};

// Makes DIR (and parents) and proves it is writable; throws std::runtime_error otherwise.
void prepare_run_dir(const std::filesystem::path& dir);
// Writes JSON to PATH via a temporary file and rename, so a reader never sees half a report.
void write_json_atomic(const std::filesystem::path& path, const nlohmann::json& j);

}  // namespace kiln::coord
