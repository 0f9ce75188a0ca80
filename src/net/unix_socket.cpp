#include "src/net/unix_socket.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace fs = std::filesystem;

namespace taskforce::net {

namespace {

/// A socket address for `path`. A path too long for one is spelled through
/// its folder, opened into `dir_fd` (which the caller closes once the
/// address was used); false when even that does not fit.
bool socket_address(const fs::path& path, sockaddr_un& addr, int& dir_fd) {
  addr = sockaddr_un{};
  addr.sun_family = AF_UNIX;
  dir_fd = -1;
  auto text = path.string();
  if (text.size() < sizeof addr.sun_path) {
    std::memcpy(addr.sun_path, text.c_str(), text.size() + 1);
    return true;
  }
  dir_fd = ::open(path.parent_path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0)
    return false;
  auto n
    = std::snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d/%s",
                    dir_fd, path.filename().c_str());
  return n > 0 && static_cast<size_t>(n) < sizeof addr.sun_path;
}

/// Closes a descriptor on scope exit.
struct closer {
  int fd;
  ~closer() {
    if (fd >= 0)
      ::close(fd);
  }
};

} // namespace

int listen_unix(const fs::path& path) {
  sockaddr_un addr;
  int dir_fd;
  bool fits = socket_address(path, addr, dir_fd);
  closer dir{dir_fd};
  if (!fits)
    throw std::runtime_error("cannot listen on " + path.string()
                             + ": the socket's name is too long");
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    throw std::runtime_error("cannot remove the old socket " + path.string()
                             + ": " + std::strerror(errno));
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    throw std::runtime_error(std::string{"cannot create a socket: "}
                             + std::strerror(errno));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0
      || ::chmod(path.c_str(), 0600) != 0 || ::listen(fd, 128) != 0) {
    int err = errno;
    ::close(fd);
    throw std::runtime_error("cannot listen on " + path.string() + ": "
                             + std::strerror(err));
  }
  return fd;
}

int connect_unix(const fs::path& path, int& err, std::string& why) {
  sockaddr_un addr;
  int dir_fd;
  bool fits = socket_address(path, addr, dir_fd);
  closer dir{dir_fd};
  if (!fits) {
    err = dir_fd < 0 && errno != 0 ? errno : ENAMETOOLONG;
    why
      = "cannot reach the socket " + path.string() + ": " + std::strerror(err);
    return -1;
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    err = errno;
    why = std::strerror(err);
    return -1;
  }
  int rc;
  do {
    rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    err = errno;
    why = std::strerror(err);
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  err = 0;
  return fd;
}

std::optional<peer_identity> peer_of(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return std::nullopt;
  return peer_identity{cred.pid, cred.uid};
}

bool peer_is_same_user(int fd) {
  auto peer = peer_of(fd);
  return peer && peer->uid == ::getuid();
}

} // namespace taskforce::net
