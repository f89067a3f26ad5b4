// The campaign directory on disk: created exclusively (0700), its files 0600. results.jsonl and
// journal.jsonl are append-only logs: one write() per line on an O_APPEND descriptor, cut back to
// the last whole line when a write fails, fdatasync'd before anything they hold is acknowledged.
// report.json and campaign.json are replaced atomically through a temporary file that is never a
// link. Every create and rename is followed by an fsync of the directory, so a crash cannot leave
// a synced file without its name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/types.hpp"

namespace kiln::coord {

// The disk refused a write or a sync (ENOSPC, EIO, EDQUOT, ...): the campaign cannot keep what it
// receives, so it stops. what() is one line naming the file and the system's reason.
struct StorageError : std::runtime_error {
  StorageError(const std::string& what, int err) : std::runtime_error(what), error(err) {}
  int error;
};

// An append-only file of lines, opened O_APPEND with no user-space buffer: a line is one write().
// Holds an exclusive flock for its lifetime so that two coordinators never append to one run.
class AppendLog {
 public:
  // Opens (creating it 0600 if absent) and locks PATH. A last line without its newline can only be
  // a write that was never acknowledged (a crash mid-write): it is cut off, and torn_bytes() says
  // how much. Throws StorageError, or std::runtime_error when another process holds the lock.
  explicit AppendLog(const std::filesystem::path& path);
  ~AppendLog();
  AppendLog(const AppendLog&) = delete;
  AppendLog& operator=(const AppendLog&) = delete;

  // Appends one line (a newline is added). On a short or failed write the file is truncated back
  // to where it was, so it never holds half a line, and StorageError is thrown.
  void append(const std::string& line);
  // Appends several lines in one write(), all or none (cut back as above).
  void append_lines(const std::vector<std::string>& lines);
  void sync();  // fdatasync; StorageError when it fails
  std::uint64_t lines() const { return lines_; }        // whole lines in the file
  std::uint64_t torn_bytes() const { return torn_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void write_block(const std::string& data, std::size_t nlines);

  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t good_ = 0;  // file size after the last whole line
  std::uint64_t lines_ = 0;
  std::uint64_t torn_ = 0;
  bool dirty_ = false;
};

// results.jsonl: one Record per line.
class ResultStore {
 public:
  explicit ResultStore(const std::filesystem::path& dir);
  void append(const Record& r);  // written at once; call sync() before acknowledging
  // Records as received from a worker (proto::Records::lines), in one write.
  void append_lines(const std::vector<std::string>& lines);
  void sync();
  std::uint64_t count() const { return log_.lines(); }
  std::uint64_t torn_bytes() const { return log_.torn_bytes(); }

 private:
  AppendLog log_;
};

// Creates DIR exclusively with mode 0700 (its parents as needed, and fsyncs the parent). Throws
// std::runtime_error with one line: DIR exists already, or cannot be created.
void create_run_dir(const std::filesystem::path& dir);
// fsyncs a directory, so that the names created or renamed in it survive a crash.
void fsync_dir(const std::filesystem::path& dir);
// Writes CONTENT to PATH (mode 0600) through PATH.tmp: a stale PATH.tmp is unlinked (never
// followed), the new one is created O_EXCL|O_NOFOLLOW, written, fsync'd, renamed over PATH, and
// the directory fsync'd. Throws StorageError.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);
void write_json_atomic(const std::filesystem::path& path, const nlohmann::json& j);
// True when a coordinator holds DIR's results.jsonl (its lock), i.e. the campaign is running.
bool campaign_running(const std::filesystem::path& dir);

// Disk space set aside at the start of a campaign and given back when the disk fills, so that the
// report can still be written.
class SpaceReserve {
 public:
  SpaceReserve(const std::filesystem::path& dir, std::uint64_t bytes);
  ~SpaceReserve();
  void release();
  bool held() const { return held_; }

 private:
  std::filesystem::path path_;
  bool held_ = false;
};

}  // namespace kiln::coord
