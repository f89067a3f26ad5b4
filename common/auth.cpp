#include "common/auth.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace kiln::auth {
namespace {
std::string to_hex(const unsigned char* p, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s(n * 2, '0');
  for (std::size_t i = 0; i < n; ++i) {
    s[2 * i] = digits[p[i] >> 4];
    s[2 * i + 1] = digits[p[i] & 0xf];
  }
  return s;
}
}  // namespace

std::string random_hex(std::size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  if (RAND_bytes(buf.data(), static_cast<int>(bytes)) != 1) throw AuthError("RAND_bytes failed");
  return to_hex(buf.data(), bytes);
}

std::string hmac_sha256_hex(const std::string& key, const std::string& message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
            reinterpret_cast<const unsigned char*>(message.data()), message.size(), out, &len))
    throw AuthError("HMAC-SHA256 failed");
  return to_hex(out, len);
}

bool equal_constant_time(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}


std::string create_secret_file(const std::filesystem::path& path) {
  const std::string secret = random_hex(32);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw AuthError("cannot create secret file " + path.string() + ": " + std::strerror(errno));
  const std::string line = secret + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) throw AuthError("cannot write secret file " + path.string());
  return secret;
}

std::string read_secret_file(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw AuthError("cannot read secret file " + path.string() + ": " + std::strerror(errno));
  if (st.st_mode & (S_IRWXG | S_IRWXO))
    throw AuthError("secret file " + path.string() + " is readable by group or others (want mode 0600)");
  std::ifstream in(path);
  std::string secret;
  std::getline(in, secret);
  while (!secret.empty() && (secret.back() == '\r' || secret.back() == ' ')) secret.pop_back();
  if (secret.empty()) throw AuthError("secret file " + path.string() + " is empty");
  return secret;
}

}  // namespace kiln::auth
