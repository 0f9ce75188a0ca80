// The worker: one per task attempt, event-based. It leases the task's
// worktree from the git service (in place: a snapshot of the checkout),
// runs the backend's turns through a process helper, reads each turn's
// report, has the git service list what the attempt brings and judges it
// against the task's scope where it physically lies (HEAD must still be the
// task's branch), runs the gate, steers a failed gate back to the backend as
// a repair turn (up to `run.maxRepairs`, without counting an attempt),
// checks again after the gate, has the verifier review the work when
// `run.verifierEnabled` (in a scratch copy the git service makes and
// removes; a rejection is repaired like a failed gate, no verdict fails the
// attempt), hands mail that arrived meanwhile to the backend as a message
// turn (then checks, gates and verifies again), and reports one
// `attempt_outcome` to the orchestrator. The task's model comes routed
// (src/worker/model_route.hpp) in `worker_task::model`.
//
// It never blocks: processes run in a detached helper (actors/process.hpp:
// the lane it borrows from the run's lanes at its start, or one helper per
// command) whose start, output and exit arrive as messages; git and mail
// requests are answered later. It monitors the git service and its helper:
// either gone means a failed attempt, said so. A `cancel_atom` at any point
// kills the running command through the process registry (a cancel before the
// command started is honoured when it starts) and the attempt ends
// `interrupted` once nothing of it runs. A worker that dies kills its
// command all the same. A worker started on standby (its start still being
// recorded) gets ready and waits for `start_atom` before it changes
// anything.
//
//            cancel (any phase) ──▶ kill the command ──▶ interrupted
//
//   leasing ──▶ taking mail ──▶ turn ──exit──▶ report?
//     (worktree    (answer? ▶      ▲             │ blocked / failed ──▶ outcome
//      or snapshot) answer turn)   │             ▼ done
//                                  │          checking (worker) ──refused──▶
//                                  failed │             │ in scope │ ▼ │ gate
//                                  ──fail, repairs left──▶ repair turn │ │ pass
//                                  (or no gate)  └─none left──▶ failed │ ▼ │
//                                  checking (gate) ──refused──▶ failed │ │ in
//                                  scope │             ▼ └─mail──── taking mail
//                                  ──none──▶ done
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/process.hpp"
#include "messages/interfaces.hpp"
#include "src/config/config.hpp"
#include "src/worker/backend.hpp"

namespace taskforce {

/// Where a worker's mail comes from (the run's mailbox, or whoever stands
/// in for it).
using worker_mail_actor = caf::typed_actor<
  /// From a worker: (run, task) -> the task's undelivered answers and
  /// messages, oldest first; from then on they count as delivered.
  caf::replies_to<take_atom, std::string, std::string>::with<
    std::vector<std::string>, std::vector<std::string>>,
  /// (run, task) -> whether any wait undelivered; nothing is taken. A
  /// worker asks while it waits for something else, and skips the take
  /// when there is none.
  caf::replies_to<check_atom, std::string, std::string>::with<bool>>;

/// One attempt, as the worker gets it.
struct worker_job {
  /// The run.
  std::string run_id;
  /// The task as the backends need it (a copy).
  worker_task task;
  /// The task's `agent:` (a backend or a preset); empty = run.worker.
  std::string agent;
  /// The task's time limit; 0 = run.taskTimeoutMs.
  int64_t timeout_ms = 0;
  /// The attempt number (from the ledger).
  uint64_t attempt = 1;
  /// How many turns the backend ran for the task before this attempt
  /// (the scripted worker counts invocations across attempts).
  uint64_t invocations = 0;
  /// Why the previous attempt failed; empty on the first.
  std::string previous_failure;
  /// The worktree an earlier attempt used, as the ledger knows it.
  std::string known_worktree;
  /// The agent session the task had (the attempt_outcome's `session` of
  /// its last attempt): an answer continues it.
  std::string session;
  /// Start from a clean worktree (freshWorktreeOnRetry).
  bool fresh = false;
  /// The task file, relative to the repository (run.detectCompletion
  /// "checkboxes" reads the task's box there, in the attempt's checkout).
  std::string task_file;
  /// The line of the task's box when the file was parsed (0: unknown).
  size_t task_line = 0;
  /// Repository-relative files the run itself writes (the task file's
  /// boxes, the progress file): their changes are nobody's doing, never
  /// judged against the task's scope.
  std::vector<std::string> run_files;
  /// The first turn is a repair (kind repair): the gate failed on the merge
  /// result (verifyMerged) and the worker fixes it in its worktree, which
  /// now holds that result. Ignored when its kind is not repair.
  turn_input first_repair;
  /// The effective run config.
  run_config cfg;
  /// The repository's top folder.
  std::filesystem::path root;
  /// The `taskforce` executable (for the scripted backend).
  std::string self_exe;
  /// The git service.
  git_actor git;
  /// Receives progress and the outcome.
  caf::actor orchestrator;
  /// The task's mail; a null handle = no mail.
  worker_mail_actor mail;
  /// Starts process helpers; empty = the lane borrowed from `lanes`, or a
  /// helper per command (spawn_process) without lanes.
  process_spawner processes;
  /// The run's lanes (spawn_process_lanes); null = none.
  caf::actor lanes;
  /// The attempt's start is not durable yet: the worker borrows its lane,
  /// asks for mail and (in place) takes the snapshot, then waits for
  /// `start_atom` before it makes a worktree or runs anything. A cancel
  /// meanwhile ends it interrupted.
  bool standby = false;
};

/// Spawns the worker for `job` (event-based). Stop it with `cancel_atom`.
caf::actor spawn_worker(caf::actor_system& sys, worker_job job);

} // namespace taskforce
