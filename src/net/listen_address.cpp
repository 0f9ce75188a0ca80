#include "src/net/listen_address.hpp"

#include <stdexcept>

namespace taskforce {

listen_address parse_listen_address(const std::string& text) {
  auto fail = [&](const std::string& why) {
    return std::invalid_argument("bad listen address \"" + text + "\": " + why
                                 + " (expected HOST:PORT, e.g. 127.0.0.1:7411)");
  };
  listen_address result;
  std::string port_text = text;
  if (auto colon = text.rfind(':'); colon != std::string::npos) {
    auto host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
      host = host.substr(1, host.size() - 2);
    else if (host.find(':') != std::string::npos)
      throw fail("an IPv6 address needs brackets");
    if (!host.empty())
      result.host = host;
  }
  if (port_text.empty())
    throw fail("missing port");
  if (port_text.find_first_not_of("0123456789") != std::string::npos
      || port_text.size() > 5)
    throw fail("the port must be a number from 0 to 65535");
  auto port = std::stoul(port_text);
  if (port > 65535)
    throw fail("the port must be a number from 0 to 65535");
  result.port = static_cast<uint16_t>(port);
  return result;
}

} // namespace taskforce
