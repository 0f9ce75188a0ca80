// The run family: what the orchestrator, its workers, the git service and
// the ledger service say to each other while a task list executes.
// Plain structs with value semantics; each lists every field in inspect().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "messages/type_ids.hpp"

namespace taskforce {

/// A task state change, written to the ledger before anyone acts on it.
struct task_transition {
  std::string run_id;
  std::string task_id;
  /// The new state's name (task states of CLI.md: "running", "done", ...).
  std::string state;
  /// The attempt this transition belongs to (0 when none).
  uint64_t attempt = 0;
  /// Why (a failure, the blocked reason, the conflicting paths); may be empty.
  std::string reason;
  /// Extra facts as a JSON object text ({} when none): merge_commit, branch,
  /// worktree, paths, log tails, usage.
  std::string detail = "{}";
};

/// Several task transitions written in one transaction (group commit).
struct transition_batch {
  std::vector<task_transition> changes;
};

/// The answer to a transition_batch: each task's attempt number, in order.
struct batch_acks {
  std::vector<uint64_t> attempts;
};

/// A run state change ("running", "paused", "completed", "aborted").
struct run_transition {
  std::string run_id;
  std::string state;
  std::string reason;
};

/// Where a task's attempt works: its worktree and branch.
struct worktree_lease {
  /// The directory the worker runs in.
  std::string path;
  /// `taskforce/<run>/<task>`, empty when the task runs in place.
  std::string branch;
  /// The worktree was reused (kept from an interrupted attempt, or a clean
  /// merged one reset to the new base).
  bool reused = false;
  /// The commit the branch is at as the attempt begins: it must still
  /// descend from it when the attempt ends.
  std::string start;
};

/// Ask the git service for a worktree for a task's attempt.
struct worktree_request {
  std::string run_id;
  std::string task_id;
  /// Discard what an earlier attempt left (freshWorktreeOnRetry).
  bool fresh = false;
  /// The worktree an earlier attempt used, as the ledger knows it.
  std::string known_path;
};

/// Ask the git service what an attempt brings and whether HEAD stayed.
struct scope_request {
  std::string run_id;
  std::string task_id;
  uint64_t attempt = 0;
  /// The checkout the attempt runs in: its worktree, or the main checkout.
  std::string checkout;
  /// The task's branch; empty when the attempt runs in place (it is then
  /// compared with the snapshot taken before it began).
  std::string branch;
  /// worktree_lease::start.
  std::string start;
};

/// What an attempt brings, or why its HEAD is not where it belongs.
struct scope_report {
  /// Every changed path (repository-relative, sorted): in a worktree, what
  /// the branch changed since it forked from the base plus its working
  /// tree (untracked files included, ignored ones not); in place, what
  /// changed since the snapshot, commits on HEAD included.
  std::vector<std::string> paths;
  /// Empty when HEAD is where it belongs; else what moved, and where the
  /// work was kept (the attempt fails with it).
  std::string moved;
};

/// How a merge of a task's branch into the base ended.
enum class merge_status : uint8_t {
  /// A new merge commit on the base brought the branch in.
  merged,
  /// The branch tip was already reachable from the base.
  already_merged,
  /// Nothing to merge: the task changed nothing.
  empty,
  /// The merge conflicts; `paths` name the files.
  conflict,
  /// The main checkout has tracked changes; `paths` name the files.
  dirty,
  /// Anything else (libgit2 error); `message` says what.
  error,
};

/// Ask the git service to integrate a task's work into the base branch.
struct merge_request {
  std::string run_id;
  std::string task_id;
  std::string title;
  std::string worktree;
  std::string branch;
  /// Remove the worktree and branch once merged (cleanupWorktrees).
  bool cleanup = true;
  /// The task's write scope: what an in-place task (no branch) commits.
  std::vector<std::string> scope;
};

/// The answer to a merge_request.
struct merge_outcome {
  merge_status status = merge_status::error;
  /// The base commit that brought the task's work in (merged, already_merged).
  std::string merge_commit;
  std::vector<std::string> paths;
  std::string message;
};

/// How one attempt of a task ended.
enum class attempt_status : uint8_t {
  /// Work done, diff in scope, gate passed: ready to integrate.
  done,
  /// The worker reported blocked.
  blocked,
  /// The worker, the scope check or the gate failed.
  failed,
  /// Cancelled (Ctrl-C, abort): does not count as an attempt.
  interrupted,
};

/// A worker's final word to the orchestrator.
struct attempt_outcome {
  std::string task_id;
  uint64_t attempt = 0;
  attempt_status status = attempt_status::failed;
  /// Why it failed or blocked; the worker's summary when done.
  std::string reason;
  /// The worker's (or the gate's) exit code, -1 when killed or never run.
  int64_t exit_code = -1;
  std::string worktree;
  std::string branch;
  /// Gate repairs performed inside this attempt.
  uint64_t repairs = 0;
  /// Times the backend was started in this attempt.
  uint64_t rounds = 0;
  /// The tail of the worker's and the gate's output.
  std::string tail;
  /// Usage reported by the worker.
  uint64_t input_tokens = 0;
  uint64_t output_tokens = 0;
  double cost_usd = 0;
};

/// A worker's progress: its phase changed ("running", "verifying",
/// "repairing").
struct attempt_progress {
  std::string task_id;
  uint64_t attempt = 0;
  std::string phase;
  std::string detail;
  /// Set once the worktree is leased (phase "running").
  std::string worktree;
  std::string branch;
};

/// What a watcher of the run (live table, --events) is told.
struct run_event {
  /// Milliseconds since the epoch.
  int64_t time_ms = 0;
  std::string run_id;
  /// Empty for a run-level event.
  std::string task_id;
  std::string title;
  std::string state;
  uint64_t attempt = 0;
  std::string reason;
};

inline const char* to_string(merge_status x) {
  switch (x) {
    case merge_status::merged: return "merged";
    case merge_status::already_merged: return "already_merged";
    case merge_status::empty: return "empty";
    case merge_status::conflict: return "conflict";
    case merge_status::dirty: return "dirty";
    case merge_status::error: return "error";
  }
  return "unknown";
}

inline const char* to_string(attempt_status x) {
  switch (x) {
    case attempt_status::done: return "done";
    case attempt_status::blocked: return "blocked";
    case attempt_status::failed: return "failed";
    case attempt_status::interrupted: return "interrupted";
  }
  return "unknown";
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_transition& x) {
  return f(caf::meta::type_name("taskforce.task_transition"), x.run_id,
           x.task_id, x.state, x.attempt, x.reason, x.detail);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, transition_batch& x) {
  return f(caf::meta::type_name("taskforce.transition_batch"), x.changes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_acks& x) {
  return f(caf::meta::type_name("taskforce.batch_acks"), x.attempts);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_transition& x) {
  return f(caf::meta::type_name("taskforce.run_transition"), x.run_id, x.state,
           x.reason);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worktree_lease& x) {
  return f(caf::meta::type_name("taskforce.worktree_lease"), x.path, x.branch,
           x.reused, x.start);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scope_request& x) {
  return f(caf::meta::type_name("taskforce.scope_request"), x.run_id,
           x.task_id, x.attempt, x.checkout, x.branch, x.start);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scope_report& x) {
  return f(caf::meta::type_name("taskforce.scope_report"), x.paths, x.moved);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worktree_request& x) {
  return f(caf::meta::type_name("taskforce.worktree_request"), x.run_id,
           x.task_id, x.fresh, x.known_path);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, merge_request& x) {
  return f(caf::meta::type_name("taskforce.merge_request"), x.run_id,
           x.task_id, x.title, x.worktree, x.branch, x.cleanup, x.scope);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, merge_outcome& x) {
  return f(caf::meta::type_name("taskforce.merge_outcome"), x.status,
           x.merge_commit, x.paths, x.message);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, attempt_outcome& x) {
  return f(caf::meta::type_name("taskforce.attempt_outcome"), x.task_id,
           x.attempt, x.status, x.reason, x.exit_code, x.worktree, x.branch, x.repairs, x.rounds,
           x.tail, x.input_tokens, x.output_tokens, x.cost_usd);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, attempt_progress& x) {
  return f(caf::meta::type_name("taskforce.attempt_progress"), x.task_id,
           x.attempt, x.phase, x.detail, x.worktree, x.branch);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_event& x) {
  return f(caf::meta::type_name("taskforce.run_event"), x.time_ms, x.run_id,
           x.task_id, x.title, x.state, x.attempt, x.reason);
}

inline bool operator==(const task_transition& x, const task_transition& y) {
  return x.run_id == y.run_id && x.task_id == y.task_id && x.state == y.state
         && x.attempt == y.attempt && x.reason == y.reason
         && x.detail == y.detail;
}

inline bool operator==(const scope_report& x, const scope_report& y) {
  return x.paths == y.paths && x.moved == y.moved;
}

inline bool operator==(const merge_outcome& x, const merge_outcome& y) {
  return x.status == y.status && x.merge_commit == y.merge_commit
         && x.paths == y.paths && x.message == y.message;
}

inline bool operator==(const attempt_outcome& x, const attempt_outcome& y) {
  return x.task_id == y.task_id && x.attempt == y.attempt
         && x.status == y.status && x.reason == y.reason;
}

inline bool operator==(const run_event& x, const run_event& y) {
  return x.run_id == y.run_id && x.task_id == y.task_id && x.state == y.state
         && x.attempt == y.attempt && x.reason == y.reason;
}

} // namespace taskforce
