#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kiln::net {

struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
  std::string str() const { return host + ":" + std::to_string(port); }
};

// Parses "HOST:PORT" (or "[v6]:PORT"). Port 0 is allowed only when allow_zero (listen on any port).
// Throws std::invalid_argument with a one-line message naming the bad text.
Endpoint parse_endpoint(const std::string& text, bool allow_zero = false);

}  // namespace kiln::net
