// The lifecycle of a managed background task ("bg task"): its states, their
// names, which moves are legal, and what each state holds.
//
//              prepare, start                  consume
//   queued ─────────────────────▶ ready ──────────────▶ starting
//    │  ▲      token expired       │  │ link                │ link
//    │  └──────────────────────────┘  └──────▶ running ◀────┘
//    │  │                                      │  ▲  │
//    │  │ no dependency failed      complete   │  │  │ complete (done)
//    │  │ or cancelled any more     (blocked)  │  │  ▼
//    ▼  │                                      │  └ checking ──passed──▶ done
//   blocked (by a dependency,               blocked  rejected claim or
//   never dispatched)                          │     failed validation
//                                              │ continue
//   blocked, interrupted, failed ──continue──▶ ready (or queued until a
//                                              slot and the leases are free)
//   running ──child gone (end, reconcile)──▶ interrupted
//   ready, starting ──server restart before the link──▶ interrupted
//   checking ──server restart──▶ running
//   running, blocked, checking, interrupted ──fail──▶ failed
//   any state but done and cancelled ──cancel──▶ cancelled
//
// A task holds a slot (counts towards control.maxConcurrent) while ready,
// starting, running, checking, and blocked after it was dispatched; a task
// blocked by a dependency (never dispatched) holds nothing. Leases (roots
// and locks) are rows of their own (bg_leases): a task gets them with its
// slot and gives them up when done, failed, cancelled (once its child is
// accounted for), interrupted by its child's end, or when its token expires.
// A task interrupted by a restart before its child was linked keeps them
// until it is cancelled or continued.
#pragma once

#include <cstdint>
#include <string_view>

namespace taskforce::control {

/// Where a bg task is in its life (bg_tasks.state).
enum class bg_state : uint8_t {
  /// Waiting for a slot, its roots, its locks or its dependencies; holds
  /// nothing. Handed out only by `start`.
  queued,
  /// Slot and leases taken, a one-use token handed out, no child yet.
  ready,
  /// The token was consumed (a harness's before-hook), the child is not
  /// linked yet.
  starting,
  /// A child session is linked and works.
  running,
  /// The child reported it cannot go on (it keeps slot and leases for a
  /// continuation), or a dependency failed or was cancelled (it holds
  /// nothing then).
  blocked,
  /// A completion is being checked (claimed files, then validations).
  checking,
  /// Completed and checked. Final.
  done,
  /// Given up on; may be continued.
  failed,
  /// Cancelled. Final.
  cancelled,
  /// Its child is gone (or was never linked before a restart); may be
  /// continued.
  interrupted,
};

/// The lowercase name ("queued", …).
const char* to_string(bg_state x);

/// Parses a state name; false (and `out` untouched) when unknown.
bool from_string(std::string_view name, bg_state& out);

/// Whether the lifecycle allows moving from `from` to `to` (see the diagram
/// above; staying in a state is not a move).
bool allowed(bg_state from, bg_state to);

/// Whether a task in `x` is finished for good (done, cancelled).
bool is_final(bg_state x);

/// Whether a task in `x` holds a slot; `dispatched` tells a blocked task
/// that was handed out (it keeps its slot for a continuation) from one
/// blocked by a dependency (it holds nothing).
bool holds_slot(bg_state x, bool dispatched);

/// Whether a child in state `x` may write (only `running`).
bool may_write_in(bg_state x);

} // namespace taskforce::control
