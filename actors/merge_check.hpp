// The merge check (run.verifyMerged): one per merge of a task with a gate,
// event-based. Before the base branch moves, the gate runs on the merge
// result: the base as it is now with the task merged, checked out in the
// run's scratch worktree. Only a result that passed is landed, and only
// while the base is still where that result was made from.
//
//   merge_atom ──▶ prepare (git) ──prepared──▶ gate (scratch worktree)
//                     │ anything else                │ pass       │ fail
//                     ▼ (empty, conflict, ...)       ▼            ▼
//                  answered as is            land (git)     adopt (git): the
//                                             │ stale ──▶ prepare again
//                                             ▼ else: answered
//                                                     task's branch moves
//                                                     to the result; answered
//                                                     gate_failed
//
// It answers the one merge_atom request as the git service would, with
// `gate_failed` (the gate's tail in `tail`) when the merge result failed.
// The base is never written before the gate passed. A kill at any instant
// leaves the base untouched or landed (land_merge's compare-and-swap is the
// commit point); the gate process is recorded in the process registry, so
// the next driver kills what a crash left running. The requester is
// monitored: if it goes, the gate is killed and the check ends.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "actors/process.hpp"
#include "messages/interfaces.hpp"

namespace taskforce {

/// What one merge check needs.
struct merge_check_job {
  /// The run and the task.
  std::string run_id;
  std::string task_id;
  /// The task's latest attempt (its log folder, TASKFORCE_ATTEMPT).
  uint64_t attempt = 1;
  /// The gate command.
  std::string verify;
  /// The gate's time limit (run.verifyTimeoutMs).
  int64_t timeout_ms = 600000;
  /// The repository's top folder.
  std::filesystem::path root;
  /// The git service.
  git_actor git;
  /// Starts process helpers; empty = spawn_process.
  process_spawner processes;
};

/// Spawns a merge check; send it (merge_atom, merge_request) once, it
/// answers a merge_outcome and quits.
caf::actor spawn_merge_check(caf::actor_system& sys, merge_check_job job);

/// How many times a merge result is made again because the base moved
/// while its gate ran, before the merge ends in an error. Each such round
/// means another merge landed meanwhile (the run made progress), so the
/// bound only stops a base that someone else moves without end; with many
/// tasks finishing together, a task may be overtaken a few dozen times.
constexpr int merge_check_rounds = 200;

} // namespace taskforce
