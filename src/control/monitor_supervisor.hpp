// Monitors without a server: `taskforce monitor run` starts a detached
// supervisor (`taskforce monitor supervise ID`, in a session of its own)
// that owns the monitored process under proc::run (its own process group,
// the time limit, the log, nothing of it left behind), searches the wake
// pattern in its output, and records its start, wake-up and end in the
// ledger. The supervisor holds its owner lock (monitor_store.hpp) for as
// long as it lives, inherited from the command that started it, so no
// moment passes in which its running row looks abandoned; a supervisor
// that is killed leaves its row to become `unavailable`.
//
// The other commands work on the ledger and the log alone: status and read
// look, wait polls, kill signals the supervisor (SIGTERM), which stops the
// whole group and records `killed`.
//
// Everything here blocks (SQLite, processes, polling): for the command
// line, never for an actor.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

#include "src/control/monitor_store.hpp"

namespace taskforce::control {

/// Where a repository's monitors live: its top folder and its ledger.
struct monitor_place {
  std::filesystem::path repository;
  std::filesystem::path ledger;
};

/// Starts `m` under a new detached supervisor (`program` is the taskforce
/// executable), once at most `max_monitors` are live. Returns the monitor
/// once its process started (pid recorded) or ended, waiting at most
/// `settle`. Throws control_error (limit, …) when refused.
monitor_view start_supervised(const monitor_place& place, const new_monitor& m,
                              uint64_t max_monitors, const std::string& program,
                              std::chrono::milliseconds settle
                              = std::chrono::seconds(10));

/// The supervisor's work (`taskforce monitor supervise`): runs monitor
/// `id`, owned by `owner`, whose lock it holds through `lock_fd`, to its
/// end, SIGTERM/SIGINT/SIGHUP meaning kill. Returns the process's exit
/// status for the supervisor (0 when the end was recorded).
int supervise(const monitor_place& place, const std::string& id,
              const std::string& owner, int lock_fd,
              std::chrono::milliseconds kill_grace);

/// Every monitor (rows of owners that went away marked unavailable first).
std::vector<monitor_view> monitor_list(const monitor_place& place);

/// One monitor; throws control_error (not_found).
monitor_view monitor_status(const monitor_place& place, const std::string& id);

/// Waits (polling) until monitor `id` ends ("exit"), its wake pattern
/// matched ("ready"), or `timeout` passed ("timeout"); "unavailable" at
/// once for an unavailable one.
std::pair<std::string, monitor_view>
monitor_wait(const monitor_place& place, const std::string& id,
             std::chrono::milliseconds timeout);

/// Kills a monitor run by a supervisor: its whole group, then waits at
/// most `settle` for the end to be recorded. An ended one is returned as
/// it is. Throws control_error (unavailable) for an unavailable one, or one
/// run by a server (ask the server).
monitor_view monitor_kill(const monitor_place& place, const std::string& id,
                          std::chrono::milliseconds settle
                          = std::chrono::seconds(15));

} // namespace taskforce::control
