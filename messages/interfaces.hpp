// Every typed actor interface of taskforce, one signature per line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/timespan.hpp>
#include <caf/typed_actor.hpp>

#include "messages/errors.hpp"
#include "messages/pool.hpp"
#include "messages/type_ids.hpp"

namespace taskforce {

/// Timers for any owner, as delayed messages with generation numbers.
using watchdog_actor = caf::typed_actor<
  /// From an owner: after `delay`, send the owner (expired_atom, id,
  /// generation) unless it re-arms or disarms `id` meanwhile.
  caf::reacts_to<arm_atom, uint64_t, uint64_t, caf::timespan>,
  /// From an owner: forget its timer `id`; a pending expiry is dropped.
  caf::reacts_to<disarm_atom, uint64_t>,
  /// Internal: the delayed message of armed timer number `serial`.
  caf::reacts_to<expired_atom, uint64_t>>;

/// The admission pool of one server: every keyed pool (one per session in
/// `session` mode, one in `global` mode), its permits, FIFO queue and holders.
using pool_actor = caf::typed_actor<
  /// From a bridge or the embedding API: answers when granted, or with
  /// errc::queue_timeout / cancelled / duplicate_holder / shutting_down.
  caf::replies_to<acquire_atom, acquire_request>::with<grant>,
  /// A child without a reservation: granted at once, or errc::pool_full.
  caf::replies_to<adopt_atom, adopt_request>::with<grant>,
  /// Releases a holder (or cancels its wait); false if unknown or released.
  caf::replies_to<release_atom, std::string, release_reason>::with<bool>,
  /// Ties a background holder to its child session; true if released at once
  /// because that child was idle within `idleMemoryMs`.
  caf::replies_to<bind_atom, std::string, std::string>::with<bool>,
  /// A session went idle: releases the background holders it runs.
  caf::replies_to<caf::idle_atom, std::string>::with<std::vector<std::string>>,
  /// A session ended: releases its holders and cancels its waits.
  caf::replies_to<end_atom, std::string>::with<std::vector<std::string>>,
  /// A snapshot of every pool.
  caf::replies_to<status_atom>::with<pool_status>,
  /// A connection opens: events for its holders go to the listener as
  /// (event_atom, pool_event). Answers the connection's id.
  caf::replies_to<attach_atom, caf::actor>::with<uint64_t>,
  /// The connection wants every holder's events from now on.
  caf::replies_to<subscribe_atom, uint64_t>::with<bool>,
  /// The connection closed: releases its holders, cancels its waits.
  caf::replies_to<detach_atom, uint64_t>::with<std::vector<std::string>>,
  /// From the watchdog: the timer (id, generation) is due.
  caf::reacts_to<expired_atom, uint64_t, uint64_t>>;

} // namespace taskforce
