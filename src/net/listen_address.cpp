#include "src/net/listen_address.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
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

std::string to_string(const listen_address& where) {
  auto host = where.host.find(':') != std::string::npos ? "[" + where.host + "]"
                                                        : where.host;
  return host + ":" + std::to_string(where.port);
}

namespace {

std::string lower(std::string text) {
  if (!text.empty())
    text[0]
      = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

/// Binds the first address `where` resolves to that binds (and, with
/// `backlog` above 0, listens); the descriptor, or -1 with `problem` set.
int bind_first(const listen_address& where, int backlog, std::string& problem) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  auto port = std::to_string(where.port);
  if (int rc = ::getaddrinfo(where.host.c_str(), port.c_str(), &hints, &found);
      rc != 0) {
    problem = lower(::gai_strerror(rc));
    return -1;
  }
  problem = "no address";
  int bound = -1;
  for (auto* a = found; a != nullptr && bound < 0; a = a->ai_next) {
    int fd
      = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      problem = lower(std::strerror(errno));
      continue;
    }
    // Reusing an address in TIME_WAIT is no conflict.
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0
        && (backlog <= 0 || ::listen(fd, backlog) == 0)) {
      problem.clear();
      bound = fd;
      break;
    }
    int err = errno;
    ::close(fd);
    problem = err == EADDRINUSE ? "address in use" : lower(std::strerror(err));
  }
  ::freeaddrinfo(found);
  return bound;
}

} // namespace

std::string bind_problem(const listen_address& where) {
  std::string problem;
  int fd = bind_first(where, 0, problem);
  if (fd >= 0)
    ::close(fd);
  return problem;
}

int listen_tcp(const listen_address& where, std::string& problem) {
  return bind_first(where, SOMAXCONN, problem);
}

} // namespace taskforce
