// The watchdog: timers for any owner.
//
// An owner sends (arm_atom, id, generation, delay); when the delay has passed
// the owner receives (expired_atom, id, generation). Arming the same id again
// replaces the timer and `disarm` drops it; `delayed_send` cannot be
// cancelled, so each armed timer has its own serial and a delayed message
// whose serial is no longer armed is ignored. Owners check the generation
// too, so a late expiry can never act on a newer state. The watchdog monitors
// its owners and drops the timers of one that exits; it holds only their
// addresses, so a timer never keeps an owner alive. A delay longer than the
// clock can count saturates at the clock's end: it never fires, instead of
// wrapping into the past and firing at once.
//
//   arm(id) ──▶ armed(serial) ──delay──▶ (expired, id, generation) to owner
//                  │  re-arm / disarm
//                  ▼
//               dropped: its delayed message finds no serial and is ignored
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include <caf/actor_addr.hpp>
#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>

#include "messages/interfaces.hpp"

namespace taskforce {

/// The state of one watchdog.
struct watchdog_state {
  // -- member types -----------------------------------------------------------

  /// One armed timer.
  struct timer {
    /// Who gets the expiry; a weak handle, so an armed timer never keeps
    /// its owner alive.
    caf::actor_addr owner;
    uint64_t id = 0;
    uint64_t generation = 0;
  };

  // -- member variables -------------------------------------------------------

  /// Armed timers by serial.
  std::unordered_map<uint64_t, timer> armed;

  /// (owner, id) -> serial of its armed timer.
  std::map<std::pair<caf::actor_addr, uint64_t>, uint64_t> by_owner;

  /// Owners being monitored.
  std::set<caf::actor_addr> owners;

  /// The serial of the next armed timer.
  uint64_t next_serial = 1;

  /// The actor's name in logs.
  static inline const char* name = "taskforce.watchdog";
};

/// The watchdog's behaviour.
watchdog_actor::behavior_type
watchdog(watchdog_actor::stateful_pointer<watchdog_state> self);

/// Spawns a watchdog.
watchdog_actor spawn_watchdog(caf::actor_system& sys);

} // namespace taskforce
