// The gate of a published pool: what `serve --publish` offers through CAF's
// middleman instead of the pool itself.
//
//   serve --join ADDR ──remote_actor<gate_actor>──▶ gate ──(join, token)
//                                                      │
//        the pool handle ◀── right token ──────────────┤
//        errc::unauthorized ◀── anything else ─────────┘
//
// CAF's middleman authenticates nobody: any process that reaches the port
// may talk to what is published there. Publishing only the gate means a
// process without the token never receives the pool's handle.
#pragma once

#include <string>

#include <caf/fwd.hpp>

#include "messages/interfaces.hpp"

namespace taskforce {

/// Spawns a gate that hands out `pool` for `token`.
gate_actor spawn_gate(caf::actor_system& sys, pool_actor pool,
                      std::string token);

/// Asks the gate at `host:port` for its pool with `token` (blocking; for
/// `serve --join`). Throws std::runtime_error saying why it cannot: nothing
/// published there, or the token refused ("unauthorized: …").
pool_actor join_pool(caf::actor_system& sys, const std::string& host,
                     uint16_t port, const std::string& token);

} // namespace taskforce
