#include "src/net/listen_address.hpp"

#include <cctype>
#include <stdexcept>

namespace taskforce {

const char* const listen_address_forms
  = "HOST:PORT, [IPV6]:PORT, :PORT or PORT, with a port from 0 ... 65535";

namespace {

/// A host name or IPv4 address: letters, digits, '.', '-' and '_'.
bool plain_host(const std::string& host) {
  for (unsigned char c : host)
    if (!std::isalnum(c) && c != '.' && c != '-' && c != '_')
      return false;
  return true;
}

/// The inside of `[...]`: an IPv6 address, perhaps with a zone (`%eth0`).
bool ipv6_host(const std::string& host) {
  if (host.find(':') == std::string::npos)
    return false;
  for (unsigned char c : host)
    if (!std::isalnum(c) && c != ':' && c != '.' && c != '%' && c != '-'
        && c != '_')
      return false;
  return true;
}

/// Parses `text` into `out`; answers what is wrong, or "".
std::string parse(const std::string& text, listen_address& out) {
  std::string port_text = text;
  if (auto colon = text.rfind(':'); colon != std::string::npos) {
    auto host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
      if (!ipv6_host(host))
        return "\"[" + host + "]\" is not an IPv6 address";
    } else if (host.find(':') != std::string::npos) {
      return "an IPv6 address needs brackets";
    } else if (!plain_host(host)) {
      return "the host may hold only letters, digits, '.', '-' and '_'";
    }
    if (!host.empty())
      out.host = host;
  }
  if (port_text.empty())
    return "missing port";
  if (port_text.find_first_not_of("0123456789") != std::string::npos
      || port_text.size() > 5 || std::stoul(port_text) > 65535)
    return "the port must be a number from 0 to 65535";
  out.port = static_cast<uint16_t>(std::stoul(port_text));
  return {};
}

} // namespace

listen_address parse_listen_address(const std::string& text) {
  listen_address result;
  if (auto why = parse(text, result); !why.empty())
    throw std::invalid_argument("bad listen address \"" + text + "\": " + why
                                + " (expected HOST:PORT, e.g. 127.0.0.1:7411)");
  return result;
}

std::string listen_address_problem(const std::string& text) {
  listen_address ignored;
  return parse(text, ignored);
}

} // namespace taskforce
