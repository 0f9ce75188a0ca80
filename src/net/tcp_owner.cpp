#include "src/net/tcp_owner.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

namespace taskforce::net {

namespace {

/// An address as 16 bytes (IPv4 as ::ffff:a.b.c.d) and a port.
struct endpoint {
  std::array<unsigned char, 16> addr{};
  unsigned port = 0;
  bool operator==(const endpoint& o) const {
    return addr == o.addr && port == o.port;
  }
};

std::array<unsigned char, 16> mapped(const unsigned char* v4) {
  std::array<unsigned char, 16> a{};
  a[10] = a[11] = 0xff;
  std::memcpy(a.data() + 12, v4, 4);
  return a;
}

bool wildcard(const std::array<unsigned char, 16>& a) {
  static const std::array<unsigned char, 16> any{};
  unsigned char zero[4] = {0, 0, 0, 0};
  return a == any || a == mapped(zero);
}

std::optional<endpoint> from_sockaddr(const sockaddr_storage& ss) {
  endpoint e;
  if (ss.ss_family == AF_INET) {
    auto& in = reinterpret_cast<const sockaddr_in&>(ss);
    e.addr = mapped(reinterpret_cast<const unsigned char*>(&in.sin_addr));
    e.port = ntohs(in.sin_port);
    return e;
  }
  if (ss.ss_family == AF_INET6) {
    auto& in6 = reinterpret_cast<const sockaddr_in6&>(ss);
    std::memcpy(e.addr.data(), &in6.sin6_addr, 16);
    e.port = ntohs(in6.sin6_port);
    return e;
  }
  return std::nullopt;
}

/// "0100007F:1F90" (IPv4) or 32 hex digits and a port (IPv6), as the
/// tables print them: each group of 8 digits is a 32-bit word in the
/// machine's own byte order.
std::optional<endpoint> parse_endpoint(const std::string& text) {
  auto colon = text.find(':');
  if (colon == std::string::npos || (colon != 8 && colon != 32))
    return std::nullopt;
  unsigned char bytes[16];
  for (size_t g = 0; g < colon / 8; ++g) {
    uint32_t word
      = static_cast<uint32_t>(std::stoul(text.substr(g * 8, 8), nullptr, 16));
    std::memcpy(bytes + g * 4, &word, 4);
  }
  endpoint e;
  if (colon == 8)
    e.addr = mapped(bytes);
  else
    std::memcpy(e.addr.data(), bytes, 16);
  e.port
    = static_cast<unsigned>(std::stoul(text.substr(colon + 1), nullptr, 16));
  return e;
}

/// One line of a socket table.
struct table_entry {
  endpoint local;
  endpoint remote;
  bool listening = false;
  uid_t uid = 0;
  unsigned long inode = 0;
};

std::vector<table_entry> socket_table() {
  std::vector<table_entry> out;
  for (const char* file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line); // the header
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout,
        inode;
      if (!(words >> sl >> local >> remote >> state >> queues >> timer >> retr
            >> uid >> timeout >> inode))
        continue;
      try {
        auto l = parse_endpoint(local);
        auto r = parse_endpoint(remote);
        if (!l || !r)
          continue;
        out.push_back({*l, *r, state == "0A",
                       static_cast<uid_t>(std::stoul(uid)), std::stoul(inode)});
      } catch (const std::exception&) {
        continue;
      }
    }
  }
  return out;
}

/// Whether process `pid` has socket `inode` among its descriptors.
bool holds_socket(pid_t pid, unsigned long inode) {
  auto dir_name = "/proc/" + std::to_string(pid) + "/fd";
  auto* dir = ::opendir(dir_name.c_str());
  if (dir == nullptr)
    return false;
  auto want = "socket:[" + std::to_string(inode) + "]";
  bool found = false;
  while (auto* e = ::readdir(dir)) {
    char target[64];
    auto n = ::readlinkat(::dirfd(dir), e->d_name, target, sizeof target - 1);
    if (n > 0
        && want.compare(0, std::string::npos, target, static_cast<size_t>(n))
             == 0) {
      found = true;
      break;
    }
  }
  ::closedir(dir);
  return found;
}

} // namespace

listener_verdict check_listener(int fd, pid_t pid, std::string& why) {
  sockaddr_storage mine{}, theirs{};
  socklen_t a = sizeof mine, b = sizeof theirs;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &a) != 0
      || ::getpeername(fd, reinterpret_cast<sockaddr*>(&theirs), &b) != 0) {
    why = "the connection has no addresses";
    return listener_verdict::not_found;
  }
  auto me = from_sockaddr(mine);
  auto server = from_sockaddr(theirs);
  if (!me || !server) {
    why = "not a TCP connection";
    return listener_verdict::not_found;
  }
  auto table = socket_table();
  // The far end of this very connection (accepted or still in the queue).
  for (auto& e : table)
    if (e.local == *server && e.remote == *me && e.uid != ::getuid()) {
      why = "the socket there belongs to user " + std::to_string(e.uid);
      return listener_verdict::other_user;
    }
  // The listener that took the connection: one bound to the address itself
  // before one bound to every address.
  const table_entry* listener = nullptr;
  for (auto& e : table)
    if (e.listening && e.local.port == server->port) {
      if (e.local.addr == server->addr) {
        listener = &e;
        break;
      }
      if (wildcard(e.local.addr) && listener == nullptr)
        listener = &e;
    }
  if (listener == nullptr) {
    why = "no listening socket is listed for it";
    return listener_verdict::not_found;
  }
  if (listener->uid != ::getuid()) {
    why = "the socket listening there belongs to user "
          + std::to_string(listener->uid);
    return listener_verdict::other_user;
  }
  struct stat st;
  auto proc = "/proc/" + std::to_string(pid);
  if (pid <= 0 || ::stat(proc.c_str(), &st) != 0 || st.st_uid != ::getuid()
      || !holds_socket(pid, listener->inode)) {
    why = "the socket listening there is not process " + std::to_string(pid)
          + "'s";
    return listener_verdict::other_process;
  }
  return listener_verdict::expected;
}

} // namespace taskforce::net
