// The TCP transport of `taskforce serve --listen`: an accept loop (a
// detached actor blocking in poll) hands each accepted socket to an
// acceptor broker (CAF's io module), which forks one connection broker per
// harness; each connection broker owns one bridge and moves bytes between
// its socket and the bridge. The acceptor keeps the connections that have
// not said hello within net::hello_limiter's bounds (pushing out the oldest
// silent one, shortening the deadline under pressure), and the accept loop
// pauses instead of spinning when the process is out of descriptors.
// A connection is served only after its first line, a `hello`, presented the
// server's token; any other first line gets `unauthorized` and the
// connection is closed.
// A closed socket closes the bridge (releasing everything the connection
// holds); a finished bridge closes the socket. A connection is read one chunk
// at a time, the next only once its bridge took the last one, so a harness
// that does not read its answers stops being read; the bridge learns from
// CAF's write acknowledgements how much of its output left the process.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

namespace taskforce {

/// Spawns the bridge of one admitted connection whose output goes to the
/// given sink (the connection's broker).
using bridge_factory = std::function<caf::actor(caf::actor sink)>;

/// What a connection must present before it is served.
struct tcp_gate {
  /// The server's token (net::new_token()).
  std::string token;
  /// Where a refused client finds the token (the endpoint file's path);
  /// quoted in the refusal.
  std::string hint;
};

/// A listening server: its acceptor actor and the port it bound.
struct tcp_server {
  /// The broker that accepts connections; exiting it stops listening.
  caf::actor acceptor;
  /// The port bound (the one the system picked for port 0).
  uint16_t port = 0;
};

/// Binds `host:port` (port 0 picks a free one) and serves the protocol on
/// every accepted connection that first says hello with `gate.token`.
/// Throws std::runtime_error "cannot listen on HOST:PORT: <why>" when it
/// cannot bind.
tcp_server start_tcp_server(caf::actor_system& sys, const std::string& host,
                            uint16_t port, bridge_factory make_bridge,
                            tcp_gate gate);

} // namespace taskforce
