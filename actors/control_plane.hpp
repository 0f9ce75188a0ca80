// The control plane of one repository: managed background tasks (through
// control::bg_service, in the ledger) and monitors (through the monitors
// actor), behind the protocol's bg.* and monitor.* operations.
//
//   bridge ──control_atom──▶ control plane ──bg.*──▶ bg_service (SQLite)
//                               │    ▲            └─ bg.complete with
//                               │    └── validated ── validations: a helper
//                               │                     runs them (own thread)
//                               └──monitor.*──▶ monitors actor
//
// Contract:
// - Detached: it writes SQLite on its own thread; validations run on a
//   helper of their own, so a long validation never holds up other
//   requests (a bg.complete is answered when its validations end).
// - Every change the ledger made durable goes to every subscriber as
//   (event_atom, control_event) "bg.changed"; the monitors' changes as
//   "monitor.changed". A subscriber is dropped when it goes down.
// - At its start, tasks dispatched but never linked are interrupted (the
//   ledger's recovery); every 30 s expired dispatch tokens return their
//   tasks to the queue.
// - A cancel of a task whose validations run stops them.
#pragma once

#include <filesystem>

#include <caf/fwd.hpp>

#include "actors/monitor.hpp"
#include "messages/interfaces.hpp"
#include "src/config/config.hpp"

namespace taskforce {

/// What the control plane is told at its start.
struct control_plane_setup {
  /// The repository's top folder.
  std::filesystem::path repository;
  /// The config's `control` section.
  control_config config;
  /// The monitors of this server; null = monitor.* answer unavailable.
  monitors_actor monitors;
};

/// Spawns the control plane (detached). Throws store::ledger_error when the
/// repository's ledger cannot be opened.
control_plane_actor spawn_control_plane(caf::actor_system& sys,
                                        control_plane_setup setup);

} // namespace taskforce
