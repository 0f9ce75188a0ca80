// The durable control plane of managed background tasks ("bg tasks"): task
// contracts, dispatch and continuation tokens, slots, write-root and lock
// leases, dependencies and the completion gate's bookkeeping, in the
// repository's ledger (tables bg_tasks, bg_deps, bg_leases, bg_baseline,
// bg_events; see src/store/schema.cpp). The leases are the one reservation
// table shared with task-list runs (src/store/leases.hpp): a managed task
// waits (queued) while a running run task reserves what it would write, as
// it waits for another managed task.
//
// Contract:
// - A bg_store works on an open ledger's connection, in the thread that
//   uses the ledger (the ledger outlives it); blocking, so never on CAF's
//   cooperative scheduler. Several stores (processes) may share one ledger.
// - Every call that changes something is ONE write transaction (BEGIN
//   IMMEDIATE): it reads, checks, updates each task with a compare-and-swap
//   on its state and version, and appends a bg_events row per change, so a
//   refused call writes nothing and two racing calls never both win.
// - Calls return the changes they made (`bg_change`: the task, the state
//   it left and entered, the task after) so the caller publishes events.
//   One call may change several tasks (an expired token frees its task; a
//   task done unblocks its dependents).
// - Refusals throw control_error (code for the protocol, message naming the
//   task); SQLite failures throw store::ledger_error.
// - Time is the caller's: every call takes `now_ms` (epoch milliseconds).
// - Tokens are 128 random bits in hex, one use, valid `token_lifetime_ms`.
//   An expired dispatch or continuation token returns its task to `queued`
//   (no token, no leases; a continuation's text is kept, so its next token
//   is a continuation again). Expiry happens in prepare, start, consume,
//   link, continue_task and expire; status only reads.
// - The baseline (the files under the task's roots, see snapshot.hpp) is
//   taken when a child is first linked after the task got its leases; it
//   lives as long as the leases (a continuation that keeps the leases keeps
//   it; one that had to take them again takes a new one).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "src/control/bg_state.hpp"
#include "src/control/claim.hpp"
#include "src/control/contract.hpp"
#include "src/control/error.hpp"
#include "src/control/snapshot.hpp"
#include "src/scope/physical.hpp"

namespace taskforce::store {
class ledger;
} // namespace taskforce::store

namespace taskforce::control {

/// How long a dispatch or continuation token is valid: 5 minutes.
constexpr int64_t token_lifetime_ms = 5 * 60 * 1000;

/// The bounds a call works with (from the config section `control`).
struct bg_limits {
  /// Tasks holding a slot at once (control.maxConcurrent).
  uint64_t max_concurrent = 4;
  /// Whether roots of live tasks must not overlap, writes outside a task's
  /// roots are refused, and completions are checked against the recorded
  /// changes (control.enforceWriteRoots).
  bool enforce_write_roots = true;
};

/// What a token starts: the first child, or a continuation.
enum class token_kind { dispatch, continuation };

/// "dispatch" or "continue" (bg_tasks.token_kind).
const char* to_string(token_kind x);

/// A bg task as `bg.status` shows it. The token itself is never part of it
/// (only the answer that hands it out carries it).
struct bg_task {
  /// "bg-<seq>".
  std::string id;
  /// Creation order.
  int64_t seq = 0;
  std::string title;
  std::string agent;
  /// The prompt as prepared (without a continuation request).
  std::string prompt;
  /// The orchestrating session that prepared it.
  std::optional<std::string> session;
  /// Canonical write roots.
  std::vector<std::string> roots;
  std::vector<std::string> locks;
  /// Validation commands, in order.
  std::vector<std::string> validations;
  /// Prerequisite task ids.
  std::vector<std::string> deps;
  bg_state state = bg_state::queued;
  /// Why it is in its state (blocked by what, failed how, …); null when
  /// there is nothing to say.
  std::optional<std::string> reason;
  /// The child session linked to it (the latest, after continuations).
  std::optional<std::string> child_session;
  /// The kind of the outstanding token, when one is handed out and not
  /// used yet (or consumed and not linked yet).
  std::optional<token_kind> token;
  /// When that token expires.
  std::optional<int64_t> token_expires_ms;
  /// The token was consumed, its child is not linked yet.
  bool token_consumed = false;
  /// The text of the last continuation request.
  std::optional<std::string> continuation;
  /// A cancel landed while a dispatched child was unaccounted for.
  bool cancel_requested = false;
  /// Tokens handed out (dispatches and continuations).
  int attempts = 0;
  /// What the child reported at its last completion.
  std::optional<std::string> result;
  /// The files it claimed at its last completion.
  std::vector<std::string> files;
  /// The output tail of the last failed validation.
  std::optional<std::string> output_tail;
  /// The roots and locks it holds now (empty when it holds none).
  std::vector<std::string> leased_roots;
  std::vector<std::string> leased_locks;
  /// Increases with every change of the row (the compare-and-swap).
  int64_t version = 0;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
};

/// One change a call made, to publish (`bg.changed`) after it returns.
struct bg_change {
  std::string task_id;
  /// "created", "state" or "updated" (the bg_events kind).
  std::string kind;
  /// The state it left; none for "created".
  std::optional<bg_state> from;
  /// The state it is in now.
  bg_state to = bg_state::queued;
  /// The task after the change.
  bg_task task;
};

/// A one-use token handed to the harness to start (or continue) a child.
struct dispatch {
  std::string task_id;
  /// 32 hex digits.
  std::string token;
  token_kind kind = token_kind::dispatch;
  int64_t expires_ms = 0;
  /// The prompt to start the child with: the task's prompt, plus
  /// "\n\nContinuation request: <text>" for a continuation.
  std::string prompt;
  std::string title;
  std::string agent;
};

/// What `prepare` did.
struct prepare_result {
  /// The new task (ready or queued).
  bg_task task;
  /// The dispatch, when it claimed a slot at once.
  std::optional<control::dispatch> dispatch;
  std::vector<bg_change> changes;
};

/// What `start` did.
struct start_result {
  /// The dispatch of the task claimed; none when nothing was eligible.
  std::optional<control::dispatch> dispatch;
  /// The task claimed, or (with a given task) that task as it is.
  std::optional<bg_task> task;
  /// Why nothing started, in plain words; empty when something did.
  std::string reason;
  std::vector<bg_change> changes;
};

/// What `consume` or `link` did.
struct link_result {
  bg_task task;
  /// The task was cancelled or interrupted before its child was linked:
  /// the harness must abort the child now (the link accounted for it).
  bool abort_child = false;
  std::vector<bg_change> changes;
};

/// May a child write a path (`bg.may_write`)?
struct write_verdict {
  bool allowed = false;
  /// The task the session is the child of; none for a session no task
  /// knows (allowed: not managed here).
  std::optional<std::string> task_id;
  std::optional<bg_state> state;
  /// Where the path physically lies (repository-relative), when it could
  /// be located.
  std::string path;
  /// Why not ("task bg-1 is cancelled", "… is outside the task's roots
  /// src"), or why yes for an unmanaged session; empty when allowed.
  std::string reason;
};

/// How a child reports its end (`bg.complete`).
enum class completion_status { done, blocked };

/// "done" or "blocked".
const char* to_string(completion_status x);

/// A completion as the child reports it.
struct completion_claim {
  std::string task_id;
  completion_status status = completion_status::done;
  /// What it did, or why it is blocked.
  std::string result;
  /// The files it changed (repository-relative or absolute).
  std::vector<std::string> files;
};

/// What `begin_completion` decided.
struct completion_check {
  /// True: the claim passed the file checks; the task is `checking` (run
  /// `validations`, then call finish_completion), or already `done` when
  /// it has no validations, or `blocked` for a blocked claim. False: it
  /// was rejected and the task is `running` again with `reason`.
  bool accepted = false;
  /// Why it was rejected ("… does not match …"); empty when accepted.
  std::string reason;
  /// Claimed files outside the task's roots.
  std::vector<std::string> outside;
  /// Changed under the roots since the link, but not claimed.
  std::vector<std::string> unclaimed;
  /// Claimed, but not changed.
  std::vector<std::string> unchanged;
  /// The commands to run now, in order (empty unless `checking`).
  std::vector<std::string> validations;
  bg_task task;
  std::vector<bg_change> changes;
};

/// The validations' verdict, for finish_completion.
struct validation_outcome {
  bool passed = false;
  /// Why they failed ("Validation failed: `make test` exited with 2").
  std::string reason;
  /// The tail of the failed command's output.
  std::string tail;
};

/// What `finish_completion` did.
struct finish_result {
  /// done, or running again.
  bg_task task;
  std::vector<bg_change> changes;
};

/// What `continue_task` did.
struct continue_result {
  bg_task task;
  /// The continuation token, when it could take a slot and its leases at
  /// once; none when it was queued (`start` hands it out later).
  std::optional<control::dispatch> dispatch;
  std::vector<bg_change> changes;
};

/// What `cancel` did.
struct cancel_result {
  bg_task task;
  /// The task's leases were given up by this call.
  bool released = false;
  /// The child session to abort (a linked child, or one linked late).
  std::optional<std::string> abort_child;
  /// In plain words: "cancelled", "cancelled; its roots stay reserved
  /// until its dispatched child is linked or the cancel is repeated",
  /// "released".
  std::string message;
  std::vector<bg_change> changes;
};

/// One row of bg_events about a task.
struct bg_event {
  int64_t id = 0;
  std::string task_id;
  std::string kind;
  std::optional<bg_state> from;
  std::optional<bg_state> to;
  /// A JSON object.
  std::string detail_json = "{}";
  int64_t at_ms = 0;
};

/// The bg tasks of one repository's ledger; see the contract above.
class bg_store {
 public:
  /// Works on `db`'s connection for the repository whose top folder is
  /// `repo_top` (it must exist); `db` must outlive the store.
  bg_store(store::ledger& db, const std::filesystem::path& repo_top);

  // -- contracts and dispatch --

  /// Validates `c` (validate_contract, canonical roots, existing deps),
  /// persists it, and claims a slot and its leases at once when it is
  /// eligible (state ready, with a dispatch) or queues it. A refused
  /// contract leaves nothing behind (bad_request).
  prepare_result prepare(const bg_contract& c, const bg_limits& limits,
                         int64_t now_ms);

  /// Expires tokens, then claims the oldest eligible queued task (or
  /// exactly `task_id`, never an older one) and hands out its token (a
  /// continuation when it has a continuation request). Nothing eligible is
  /// no error: `dispatch` is empty and `reason` says why. Throws not_found
  /// for an unknown `task_id`.
  start_result start(const std::optional<std::string>& task_id,
                     const bg_limits& limits, int64_t now_ms);

  /// Consumes a token without linking a child yet (a harness's
  /// before-hook): ready -> starting. A second use is token_used, an
  /// expired one token_expired, an unknown one not_found.
  link_result consume(const std::string& token, int64_t now_ms);

  /// Consumes the token (unless `consume` did) and links `child_session`:
  /// ready/starting -> running, and the baseline is taken. A cancelled or
  /// interrupted task whose child was unaccounted for records the child,
  /// gives up its leases (cancelled) and answers `abort_child`. Refused:
  /// token_used (second use), token_expired, not_found, bad_request (an
  /// empty session, or one linked to another live task).
  link_result link(const std::string& token, const std::string& child_session,
                   int64_t now_ms);

  /// Returns every ready task whose token expired to queued (no token, no
  /// leases) and gives up the leases of cancelled tasks whose unlinked
  /// child can no longer link.
  std::vector<bg_change> expire(int64_t now_ms);

  // -- what is there --

  /// All tasks, oldest first, or the one named (not_found when unknown).
  std::vector<bg_task> status(const std::optional<std::string>& task_id
                              = std::nullopt) const;

  /// The task, or nullopt.
  std::optional<bg_task> find(const std::string& task_id) const;

  /// The events of one task (or all), oldest first, after event `after_id`.
  std::vector<bg_event> events(const std::optional<std::string>& task_id
                               = std::nullopt,
                               int64_t after_id = 0) const;

  /// May the child `child_session` write `path` (relative or absolute)?
  /// Refused for a child whose task is not running (naming the state), and,
  /// with `enforce_write_roots`, outside the task's roots (physically).
  write_verdict may_write(const std::string& child_session,
                          const std::string& path,
                          bool enforce_write_roots) const;

  /// What changed under the task's roots since its baseline (empty
  /// without one).
  tree_diff recorded_changes(const std::string& task_id) const;

  // -- completion --

  /// The completion gate's first half. `blocked`: running -> blocked with
  /// the result as reason (slot and leases kept). `done`: with
  /// `limits.enforce_write_roots`, every claimed file must lie inside the
  /// roots and the claimed set must equal the recorded changes, else the
  /// claim is rejected (the task stays running, reason "… does not match
  /// …"); accepted: running -> checking with the validations to run, or
  /// straight to done without validations. A second call while checking is
  /// invalid_state "already being processed"; a task not running is
  /// invalid_state naming its state.
  completion_check begin_completion(const completion_claim& claim,
                                    const bg_limits& limits, int64_t now_ms);

  /// The gate's second half: passed -> done (leases freed, dependents
  /// unblocked); failed -> running with the reason and output tail. A task
  /// cancelled meanwhile is invalid_state "… is cancelled" (and stays
  /// cancelled).
  finish_result finish_completion(const std::string& task_id,
                                  const validation_outcome& outcome,
                                  int64_t now_ms);

  // -- steering --

  /// A one-use continuation for a blocked, interrupted or failed task:
  /// ready with a continuation token when it has (or can take) a slot and
  /// its leases, else queued with the request kept. A second one before
  /// the first is used: invalid_state "cannot continue yet".
  continue_result continue_task(const std::string& task_id,
                                const std::string& text,
                                const bg_limits& limits, int64_t now_ms);

  /// Cancels the task. A task whose token was handed out or consumed but
  /// whose child is not linked keeps its leases (cancel_requested) until
  /// the late child links (and is aborted), its token expires, or the
  /// cancel is repeated; otherwise the leases are given up at once. After
  /// that: invalid_state "already cancelled"; a done task cannot be.
  cancel_result cancel(const std::string& task_id, int64_t now_ms);

  /// Gives up on a task (running, blocked, interrupted or checking):
  /// failed with `reason`, leases freed, its dependents blocked.
  std::vector<bg_change> fail(const std::string& task_id,
                              const std::string& reason, int64_t now_ms);

  /// Makes `task_id` depend on `prerequisite` (both existing; the task
  /// queued or blocked by a dependency). A cycle is bad_request
  /// "dependency cycle: a -> b -> a".
  std::vector<bg_change> add_dependency(const std::string& task_id,
                                        const std::string& prerequisite,
                                        int64_t now_ms);

  // -- children and restarts --

  /// The child session ended: its running task becomes interrupted and
  /// gives up its leases.
  std::vector<bg_change> end_session(const std::string& child_session,
                                     int64_t now_ms);

  /// The harness knows `alive` child sessions to be alive: every running
  /// task whose child is not among them becomes interrupted and released.
  std::vector<bg_change> reconcile(const std::vector<std::string>& alive,
                                   int64_t now_ms);

  /// At server start: expired tokens free their tasks (see expire); then a
  /// task whose token was handed out but whose child
  /// was never linked (ready, starting) becomes interrupted and keeps its
  /// leases until cancelled or continued; a task interrupted in the middle
  /// of its completion check (checking) is running again. Running tasks
  /// stay running (reconcile decides about them).
  std::vector<bg_change> recover(int64_t now_ms);

  /// Every lease held now, task-list runs' included (those of a run that
  /// is not being driven any more are left out: src/store/leases.hpp).
  std::vector<lease> leases() const;

 private:
  store::ledger& db_;
  scope::physical_root repo_;
  /// The repository's run lock file, beside the ledger.
  std::filesystem::path run_lock_;
};

} // namespace taskforce::control
