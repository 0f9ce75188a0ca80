// Errors that taskforce's actors answer with. Each code maps one-to-one onto
// the protocol's `error.code` string (see to_string).
#pragma once

#include <cstdint>
#include <string>

#include <caf/error.hpp>
#include <caf/message.hpp>

namespace taskforce {

/// Error codes of taskforce; never 0, which CAF reserves for "no error".
enum class errc : uint8_t {
  /// A request is malformed: a missing or mistyped field, an unknown op.
  bad_request = 1,
  /// A queued acquire waited `queueTimeoutMs` without being granted.
  queue_timeout,
  /// No permit is free and the request may not queue (adopt, nested).
  pool_full,
  /// The holder name is already held or queued somewhere on this server.
  duplicate_holder,
  /// A queued acquire was cancelled by release, end or disconnect.
  cancelled,
  /// The server is stopping; nothing new is admitted.
  shutting_down,
  /// The request did not present the server's token.
  unauthorized,
};

/// The protocol's name of an error code, e.g. "queue_timeout".
inline const char* to_string(errc x) {
  switch (x) {
    case errc::bad_request: return "bad_request";
    case errc::queue_timeout: return "queue_timeout";
    case errc::pool_full: return "pool_full";
    case errc::duplicate_holder: return "duplicate_holder";
    case errc::cancelled: return "cancelled";
    case errc::shutting_down: return "shutting_down";
    case errc::unauthorized: return "unauthorized";
  }
  return "unknown";
}

/// The error category name that CAF carries over the wire.
constexpr const char* errc_category = "taskforce";

/// Why a run's actors (orchestrator, ledger, git service) refused or failed
/// a request; never 0. A second category, so the pool's codes keep their
/// numbers.
enum class run_errc : uint8_t {
  /// The lifecycle (or the ledger, which has the task elsewhere) refuses
  /// the move.
  refused_transition = 1,
  /// The ledger could not read or write (SQLite, the disk).
  ledger_io,
  /// The git service failed (libgit2, the repository).
  git_failure,
  /// No such run.
  unknown_run,
  /// No such task in the run.
  unknown_task,
  /// The command does not apply to the task in its state.
  wrong_state,
  /// A task with that id is already part of the run.
  duplicate_task,
  /// No process drives the run.
  no_driver,
  /// The tasks to add are not a valid graph (a cycle, a missing field).
  bad_tasks,
};

/// The name of a run error code, e.g. "wrong_state".
inline const char* to_string(run_errc x) {
  switch (x) {
    case run_errc::refused_transition: return "refused_transition";
    case run_errc::ledger_io: return "ledger_io";
    case run_errc::git_failure: return "git_failure";
    case run_errc::unknown_run: return "unknown_run";
    case run_errc::unknown_task: return "unknown_task";
    case run_errc::wrong_state: return "wrong_state";
    case run_errc::duplicate_task: return "duplicate_task";
    case run_errc::no_driver: return "no_driver";
    case run_errc::bad_tasks: return "bad_tasks";
  }
  return "unknown";
}

/// The category name of run errors.
constexpr char run_errc_category[] = "run";

/// The text a run error carries (its context's string), or "" when none.
inline std::string what_of(const caf::error& err) {
  if (err.context().match_elements<std::string>())
    return err.context().get_as<std::string>(0);
  return {};
}

} // namespace taskforce

CAF_ERROR_CODE_ENUM(taskforce::errc, "taskforce")
CAF_ERROR_CODE_ENUM(taskforce::run_errc, "run")
