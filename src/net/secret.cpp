#include "src/net/secret.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <system_error>

namespace fs = std::filesystem;

namespace taskforce::net {

namespace {

/// Closes a descriptor when it goes out of scope.
struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0)
      ::close(fd);
  }
};

std::system_error io_error(int err, const std::string& what) {
  return std::system_error(err, std::generic_category(), what);
}

} // namespace

std::string new_token() {
  unsigned char bytes[32];
  fd_guard in{::open("/dev/urandom", O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0)
    throw io_error(errno, "cannot open /dev/urandom");
  size_t got = 0;
  while (got < sizeof bytes) {
    auto n = ::read(in.fd, bytes + got, sizeof bytes - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      throw io_error(n < 0 ? errno : EIO, "cannot read /dev/urandom");
    got += static_cast<size_t>(n);
  }
  static const char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof bytes);
  for (auto b : bytes) {
    out += hex[b >> 4];
    out += hex[b & 0xf];
  }
  return out;
}

bool same_token(std::string_view given, std::string_view expected) {
  // Every byte of `expected` is looked at whatever `given` holds; the
  // difference accumulates without an early exit.
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    unsigned char g
      = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= static_cast<unsigned char>(
      g ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0 && !expected.empty();
}

void write_private_file(const fs::path& path, const std::string& text) {
  auto tmp = path;
  tmp += ".tmp" + std::to_string(::getpid());
  // A leftover of a killed writer with the same pid goes first; O_EXCL then
  // refuses anything (a symlink included) that appears in between.
  ::unlink(tmp.c_str());
  fd_guard out{::open(
    tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)};
  if (out.fd < 0)
    throw io_error(errno, "cannot write " + path.string());
  bool ok = ::fchmod(out.fd, 0600) == 0;
  size_t done = 0;
  while (ok && done < text.size()) {
    auto n = ::write(out.fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    ok = n > 0;
    if (ok)
      done += static_cast<size_t>(n);
  }
  ok = ok && ::fsync(out.fd) == 0;
  int err = errno;
  ::close(out.fd);
  out.fd = -1;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    err = ok ? errno : err;
    ::unlink(tmp.c_str());
    throw io_error(err, "cannot write " + path.string());
  }
}

std::string private_file_problem(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return {};
  auto mode = st.st_mode & 07777;
  if ((mode & 077) == 0)
    return {};
  char octal[8];
  std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(mode));
  const char* who = (mode & 007) != 0 ? "others" : "its group";
  return path.string() + " is open to " + who + " (mode " + octal
         + "); make it 0600 (chmod 600 " + path.string() + ")";
}

} // namespace taskforce::net
