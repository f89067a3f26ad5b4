#include "coordinator/store.hpp"

#include "common/protocol.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kiln::coord {

namespace fs = std::filesystem;

namespace {

std::string why(int err) { return std::strerror(err); }

[[noreturn]] void fail(const std::string& what, const fs::path& p, int err) {
  throw StorageError("cannot " + what + " " + p.string() + ": " + why(err), err);
}

fs::path dir_of(const fs::path& p) { return p.has_parent_path() ? p.parent_path() : fs::path("."); }

// Writes all of DATA at the descriptor's position; returns 0 or the errno that stopped it.
int write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return ENOSPC;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("open directory", dir, errno);
  // EINVAL: a file system that cannot sync directories (its names are as safe as they get).
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) fail("sync directory", dir, err);
}

void create_run_dir(const fs::path& dir) {
  const fs::path parent = dir_of(dir);
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw std::runtime_error("cannot create output directory " + dir.string() + ": " + ec.message());
  // Exclusive: two campaigns must never share a directory, and an existing one may have been
  // prepared (links, modes) by someone else.
  if (::mkdir(dir.c_str(), 0700) != 0) {
    if (errno == EEXIST)
      throw std::runtime_error("output directory " + dir.string() + " already exists; choose another --out");
    throw std::runtime_error("cannot create output directory " + dir.string() + ": " + why(errno));
  }
  // The umask may have taken the owner's write bit; the campaign needs exactly 0700.
  if (::chmod(dir.c_str(), 0700) != 0)
    throw std::runtime_error("cannot set the mode of " + dir.string() + ": " + why(errno));
  fsync_dir(parent);
}

AppendLog::AppendLog(const fs::path& path) : path_(path) {
  bool created = true;
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd_ < 0 && errno == EEXIST) {
    created = false;
    fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd_ < 0) fail("open", path, errno);
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw std::runtime_error("another kiln is still running this campaign (it holds " + path.string() + ")");
    fail("lock", path, err);
  }
  if (created) fsync_dir(dir_of(path));
  // Count the whole lines and find where the last one ends: a tail after it is a torn write.
  const int rd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (rd < 0) fail("read", path, errno);
  std::uint64_t size = 0;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(rd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(rd);
      fail("read", path, err);
    }
    if (n == 0) break;
    for (ssize_t i = 0; i < n; ++i)
      if (buf[i] == '\n') {
        ++lines_;
        good_ = size + static_cast<std::uint64_t>(i) + 1;
      }
    size += static_cast<std::uint64_t>(n);
  }
  ::close(rd);
  if (size > good_) {
    torn_ = size - good_;
    if (::ftruncate(fd_, static_cast<off_t>(good_)) != 0 || ::fdatasync(fd_) != 0) fail("cut the torn line of", path, errno);
  }
}

AppendLog::~AppendLog() {
  if (fd_ < 0) return;
  if (dirty_) ::fdatasync(fd_);  // best effort: whoever needed it durable called sync()
  ::close(fd_);
}

void AppendLog::append(const std::string& line) { write_block(line + "\n", 1); }

void AppendLog::append_lines(const std::vector<std::string>& lines) {
  std::size_t size = 0;
  for (const auto& l : lines) size += l.size() + 1;
  std::string data;
  data.reserve(size);
  for (const auto& l : lines) data.append(l).push_back('\n');
  write_block(data, lines.size());
}

void AppendLog::write_block(const std::string& data, std::size_t nlines) {
  if (data.empty()) return;
  const ssize_t n = ::write(fd_, data.data(), data.size());
  if (n == static_cast<ssize_t>(data.size())) {
    good_ += data.size();
    lines_ += nlines;
    dirty_ = true;
    return;
  }
  int err = n < 0 ? errno : ENOSPC;
  // A short write says only that the disk stopped taking data; the rest tells us why.
  if (n >= 0) {
    const ssize_t m = ::write(fd_, data.data() + n, data.size() - static_cast<std::size_t>(n));
    if (m < 0) err = errno;
  }
  std::string what = "cannot write " + path_.string() + ": " + why(err);
  if (::ftruncate(fd_, static_cast<off_t>(good_)) != 0)
    what += " (and could not cut the partial line off: " + why(errno) + ")";
  throw StorageError(what, err);
}

void AppendLog::sync() {
  if (!dirty_) return;
  if (::fdatasync(fd_) != 0) fail("sync", path_, errno);
  dirty_ = false;
}

ResultStore::ResultStore(const fs::path& dir) : log_(dir / "results.jsonl") {}

void ResultStore::append(const Record& r) { log_.append(proto::record_line(r)); }

void ResultStore::append_lines(const std::vector<std::string>& lines) {
  for (const auto& l : lines)
    if (l.empty() || l.find('\n') != std::string::npos) throw std::invalid_argument("a record line must be one non-empty line");
  log_.append_lines(lines);
}

void ResultStore::sync() { log_.sync(); }

void write_file_atomic(const fs::path& path, const std::string& content) {
  const fs::path tmp = path.string() + ".tmp";
  // unlink never follows a link: a planted PATH.tmp -> elsewhere is removed, not written through.
  if (::unlink(tmp.c_str()) != 0 && errno != ENOENT) fail("remove", tmp, errno);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) fail("create", tmp, errno);
  int err = write_all(fd, content.data(), content.size());
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());  // leave no half-written file taking the space the next try needs
    fail("write", tmp, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    ::unlink(tmp.c_str());
    fail("rename " + tmp.string() + " to", path, err);
  }
  fsync_dir(dir_of(path));
}

void write_json_atomic(const fs::path& path, const nlohmann::json& j) {
  write_file_atomic(path, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

bool campaign_running(const fs::path& dir) {
  const int fd = ::open((dir / "results.jsonl").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  // A shared lock conflicts with the coordinator's exclusive one (also where flock is emulated
  // with byte-range locks, as on NFS, which need a descriptor open for reading).
  const bool running = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return running;
}

SpaceReserve::SpaceReserve(const fs::path& dir, std::uint64_t bytes) : path_(dir / ".kiln-reserve") {
  ::unlink(path_.c_str());  // one left by a coordinator that was killed
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  held_ = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)) == 0 && ::fsync(fd) == 0;
  ::close(fd);
  if (!held_) ::unlink(path_.c_str());
}

SpaceReserve::~SpaceReserve() { release(); }

void SpaceReserve::release() {
  if (!held_) return;
  ::unlink(path_.c_str());
  held_ = false;
}

}  // namespace kiln::coord
