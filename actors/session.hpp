// The session actor: one per harness session of an embedding harness. It
// turns the harness's events into pool requests and remembers what the
// session holds, so disposal ends it all.
//
//   call started ───▶ acquire (answers when granted)
//   call finished ──▶ release completed     call failed ──▶ release error
//   call aborted ───▶ release aborted
//   background call returned with its child ──▶ bind
//   session idle ───▶ idle (releases the background calls this session runs)
//   session disposed ─▶ end (releases its calls, cancels its waits), quit
//
// Holders are named by the harness's call ids, which must be unique across
// the server (the protocol's names).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "messages/interfaces.hpp"

namespace taskforce {

/// One harness session's events, from the embedding API.
using session_actor = caf::typed_actor<
  /// A subagent call started: (holder, kind, tool, parent, child_session);
  /// answers when the pool grants it.
  caf::replies_to<acquire_atom, std::string, holder_kind, std::string,
                  std::string, std::string>::with<grant>,
  /// A call finished, failed or was aborted; false if it held nothing.
  caf::replies_to<release_atom, std::string, release_reason>::with<bool>,
  /// A background call returned and its child session is known.
  caf::replies_to<bind_atom, std::string, std::string>::with<bool>,
  /// This session went idle: the background calls it runs are released.
  caf::replies_to<caf::idle_atom>::with<std::vector<std::string>>,
  /// This session was disposed: everything it holds or waits for ends.
  caf::replies_to<end_atom>::with<std::vector<std::string>>>;

/// The state of one session actor.
struct session_state {
  /// The actor's name in logs.
  static inline const char* name = "taskforce.session";

  /// The session's name (the pool's `session`).
  std::string session;

  /// The pool.
  pool_actor pool;

  /// The connection whose listener gets this session's events.
  uint64_t connection = 0;

  /// The calls this session made that hold or wait for a permit, by kind.
  std::map<std::string, holder_kind> holders;

  /// The child sessions its background calls run in.
  std::set<std::string> children;

  /// Calls waiting for the pool's grant: failed with shutting_down if the
  /// pool goes away first (a promise the pool held dies unanswered).
  std::map<std::string, caf::typed_response_promise<grant>> waiting;
};

/// The session actor's behaviour.
session_actor::behavior_type
session(session_actor::stateful_pointer<session_state> self, std::string name,
        pool_actor pool, uint64_t connection);

/// Spawns the actor of session `name`; its holders' events go to the
/// listener of `connection`.
session_actor spawn_session(caf::actor_system& sys, std::string name,
                            pool_actor pool, uint64_t connection);

} // namespace taskforce
