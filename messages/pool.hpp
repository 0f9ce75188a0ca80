// The pool family: admission requests, grants, events and status snapshots.
// Plain structs with value semantics; each lists every field in inspect().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "messages/type_ids.hpp"

namespace taskforce {

/// Whether a subagent call blocks its caller (foreground) or returns at once
/// and runs on in a child session (background).
enum class holder_kind : uint8_t { foreground, background };

/// Why a holder let go of its permit (or its wait).
enum class release_reason : uint8_t {
  completed,
  error,
  aborted,
  idle,
  ended,
  disconnected,
};

/// What happened to a holder; see the protocol's events in the README.
enum class pool_event_kind : uint8_t {
  queued,
  started,
  released,
  force_released,
  timed_out,
};

inline const char* to_string(holder_kind x) {
  return x == holder_kind::foreground ? "foreground" : "background";
}

inline const char* to_string(release_reason x) {
  switch (x) {
    case release_reason::completed: return "completed";
    case release_reason::error: return "error";
    case release_reason::aborted: return "aborted";
    case release_reason::idle: return "idle";
    case release_reason::ended: return "ended";
    case release_reason::disconnected: return "disconnected";
  }
  return "unknown";
}

inline const char* to_string(pool_event_kind x) {
  switch (x) {
    case pool_event_kind::queued: return "queued";
    case pool_event_kind::started: return "started";
    case pool_event_kind::released: return "released";
    case pool_event_kind::force_released: return "force_released";
    case pool_event_kind::timed_out: return "timed_out";
  }
  return "unknown";
}

/// A request for a permit. `connection` names the owner: every holder of a
/// connection is released when it detaches (0 = not owned by a connection).
struct acquire_request {
  /// The session that asks (the parent agent's session).
  std::string session;
  /// A server-wide unique name for this call.
  std::string holder;
  holder_kind kind = holder_kind::foreground;
  /// The child session running the call, when already known.
  std::string child_session;
  /// The holder that delegates; non-empty means a nested acquire.
  std::string parent;
  /// The tool being called; empty means "always a subagent call".
  std::string tool;
  uint64_t connection = 0;
  /// A detached permit outlives its connection: once granted, a closing
  /// connection leaves it held (a wait is still cancelled).
  bool detach = false;
};

/// A child that runs without a reservation; granted at once or `pool_full`.
struct adopt_request {
  std::string session;
  std::string holder;
  std::string child_session;
  uint64_t connection = 0;
  /// The permit outlives its connection (see acquire_request).
  bool detach = false;
};

/// The answer to a granted acquire or adopt.
struct grant {
  /// False when the tool is not a subagent tool: nothing was counted.
  bool counted = true;
  /// The permit's number; a lent grant carries its parent's permit number.
  uint64_t permit = 0;
  /// How long the request waited in the queue.
  int64_t queued_ms = 0;
  /// True when the permit is borrowed from the blocked parent.
  bool lent = false;
};

/// One event for a holder. Fields that an event kind does not use stay at
/// their defaults; the bridge writes only the fields of its kind.
struct pool_event {
  pool_event_kind kind = pool_event_kind::queued;
  std::string holder;
  std::string session;
  /// The connection that owns the holder (0 = embedded).
  uint64_t connection = 0;
  // queued
  uint64_t position = 0;
  uint64_t of = 0;
  uint64_t running = 0;
  bool background = false;
  // started
  int64_t queued_ms = 0;
  bool lent = false;
  // released
  release_reason reason = release_reason::completed;
  // force_released
  int64_t held_ms = 0;
  // timed_out
  int64_t waited_ms = 0;
};

/// A holder that has a permit, as `status` shows it.
struct running_entry {
  std::string holder;
  std::string session;
  holder_kind kind = holder_kind::foreground;
  int64_t held_ms = 0;
  bool lent = false;
  /// The permit outlives the connection that asked for it.
  bool detached = false;
};

/// A holder that waits, as `status` shows it.
struct queued_entry {
  std::string holder;
  std::string session;
  uint64_t position = 0;
  int64_t waited_ms = 0;
};

/// One pool: a session's in `session` mode, the only one in `global` mode.
struct pool_view {
  std::string key;
  std::vector<running_entry> running;
  std::vector<queued_entry> queued;
};

/// The answer to `status`.
struct pool_status {
  std::string mode;
  uint64_t max_parallel = 0;
  std::vector<pool_view> pools;
};

// -- equality
// ------------------------------------------------------------------

inline bool operator==(const acquire_request& x, const acquire_request& y) {
  return x.session == y.session && x.holder == y.holder && x.kind == y.kind
         && x.child_session == y.child_session && x.parent == y.parent
         && x.tool == y.tool && x.connection == y.connection
         && x.detach == y.detach;
}

inline bool operator==(const adopt_request& x, const adopt_request& y) {
  return x.session == y.session && x.holder == y.holder
         && x.child_session == y.child_session && x.connection == y.connection
         && x.detach == y.detach;
}

inline bool operator==(const grant& x, const grant& y) {
  return x.counted == y.counted && x.permit == y.permit
         && x.queued_ms == y.queued_ms && x.lent == y.lent;
}

inline bool operator==(const pool_event& x, const pool_event& y) {
  return x.kind == y.kind && x.holder == y.holder && x.session == y.session
         && x.connection == y.connection && x.position == y.position
         && x.of == y.of && x.running == y.running
         && x.background == y.background && x.queued_ms == y.queued_ms
         && x.lent == y.lent && x.reason == y.reason && x.held_ms == y.held_ms
         && x.waited_ms == y.waited_ms;
}

inline bool operator==(const running_entry& x, const running_entry& y) {
  return x.holder == y.holder && x.session == y.session && x.kind == y.kind
         && x.held_ms == y.held_ms && x.lent == y.lent
         && x.detached == y.detached;
}

inline bool operator==(const queued_entry& x, const queued_entry& y) {
  return x.holder == y.holder && x.session == y.session
         && x.position == y.position && x.waited_ms == y.waited_ms;
}

inline bool operator==(const pool_view& x, const pool_view& y) {
  return x.key == y.key && x.running == y.running && x.queued == y.queued;
}

inline bool operator==(const pool_status& x, const pool_status& y) {
  return x.mode == y.mode && x.max_parallel == y.max_parallel
         && x.pools == y.pools;
}

// -- inspection
// ----------------------------------------------------------------

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, acquire_request& x) {
  return f(caf::meta::type_name("taskforce.acquire_request"), x.session,
           x.holder, x.kind, x.child_session, x.parent, x.tool, x.connection,
           x.detach);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, adopt_request& x) {
  return f(caf::meta::type_name("taskforce.adopt_request"), x.session, x.holder,
           x.child_session, x.connection, x.detach);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, grant& x) {
  return f(caf::meta::type_name("taskforce.grant"), x.counted, x.permit,
           x.queued_ms, x.lent);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, pool_event& x) {
  return f(caf::meta::type_name("taskforce.pool_event"), x.kind, x.holder,
           x.session, x.connection, x.position, x.of, x.running, x.background,
           x.queued_ms, x.lent, x.reason, x.held_ms, x.waited_ms);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, running_entry& x) {
  return f(caf::meta::type_name("taskforce.running_entry"), x.holder, x.session,
           x.kind, x.held_ms, x.lent, x.detached);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, queued_entry& x) {
  return f(caf::meta::type_name("taskforce.queued_entry"), x.holder, x.session,
           x.position, x.waited_ms);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, pool_view& x) {
  return f(caf::meta::type_name("taskforce.pool_view"), x.key, x.running,
           x.queued);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, pool_status& x) {
  return f(caf::meta::type_name("taskforce.pool_status"), x.mode,
           x.max_parallel, x.pools);
}

} // namespace taskforce
