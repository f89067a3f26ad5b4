// Campaign authentication: every campaign has a random secret in a 0600 file in its run directory.
// A worker proves it knows the secret by answering the coordinator's challenge with an
// HMAC-SHA256; the coordinator proves the same back, so neither side talks to an impostor.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace kiln::auth {

struct AuthError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string random_hex(std::size_t bytes);  // from OpenSSL's RAND_bytes
std::string hmac_sha256_hex(const std::string& key, const std::string& message);
bool equal_constant_time(const std::string& a, const std::string& b);


// Creates the file exclusively with mode 0600 and a fresh 32-byte secret; returns the secret.
std::string create_secret_file(const std::filesystem::path& path);
// Reads a secret; throws AuthError when missing, empty, or readable by group/others.
std::string read_secret_file(const std::filesystem::path& path);

}  // namespace kiln::auth
