// Who listens at the other end of a TCP connection on this machine, from
// the kernel's socket tables (/proc/net/tcp, /proc/net/tcp6) and the
// process's descriptors (/proc/PID/fd).
//
// A client that read an endpoint file checks this before it sends anything
// (its token above all): the file may be left by a server that died, and
// whoever listens on that port now may be another user.
#pragma once

#include <sys/types.h>

#include <string>

namespace taskforce::net {

/// What check_listener found.
enum class listener_verdict {
  /// The listening socket is one of the process's and runs as this user.
  expected,
  /// The socket at the other end belongs to another user.
  other_user,
  /// The listening socket is not one of the process's descriptors (or its
  /// process is not this user's).
  other_process,
  /// The tables do not list the connection's far end or its listener.
  not_found,
};

/// Checks the server side of the connected TCP socket `fd` against `pid`:
/// the connection's far end runs as this user, and the socket listening at
/// its address is one of `pid`'s descriptors. `why` says what did not
/// match.
listener_verdict check_listener(int fd, pid_t pid, std::string& why);

} // namespace taskforce::net
