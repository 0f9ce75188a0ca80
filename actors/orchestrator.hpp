// The orchestrator: one per run. It owns the task graph and every task's
// state, launches ready non-conflicting tasks up to `run.maxConcurrency`
// (priority, then file order), records every transition in the ledger and
// acts on it only after the ledger acknowledged the commit, integrates
// finished work through the git service, and pauses the run with a reason
// when a task fails, blocks, exhausts its attempts or conflicts (unless
// `continueOnError`: the failed task's dependents are skipped and the
// independent work goes on). It finishes when every task is done, skipped
// or failed, or when it is paused and nothing runs any more.
//
//   pending --launch--> running --gate--> verifying --pass--> merging --> done
//      ^                   |                   |                 |
//      +---- retry --------+---- fail ---------+                 +--> conflict
//      |                   |                                          (paused)
//   interrupted <--cancel--+        failed / blocked (paused, or dependents
//                                   skipped with continueOnError)
//
// The watcher (the command's actor) receives every transition as a
// `run_event`, and `(finished_atom, run_state, reason)` once at the end.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "messages/interfaces.hpp"
#include "src/config/config.hpp"

namespace taskforce {

/// One task as the orchestrator schedules it: what the task file says
/// (resolved to indices) and where it stands.
struct run_task {
  // -- from the task file -----------------------------------------------------
  /// The task's id (`t3`, `cache`, `2`).
  std::string id;
  /// The one-line title.
  std::string title;
  /// The body: the worker's prompt.
  std::string body;
  /// 0-based position in the file.
  size_t index = 0;
  /// Higher runs first among ready tasks.
  int64_t priority = 0;
  /// Indices of the tasks this one waits for.
  std::vector<size_t> deps;
  /// Indices of the tasks it may never run beside (files, locks).
  std::vector<size_t> conflicts;
  /// The declared write scope (globs).
  std::vector<std::string> files;
  /// The gate command; empty = no gate.
  std::string verify;
  /// The shell worker's command.
  std::string run;
  /// The worker backend override (`agent:`), empty = run.worker.
  std::string agent;
  /// The model override.
  std::string model;
  /// The task's timeout; 0 = run.taskTimeoutMs.
  int64_t timeout_ms = 0;
  /// Held by a hold pattern: the run pauses when it would start.
  bool held = false;
  /// The matched text of the hold pattern.
  std::string hold_reason;

  // -- where it stands ----------------------------------------------------------
  /// The state (CLI.md task states).
  std::string state = "pending";
  /// Attempts counted against maxAttempts in the current budget.
  uint64_t attempts = 0;
  /// The number of the last attempt started (log folders attempt-N).
  uint64_t attempt_no = 0;
  /// How many times a worker backend ran for the task (rounds of every
  /// attempt, repairs included): the scripted worker's step counter.
  uint64_t invocations = 0;
  /// Why the previous attempt failed (told to the next one).
  std::string previous_failure;
  /// The worktree and branch of the current or last attempt.
  std::string worktree;
  /// `taskforce/<run>/<task>`.
  std::string branch;
  /// The base commit that brought the work in.
  std::string merge_commit;
  /// Why the task is where it is.
  std::string reason;
};

/// A started worker: its actor, and a thread-safe, non-blocking way to kill
/// its process group at once.
struct worker_handle {
  /// The worker actor; it sends (outcome_atom, attempt_outcome) at the end.
  caf::actor actor;
  /// Kills the worker's process group; safe to call more than once.
  std::function<void()> cancel;
};

/// Starts a worker for one attempt of `task` (attempt number, fresh
/// worktree wanted) reporting to `orchestrator`.
using worker_launcher = std::function<worker_handle(
  const run_task& task, uint64_t attempt, bool fresh, caf::actor orchestrator)>;

/// Everything an orchestrator needs.
struct orchestrator_setup {
  /// The run's id (`20261129-170512-ab12`).
  std::string run_id;
  /// The task file as given.
  std::string file;
  /// The effective `run` section (with command-line overrides applied).
  run_config cfg;
  /// The tasks in file order, with the states loaded from the ledger.
  std::vector<run_task> tasks;
  /// The ledger service.
  ledger_actor ledger;
  /// The git service.
  git_actor git;
  /// Receives run_event and (finished_atom, run_state, std::string reason).
  caf::actor watcher;
  /// Starts workers.
  worker_launcher launch;
};

/// Spawns the orchestrator of one run (cooperatively scheduled: it never
/// blocks; workers and services do the blocking work).
orchestrator_actor spawn_orchestrator(caf::actor_system& sys,
                                      orchestrator_setup setup);

/// Whether `state` is final for scheduling (done, skipped, failed).
bool is_final_task_state(const std::string& state);

} // namespace taskforce
