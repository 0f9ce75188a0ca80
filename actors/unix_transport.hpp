// The Unix-socket transport of the per-user server (`taskforce serve
// --user`): an acceptor that takes connections on a listening socket and,
// for each, the same bridge as stdio and TCP, fed by a reader and drained by
// a writer on the connection's descriptor (the stdio transport's, which work
// on any descriptor).
//
// Who may connect: the socket sits in a folder only its user may enter, and
// a peer of another user id (SO_PEERCRED) is closed unserved.
//
// Idle exit: with no connection open for `idle_exit`, the acceptor asks the
// pool whether any permit is held or awaited (a detached permit outlives its
// connection); when none is, it stops listening (closing the socket) and
// quits. Anything held restarts the idle clock.
//
//   listening ──(no connection, idle_exit passed)──► ask the pool
//       ▲                                              │       │
//       └───────────── something held or queued ──────┘       │ nothing
//                                                              ▼
//   wake_fd readable (shutdown) ─────────────────────────► closed, quit
#pragma once

#include <chrono>

#include <caf/fwd.hpp>

#include "actors/tcp_transport.hpp"
#include "messages/interfaces.hpp"

namespace taskforce {

/// What a Unix-socket server serves and when it stops.
struct unix_server_setup {
  /// The listening socket (net::listen_unix); the acceptor closes it.
  int listen_fd = -1;
  /// Spawns the bridge of one connection.
  bridge_factory make_bridge;
  /// The pool, asked whether anything is held before an idle exit.
  pool_actor pool;
  /// How long the server stays with no connection and nothing held.
  std::chrono::milliseconds idle_exit{600000};
  /// Becomes readable at shutdown: the acceptor, readers and writers stop.
  int wake_fd = -1;
};

/// Starts the acceptor (detached: it blocks in poll). It quits when it went
/// idle (see above) or `wake_fd` became readable, having closed the
/// listening socket; connections open then are ended by the pool's exit.
caf::actor start_unix_server(caf::actor_system& sys, unix_server_setup setup);

} // namespace taskforce
