// The task lifecycle and the run lifecycle: states, events and the pure
// transition functions that the orchestrator and the ledger both obey.
//
// A task moves only by an event; `transition` is the single table of legal
// moves, and `allowed(from, to)` is derived from it, so the ledger can refuse
// a write that the lifecycle forbids. No CAF, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace taskforce {

/// Where a task is in its lifecycle (docs/running.md).
enum class task_state : uint8_t {
  /// Waiting for its dependencies (or for the run to be resumed).
  pending,
  /// Every dependency is done; waiting for a slot and a free write scope.
  ready,
  /// A worker attempt is running in the task's worktree.
  running,
  /// The worker reported done; the diff-scope check and the gate run.
  verifying,
  /// The gate passed; the git actor commits and merges the branch.
  merging,
  /// Merged (or already done in the task file).
  done,
  /// Attempts exhausted, or a failure that retrying cannot fix.
  failed,
  /// The worker reported that it cannot go on without help.
  blocked,
  /// Not run: a dependency failed under `continueOnError`, or skipped by hand.
  skipped,
  /// Waits for a decision (a hold pattern in its text).
  held,
  /// Passed its gate; kept for review (`autoMerge: false`, a risky label).
  review,
  /// The merge conflicted; branch and worktree are kept.
  conflict,
  /// Its attempt was cut short (Ctrl-C, a crash); the worktree is kept.
  interrupted,
};

/// What happens to a task; each event is legal from a few states only.
enum class task_event : uint8_t {
  /// Every dependency is done: pending -> ready.
  deps_done,
  /// A hold pattern matched: pending|ready -> held.
  hold,
  /// The decision was made: held -> pending.
  release,
  /// A new attempt starts: ready|interrupted -> running.
  start,
  /// The worker reported done: running -> verifying.
  work_done,
  /// The gate failed and the same worker repairs, no attempt counted:
  /// verifying -> running.
  repair,
  /// Scope check and gate passed: verifying -> merging.
  gate_passed,
  /// (Re)try the merge: review|conflict|interrupted -> merging.
  merge,
  /// The branch is in the base (merged now, or found already merged):
  /// merging|review|conflict|interrupted -> done.
  merged,
  /// Kept for review instead of merged: merging -> review.
  keep_for_review,
  /// The merge conflicted or met a dirty main checkout: merging -> conflict.
  conflict,
  /// The attempt failed (report, gate, scope, timeout, git error):
  /// running|verifying|merging -> failed.
  fail,
  /// The worker reported blocked: running|verifying -> blocked.
  block,
  /// The process driving the run stopped mid-attempt:
  /// running|verifying|merging -> interrupted.
  interrupt,
  /// Another attempt (a failed attempt with attempts left, or resume; or a
  /// repair of a merge result that failed its gate):
  /// running|verifying|merging|failed|blocked|conflict|interrupted -> ready.
  retry,
  /// Will not run: pending|ready|held -> skipped.
  skip,
  /// Back to waiting for dependencies (resume after a failure, discard):
  /// ready|failed|blocked|skipped|conflict|interrupted|review -> pending.
  reset,
  /// A person turned it down (`taskforce reject`): review|held -> blocked.
  reject,
};

/// The state of a whole run (`status --json` "run.state").
enum class run_state : uint8_t {
  /// A process drives it (or drove it until it was killed: see
  /// `ledger::mark_interrupted`).
  running,
  /// Stopped with a reason; `resume` continues it.
  paused,
  /// Every task is done, skipped or failed (under `continueOnError`).
  completed,
  /// Stopped for good by `abort`.
  aborted,
};

/// The lowercase name, as `status --json` prints it.
const char* to_string(task_state x);

/// The lowercase name.
const char* to_string(task_event x);

/// The lowercase name, as `status --json` prints it.
const char* to_string(run_state x);

/// Parses a task state name; false (and `out` untouched) when unknown.
bool from_string(std::string_view name, task_state& out);

/// Parses a task event name; false (and `out` untouched) when unknown.
bool from_string(std::string_view name, task_event& out);

/// Parses a run state name; false (and `out` untouched) when unknown.
bool from_string(std::string_view name, run_state& out);

/// The task lifecycle: the state `event` leads to from `from`, or nullopt
/// when the event is not legal there. The diagram in task_state.cpp is this
/// table drawn out.
std::optional<task_state> transition(task_state from, task_event event);

/// Whether some event leads from `from` to `to` (never true for from == to).
bool allowed(task_state from, task_state to);

/// The event that leads from `from` to `to`, or nullopt when none does.
std::optional<task_event> event_between(task_state from, task_state to);

/// Whether a worker attempt is open in this state (running, verifying).
bool in_attempt(task_state x);

/// Whether the task holds its write scope and slot (running, verifying,
/// merging): the scheduler must not start a conflicting task beside it.
bool is_active(task_state x);

/// Whether the task needs nothing more in this run (done, skipped).
bool is_final(task_state x);

/// Whether the task stops the run from completing until someone acts
/// (failed, blocked, conflict, review, held, interrupted).
bool needs_attention(task_state x);

/// The run lifecycle: running -> paused|completed|aborted,
/// paused -> running|completed|aborted; completed and aborted are final.
bool allowed(run_state from, run_state to);

/// Whether the run is over (completed, aborted).
bool is_finished(run_state x);

} // namespace taskforce
