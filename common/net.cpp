#include "common/net.hpp"

#include <cctype>

namespace kiln::net {

Endpoint parse_endpoint(const std::string& text, bool allow_zero) {
  auto bad = [&](const std::string& why) {
    return std::invalid_argument("bad address '" + text + "': " + why + " (want HOST:PORT)");
  };
  std::string host, port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') throw bad("unclosed '['");
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos) throw bad("no port");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) throw bad("empty host");
  if (port.empty() || port.size() > 5) throw bad("port is not a number");
  for (char c : port)
    if (!std::isdigit(static_cast<unsigned char>(c))) throw bad("port is not a number");
  const long p = std::stol(port);
  if (p > 65535 || (p == 0 && !allow_zero)) throw bad("port out of range");
  return Endpoint{host, static_cast<std::uint16_t>(p)};
}

}  // namespace kiln::net
