// Unix stream sockets at a path, and who is at the other end of one.
//
// A socket's path may be longer than a socket address holds (108 bytes):
// then it is reached through its folder, opened on its own, as
// /proc/self/fd/N/NAME, so a repository deep in the file system still gets
// its socket where it belongs.
//
// Both ends ask the kernel who the other is (SO_PEERCRED): a server serves
// only its own user, and a client talks only to the process it expects.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

namespace taskforce::net {

/// Binds a Unix socket at `path` (removing a stale one first: call it only
/// while no other server may own the path), mode 0600, and listens. Returns
/// the descriptor (close-on-exec, non-blocking). Throws std::runtime_error
/// naming the path and the reason.
int listen_unix(const std::filesystem::path& path);

/// Connects to the socket at `path` (blocking, close-on-exec; the
/// descriptor is made non-blocking once connected). -1 when nothing
/// accepts there, with `err` (an errno) and `why` (a sentence) set.
int connect_unix(const std::filesystem::path& path, int& err, std::string& why);

/// Who is at the other end of a connected Unix socket.
struct peer_identity {
  pid_t pid = 0;
  uid_t uid = 0;
};

/// The other end of the connected Unix socket `fd` (the process that
/// listened, for a client; the one that connected, for a server); nullopt
/// when the kernel does not say.
std::optional<peer_identity> peer_of(int fd);

/// Whether the peer of the connected Unix socket `fd` runs as this user.
bool peer_is_same_user(int fd);

} // namespace taskforce::net
