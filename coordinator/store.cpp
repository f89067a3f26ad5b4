#include "coordinator/store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace kiln::coord {

namespace fs = std::filesystem;

void prepare_run_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create output directory " + dir.string() + ": " + ec.message());
  if (!fs::is_directory(dir)) throw std::runtime_error("output path " + dir.string() + " is not a directory");
  const fs::path probe = dir / ".kiln-write-test";
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    throw std::runtime_error("output directory " + dir.string() + " is not writable: " + std::strerror(errno));
  ::close(fd);
  fs::remove(probe, ec);
}

ResultStore::ResultStore(const fs::path& dir) : path_(dir / "results.jsonl") {
  f_ = std::fopen(path_.c_str(), "a");
  if (!f_) throw std::runtime_error("cannot open " + path_.string() + ": " + std::strerror(errno));
}

ResultStore::~ResultStore() {
  if (f_) {
    sync();
    std::fclose(f_);
  }
}

void ResultStore::append(const Record& r) {
  const std::string line = nlohmann::json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), f_) != line.size())
    throw std::runtime_error("cannot write " + path_.string() + ": " + std::strerror(errno));
  ++count_;
}

void ResultStore::sync() {
  if (std::fflush(f_) != 0 || ::fdatasync(::fileno(f_)) != 0)
    throw std::runtime_error("cannot flush " + path_.string() + ": " + std::strerror(errno));
}

void write_json_atomic(const fs::path& path, const nlohmann::json& j) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
  }
  int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw std::runtime_error("cannot write " + path.string() + ": " + ec.message());
}

}  // namespace kiln::coord
