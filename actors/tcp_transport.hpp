// The TCP transport of `taskforce serve --listen`: an acceptor broker (CAF's
// io module) that forks one connection broker per harness; each connection
// broker owns one bridge and moves bytes between its socket and the bridge.
// A closed socket closes the bridge (releasing everything the connection
// holds); a finished bridge closes the socket.
#pragma once

#include <cstdint>
#include <string>

#include <caf/fwd.hpp>

#include "messages/interfaces.hpp"
#include "src/config/config.hpp"

namespace taskforce {

/// A listening server: its acceptor actor and the port it bound.
struct tcp_server {
  caf::actor acceptor;
  uint16_t port = 0;
};

/// Binds `host:port` (port 0 picks a free one) and serves the protocol on
/// every accepted connection. Throws std::runtime_error naming the address
/// when it cannot bind.
tcp_server start_tcp_server(caf::actor_system& sys, const std::string& host,
                            uint16_t port, pool_actor pool,
                            const pool_config& cfg);

} // namespace taskforce
