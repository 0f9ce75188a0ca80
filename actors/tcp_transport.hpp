// The TCP transport of `taskforce serve --listen`: an acceptor broker (CAF's
// io module) that forks one connection broker per harness; each connection
// broker owns one bridge and moves bytes between its socket and the bridge.
// A closed socket closes the bridge (releasing everything the connection
// holds); a finished bridge closes the socket. A connection is read one chunk
// at a time, the next only once its bridge took the last one, so a harness
// that does not read its answers stops being read; the bridge learns from
// CAF's write acknowledgements how much of its output left the process.
#pragma once

#include <cstdint>
#include <string>

#include <caf/fwd.hpp>

#include "messages/interfaces.hpp"
#include "src/config/config.hpp"

namespace taskforce {

/// A listening server: its acceptor actor and the port it bound.
struct tcp_server {
  /// The broker that accepts connections; exiting it stops listening.
  caf::actor acceptor;
  /// The port bound (the one the system picked for port 0).
  uint16_t port = 0;
};

/// Binds `host:port` (port 0 picks a free one) and serves the protocol on
/// every accepted connection. Throws std::runtime_error naming the address
/// when it cannot bind.
tcp_server start_tcp_server(caf::actor_system& sys, const std::string& host,
                            uint16_t port, pool_actor pool,
                            const pool_config& cfg);

} // namespace taskforce
