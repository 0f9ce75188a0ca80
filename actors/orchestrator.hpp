// The orchestrator: one per run, a shell around the run's pure scheduler
// (src/run/scheduler.hpp). It holds no task states or scheduling rules of
// its own: every event (start, a worker's progress and outcome, a merge's
// end, a pause, an abort, a person's approve/reject/answer/add) goes to the
// scheduler, and the orchestrator carries out the decision.
//
//   event ──▶ scheduler ──▶ decision ──▶ changes ─▶ ledger (group commit)
//                              │                      │ per-change acks
//                              │                      ▼
//                              │        durable: tell the watcher, then the
//                              │        change's `then` (launch, merge)
//                              │        refused: scheduler.refused(ledger's
//                              │        state); the others still go on
//                              │        waits (a managed task reserves its
//                              │        scope): reserved_elsewhere, its
//                              │        start tried again at the next look
//                              ├──▶ now: cancel, merge again, check a hand
//                              │    merge (at once)
//                              └──▶ run change: recorded after the task
//                                   changes it came with
//
// Group commit: one batch is with the ledger at a time; what the decisions
// meanwhile ask for gathers into the next one. A decision's changes always
// travel in one batch (a start: pending -> ready -> running, one
// transaction).
//
// Failures: every request has an error handler, and the ledger, the git
// service and every worker are monitored. A worker that dies without a word
// ended its attempt (failed; interrupted when it was asked to stop). A dead
// git service ends the merges it had (error) and pauses the run. A dead or
// failing ledger pauses the run with the reason: nothing more is recorded
// or acted on, running attempts are interrupted, and the watcher is told
// once they ended. Another process's `taskforce abort` (or a pause it
// recorded) is noticed by a periodic look at the ledger, which also tries
// again the starts that waited for another holder's reservation.
//
// The watcher (the command's actor) receives every durable change as a
// `run_event`, and `(finished_atom, run_state, reason)` once, when the run
// is over for this process and everything it recorded is durable.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "messages/interfaces.hpp"
#include "src/config/config.hpp"
#include "src/plan/graph.hpp"
#include "src/run/scheduler.hpp"
#include "src/run/setup.hpp"

namespace taskforce {

/// A task as a worker attempt gets it: what the task file says and what
/// earlier attempts left.
struct run_task {
  // -- from the task file -----------------------------------------------------
  /// The task's id (`t3`, `cache`, `2`).
  std::string id;
  /// The one-line title.
  std::string title;
  /// The body: the worker's prompt.
  std::string body;
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

  // -- what earlier attempts left ---------------------------------------------
  /// How many times a worker backend ran for the task (turns of every
  /// attempt, repairs included): the scripted worker's step counter.
  uint64_t invocations = 0;
  /// Why the previous attempt failed (told to the next one).
  std::string previous_failure;
  /// The worktree and branch of the last attempt.
  std::string worktree;
  /// `taskforce/<run>/<task>`.
  std::string branch;
  /// The agent session the attempt may continue; empty when none.
  std::string session;
  /// What the attempt's first turn is: a fresh start, or an answer.
  turn_kind first_turn = turn_kind::start;
  /// The first turn's text (the answer; for a repair, the end of the
  /// gate's output); empty for a start.
  std::string turn_text;
  /// A repair's first turn: how the gate ended on the merge result.
  std::string gate_result;
  /// Its start is not durable yet: the worker gets ready (its lane, its
  /// mail, the snapshot of the checkout in place) and changes nothing
  /// before `start_atom` says the start is recorded.
  bool standby = false;
};

/// What the orchestrator remembers of a task (the run layer loads it).
using run::records_of;
using run::rules_of;
using run::task_memory;

/// A started worker: its actor, and a way to stop it that does not depend
/// on its mailbox. The orchestrator stops a worker by sending it
/// `cancel_atom` and then calling `cancel` when set.
struct worker_handle {
  /// The worker actor; it sends (outcome_atom, attempt_outcome) at the end.
  caf::actor actor;
  /// Kills the worker's process group; may be empty.
  std::function<void()> cancel;
};

/// Starts a worker for one attempt of `task` (attempt number, fresh
/// worktree wanted) reporting to `orchestrator`. May throw: the attempt
/// then fails with the reason.
using worker_launcher = std::function<worker_handle(
  const run_task& task, uint64_t attempt, bool fresh, caf::actor orchestrator)>;

/// Starts the merge check of task `task_id` (verifyMerged): an actor that
/// answers one (merge_atom, merge_request) as the git service would, after
/// the gate command `verify` passed on the merge result (see
/// actors/merge_check.hpp). `attempt` is the task's latest attempt.
using merge_checker = std::function<caf::actor(
  const std::string& task_id, uint64_t attempt, const std::string& verify)>;

/// Everything an orchestrator needs.
struct orchestrator_setup {
  /// The run's id (`20261129-170512-ab12`).
  std::string run_id;
  /// The task file as given.
  std::string file;
  /// The effective `run` section (with command-line overrides applied).
  run_config cfg;
  /// The scheduler's rules (see rules_of in src/run/setup.hpp).
  run::rules rules;
  /// The run's tasks, in file order.
  plan::task_graph graph{std::vector<task_spec>{}};
  /// One per task: its state in the ledger, hold and approval.
  std::vector<run::task_record> records;
  /// One per task (or none: empty memories).
  std::vector<task_memory> memory;
  /// The run's usage so far, as the ledger has it (the budget counts from
  /// it).
  run::spend spent;
  /// The ledger service.
  ledger_actor ledger;
  /// The git service.
  git_actor git;
  /// Receives run_event and (finished_atom, run_state, std::string reason).
  caf::actor watcher;
  /// Receives every task's run_event too (the assist writer); may be null.
  caf::actor assist;
  /// Starts workers.
  worker_launcher launch;
  /// Starts merge checks for tasks with a gate that merge from a branch;
  /// empty = the git service merges at once (verifyMerged off).
  merge_checker check_merge;
  /// Start each worker while its start is being recorded, on standby, and
  /// let it go once the start is durable (its preparation overlaps the
  /// ledger's sync); else it starts once the start is durable.
  bool prepare_workers = false;
  /// How often the ledger is asked whether another process paused or
  /// aborted the run.
  std::chrono::milliseconds poll{500};
  /// How long changes that start nothing (a merged task becoming done) may
  /// wait to share the next batch's write while work is still running: one
  /// fsync per finished task instead of two. 0 writes every batch at once.
  std::chrono::milliseconds linger{50};
};

/// Spawns the orchestrator of one run (cooperatively scheduled: it never
/// blocks; workers and services do the blocking work).
orchestrator_actor spawn_orchestrator(caf::actor_system& sys,
                                      orchestrator_setup setup);

} // namespace taskforce
