// The monitors actor: one per server, the owner of the monitored processes
// it starts (`monitor.run` … `monitor.kill`). Each process runs under a
// process helper (actors/process.hpp: its own thread, its own process
// group, its output whole in `.taskforce/logs/monitors/<id>.log`); the wake
// pattern is searched in the output on the helper's thread as it arrives.
//
// Contract:
// - Every monitor is a row of the ledger (control::monitor_store) written
//   before its process starts, and its end (done with the exit code,
//   killed, timeout, failed) is written when the helper reports it.
// - At most `max_monitors` live at once (running rows of live owners);
//   more are refused with control_errc::limit ("Monitor limit …").
// - At start, rows left running by an owner that is gone (another server
//   instance, a supervisor no longer holding its lock) become
//   `unavailable`: their processes are not controllable, and kill says so
//   (control_errc::unavailable).
// - wait answers when the monitor ends ("exit"), when its wake pattern
//   matches ("ready"), or when the wait's own time runs out ("timeout"),
//   whichever comes first; a timer carries a generation number, so a stale
//   one is ignored.
// - kill stops the whole process group at once (SIGKILL; descendants that
//   left the group die with the run) and answers once the end is recorded.
//   A time limit sends SIGTERM first, then SIGKILL after `kill_grace`.
// - Subscribers get a monitor_event for every change ("changed") and the
//   first match of the wake pattern ("ready"). After shutdown (exit
//   message), no event goes out and every process is killed.
// - Refusals are caf::errors of category "control" (control_errc) with the
//   message as context.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/process.hpp"
#include "messages/control.hpp"
#include "messages/process.hpp"

namespace taskforce {

/// The monitors actor's interface.
using monitors_actor = caf::typed_actor<
  /// monitor.run: starts a monitor; answers it once its process started.
  caf::replies_to<start_atom, monitor_spec>::with<monitor_info>,
  /// monitor.status of one monitor.
  caf::replies_to<status_atom, std::string>::with<monitor_info>,
  /// monitor.status of all, in creation order.
  caf::replies_to<status_atom>::with<std::vector<monitor_info>>,
  /// monitor.read: id, offset, max bytes (capped at max_output_bytes;
  /// 0 = that cap).
  caf::replies_to<read_atom, std::string, int64_t,
                  int64_t>::with<monitor_output>,
  /// monitor.wait: id, timeout in ms.
  caf::replies_to<wait_atom, std::string, int64_t>::with<monitor_wait_result>,
  /// monitor.kill: ends the whole group; answers the monitor as killed (or
  /// as it ended, when it ended first).
  caf::replies_to<kill_atom, std::string>::with<monitor_info>,
  /// Adds a subscriber of monitor_event messages (removed when it goes).
  caf::reacts_to<subscribe_atom, caf::actor>,
  /// A process helper reports (the sender tells which monitor).
  caf::reacts_to<proc_started>, caf::reacts_to<proc_output>,
  caf::reacts_to<proc_exited>,
  /// A helper's wake pattern matched the output of monitor `id`.
  caf::reacts_to<ready_atom, std::string>,
  /// A wait's timer: id, generation.
  caf::reacts_to<wait_atom, std::string, uint64_t>>;

/// What the monitors actor is told at its start.
struct monitors_setup {
  /// The repository's top folder.
  std::filesystem::path repository;
  /// The ledger file (opened by the actor itself).
  std::filesystem::path ledger;
  /// This server instance: control::new_owner_id("server").
  std::string owner;
  /// control.maxMonitors.
  uint64_t max_monitors = 8;
  /// control.maxOutputBytes: the most a read answers.
  uint64_t max_output_bytes = 65536;
  /// Between SIGTERM and SIGKILL on a kill or timeout.
  std::chrono::milliseconds kill_grace{2000};
  /// Starts the process helpers (spawn_process; a fake in tests).
  process_spawner spawner;
  /// The kill of a helper's process group by its mark
  /// (proc::kill_running; a fake in tests).
  std::function<void(const std::string& mark)> killer;
  /// Wall-clock milliseconds (store::wall_clock_ms; fixed in tests).
  std::function<int64_t()> now_ms;
};

/// Spawns the monitors actor: detached in production (it writes SQLite),
/// on the scheduler when `detached` is false (deterministic tests).
monitors_actor spawn_monitors(caf::actor_system& sys, monitors_setup setup,
                              bool detached = true);

} // namespace taskforce
