// The pool actor: taskforce's admission pool behind `pool_actor`.
//
// A thin shell over pool::admission (src/pool/admission.hpp), which holds every
// rule. The shell adds what needs an actor:
// - queued acquires wait as response promises and are answered when the core
//   grants, times out or cancels them;
// - connections: `attach` registers a listener and answers a connection id;
//   the pool monitors the listener and treats its exit as `detach`, so a dead
//   harness leaks nothing; events go to the owning connection's listener and,
//   after `subscribe`, to every subscriber, each once;
// - time: the core reads the actor clock in milliseconds; its timers go to a
//   watchdog, whose expiries come back as (expired_atom, id, generation);
// - a warning log on every force-release (maxHoldMs);
// - order: a holder's events reach its connection before its acquire's
//   answer (`queued`, then `started`, then the answer), for every kind of
//   grant: immediate, after a wait, lent or adopted;
// - shutdown: an exit message (other than kill) stops the core first: every
//   holder that held a permit gets `released` (reason disconnected) and every
//   pending acquire fails with errc::shutting_down, then the pool quits. A
//   watchdog it spawned exits with it, so the actor system's destructor never
//   waits on a stored promise.
//
//   acquire ──▶ core ──granted──▶ reply now
//                 │ queued
//                 ▼
//             promise ◀── release / idle / end / detach / expired ──▶ deliver
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/watchdog.hpp"
#include "messages/interfaces.hpp"
#include "src/config/config.hpp"
#include "src/pool/admission.hpp"

namespace taskforce {

/// The state of the pool actor.
struct pool_state {
  // -- constructors -----------------------------------------------------------

  /// Fails every pending acquire with errc::shutting_down.
  ~pool_state();

  // -- member functions -------------------------------------------------------

  /// The actor clock in milliseconds (the test clock in DSL suites).
  int64_t now() const;

  /// Delivers the core's last effects: events, then grants and errors,
  /// warnings and timers.
  void apply();

  /// Sends one event to its connection's listener and every other
  /// subscriber.
  void route(const pool_event& ev);

  /// Forgets a connection's listener.
  void forget(uint64_t connection);

  // -- member variables -------------------------------------------------------

  /// The actor itself.
  pool_actor::stateful_pointer<pool_state> self = nullptr;

  /// Every rule of admission.
  std::unique_ptr<pool::admission> core;

  /// Where timers go.
  watchdog_actor watchdog;

  /// Whether the watchdog was spawned for this pool (and exits with it).
  bool owns_watchdog = false;

  /// Queued acquires by ticket.
  std::unordered_map<uint64_t, caf::typed_response_promise<grant>> waiting;

  /// Connection id -> its listener (the core keeps which connections are
  /// open and which subscribed).
  std::unordered_map<uint64_t, caf::actor> listeners;

  /// The actor's name in logs.
  static inline const char* name = "taskforce.pool";
};

/// The pool's behaviour with `cfg`, its timers on `wd` (named apart from
/// the core's namespace `pool`).
pool_actor::behavior_type
pool_behavior(pool_actor::stateful_pointer<pool_state> self, pool_config cfg,
              watchdog_actor wd, bool owns_watchdog);

/// Spawns a pool with its own watchdog; send it an exit message to stop.
pool_actor spawn_pool(caf::actor_system& sys, const pool_config& cfg);

/// Spawns a pool whose timers go to `wd` (tests step both deterministically).
pool_actor spawn_pool(caf::actor_system& sys, const pool_config& cfg,
                      watchdog_actor wd);

} // namespace taskforce
