// The run family: what the orchestrator, its workers, the git service and
// the ledger service say to each other while a task list executes, and what
// a person's commands (approve, reject, answer, add) ask of a live run.
// Plain structs with value semantics; each lists every field in inspect().
// States and events are the enums of src/run (task_state.hpp, outcome.hpp);
// facts are typed fields, never JSON text. Optional fields are
// caf::optional: CAF 0.17 cannot inspect std::optional.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/optional.hpp>

#include "messages/type_ids.hpp"
#include "src/run/outcome.hpp"
#include "src/run/task_state.hpp"
#include "src/taskfile/task.hpp"
#include "src/worker/turn.hpp"

namespace taskforce {

// -- the ledger: typed changes and their acknowledgements ---------------------

/// Tokens and cost a worker reported.
struct token_usage {
  uint64_t input_tokens = 0;
  uint64_t output_tokens = 0;
  double cost_usd = 0;
};

/// The usage one turn of an attempt reported.
struct turn_spent {
  /// 1 for the attempt's first turn; its repairs, answers and messages
  /// follow.
  uint64_t turn = 0;
  /// start, repair, answer, message or verify.
  std::string kind;
  token_usage usage;
};

/// Typed task columns set together with a change (or alone, task_update).
/// A field without a value leaves the column as it is.
struct task_facts {
  /// `taskforce/<run>/<task>`.
  caf::optional<std::string> branch;
  /// The attempt's worktree.
  caf::optional<std::string> worktree;
  /// The base commit that brought the task's work in.
  caf::optional<std::string> merge_commit;
  /// The tail of the last worker's or gate's output.
  caf::optional<std::string> gate_tail;
  /// The agent session the next turn continues.
  caf::optional<std::string> session;
  /// The paths of a merge conflict (or of a dirty main checkout); an empty
  /// list clears them.
  caf::optional<std::vector<std::string>> conflict_paths;
  /// The exit code of the attempt this change closes.
  caf::optional<int64_t> exit_code;
  /// The usage of the turns that ended with this change (recorded per
  /// turn and added to the attempt it continues or closes).
  std::vector<turn_spent> spent;
  /// A person approved the held task: the file's hold no longer applies.
  bool hold_lifted = false;
  /// The model of the attempt this change opens ("" = the agent's own
  /// default).
  caf::optional<std::string> model;
  /// With a change into running or merging: the task's `files` (as the
  /// task file parser left them: normalised, physical) and `locks`, which
  /// the ledger reserves in its one reservation table while the task works,
  /// so neither a managed background task nor it takes the other's. Unset
  /// on other changes.
  caf::optional<std::vector<std::string>> files;
  std::vector<std::string> locks;
};

/// One task state change, made durable before anyone acts on it; `to` is
/// `transition(from, event)`, and the ledger refuses it unless it has the
/// task in `from`.
struct task_transition {
  std::string task_id;
  task_event event = task_event::start;
  task_state from = task_state::pending;
  task_state to = task_state::pending;
  /// The attempt the orchestrator believes the change belongs to (0 when
  /// none); the ledger's count wins (transition_ack::attempt).
  uint64_t attempt = 0;
  /// Why; may be empty.
  std::string reason;
  task_facts facts;
};

/// Task changes written in one transaction (group commit), in order. Each
/// stands alone: a refused one writes nothing and the others still apply.
struct transition_batch {
  std::string run_id;
  std::vector<task_transition> changes;
};

/// The ledger's word on one change of a batch.
struct transition_ack {
  /// Written: the task is in the change's `to` now.
  bool durable = false;
  /// The task's latest attempt number after the change; 0 when none.
  uint64_t attempt = 0;
  /// Refused: where the ledger has the task (its word wins); none when the
  /// ledger has no such task.
  caf::optional<task_state> actual;
  /// Refused: why, in words.
  std::string refusal;
  /// Refused because another holder (a managed background task) reserves
  /// what the task writes (`refusal` says who: "waits for managed task
  /// bg-1 (src)"): the task stays where it was and starts later.
  bool waits = false;
};

/// The answer to a transition_batch once it committed: one ack per change,
/// in order.
struct batch_acks {
  std::vector<transition_ack> acks;
};

/// Task columns set without a state change (the worktree an attempt
/// leased, before anything is written into it).
struct task_update {
  std::string run_id;
  std::string task_id;
  task_facts facts;
};

/// A run state change; also the ledger's answer to "where is the run".
struct run_transition {
  std::string run_id;
  run_state to = run_state::running;
  std::string reason;
};

// -- the git service ----------------------------------------------------------

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
  /// The attempt it is for.
  uint64_t attempt = 0;
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
  /// The task's files: in place, the attempt answers for changes there
  /// (set with the snapshot).
  std::vector<std::string> scope;
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
  /// Empty unless the base branch moved by something else than the run's
  /// own merges and this attempt answers for it (it fails, the run
  /// pauses): what moved it, and what was done about it.
  std::string base_moved;
  /// For an attempt in a worktree of its own: the paths that changed in the
  /// main checkout since the attempt began (where nothing may change).
  std::vector<std::string> main_paths;
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
  /// Stop before the base moves: a new merge commit is made and checked
  /// out for its gate (end `prepared`, the folder in `paths`).
  bool prepare = false;
  /// Land exactly this merge commit of an earlier `prepare` (end `stale`
  /// when the base or the branch moved since).
  std::string expected;
  /// With `expected`: do not land it; its gate failed, so the task's branch
  /// and worktree move to it instead and the repair starts from the merge
  /// result (answers `prepared`).
  bool adopt = false;
};

/// The answer to a merge_request (and to a check for a hand merge).
struct merge_outcome {
  run::merge_end end = run::merge_end::error;
  /// The base commit that brought the task's work in (merged, empty).
  std::string merge_commit;
  /// The conflicting paths, or the main checkout's dirty ones.
  std::vector<std::string> paths;
  /// Why it did not merge, in words (conflict, error); may be empty.
  std::string message;
  /// gate_failed: the end of the gate's output on the merge result.
  std::string tail;
};

// -- workers ------------------------------------------------------------------

/// Where an attempt is, as its worker tells the orchestrator.
enum class attempt_phase : uint8_t {
  /// The worktree is leased (worktree and branch set): the backend starts.
  leased,
  /// The worker reported done: the scope check and the gate run.
  verifying,
  /// The gate failed: the same worker repairs (no attempt counted).
  repairing,
};

/// A worker's progress: its attempt entered a phase.
struct attempt_progress {
  std::string task_id;
  uint64_t attempt = 0;
  attempt_phase phase = attempt_phase::leased;
  /// The phase's detail (the gate's failure when repairing).
  std::string detail;
  /// Set when leased.
  std::string worktree;
  std::string branch;
  /// verifying: the usage the turn that just ended reported.
  std::vector<turn_spent> spent;
};

/// A worker's final word to the orchestrator.
struct attempt_outcome {
  std::string task_id;
  uint64_t attempt = 0;
  run::attempt_end end = run::attempt_end::failed;
  /// Why it failed or blocked; the worker's summary when done.
  std::string reason;
  /// The worker's (or the gate's) exit code, -1 when killed or never run.
  int64_t exit_code = -1;
  std::string worktree;
  std::string branch;
  /// The tail of the worker's and the gate's output.
  std::string tail;
  /// The agent session the next turn may continue; empty when none.
  std::string session;
  /// Gate repairs performed inside this attempt.
  uint64_t repairs = 0;
  /// Turns the backend ran in this attempt (repairs included).
  uint64_t turns = 0;
  /// The usage of the turns no progress carried yet (the last turn's, when
  /// it did not end in verifying).
  std::vector<turn_spent> spent;
};

// -- watchers -----------------------------------------------------------------

/// What a watcher of the run (live table, --events) is told, once durable.
struct run_event {
  /// Milliseconds since the epoch.
  int64_t time_ms = 0;
  std::string run_id;
  /// Empty for a run-level event (then `run` holds the state).
  std::string task_id;
  std::string title;
  /// The task's state (task events).
  task_state state = task_state::pending;
  /// The run's state (run-level events).
  run_state run = run_state::running;
  uint64_t attempt = 0;
  std::string reason;
  /// The usage recorded with this change (turns that ended with it).
  token_usage spent;
};

/// The state's name of an event: the task's, or the run's.
inline const char* state_name(const run_event& x) {
  return x.task_id.empty() ? to_string(x.run) : to_string(x.state);
}

// -- a person steers a live run -----------------------------------------------

/// A task as a command left it.
struct task_view {
  std::string id;
  task_state state = task_state::pending;
  std::string reason;
};

/// The verdict on approve, reject, answer or add, given once the changes
/// it made are durable. Refusals are run_errc errors (wrong_state,
/// unknown_task, duplicate_task, bad_tasks, refused_transition).
struct steer_reply {
  /// The tasks the command changed or added, as they stand now.
  std::vector<task_view> tasks;
};

/// Tasks to add to a live run (`taskforce add`), parsed and validated.
struct task_additions {
  /// The file they came from (relative to the repository); may be empty.
  std::string file;
  std::vector<task_spec> tasks;
};

// -- inspect ------------------------------------------------------------------

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_usage& x) {
  return f(caf::meta::type_name("taskforce.token_usage"), x.input_tokens,
           x.output_tokens, x.cost_usd);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, turn_spent& x) {
  return f(caf::meta::type_name("taskforce.turn_spent"), x.turn, x.kind,
           x.usage);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_facts& x) {
  return f(caf::meta::type_name("taskforce.task_facts"), x.branch, x.worktree,
           x.merge_commit, x.gate_tail, x.session, x.conflict_paths,
           x.exit_code, x.spent, x.hold_lifted, x.model, x.files, x.locks);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_transition& x) {
  return f(caf::meta::type_name("taskforce.task_transition"), x.task_id,
           x.event, x.from, x.to, x.attempt, x.reason, x.facts);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, transition_batch& x) {
  return f(caf::meta::type_name("taskforce.transition_batch"), x.run_id,
           x.changes);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, transition_ack& x) {
  return f(caf::meta::type_name("taskforce.transition_ack"), x.durable,
           x.attempt, x.actual, x.refusal, x.waits);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_acks& x) {
  return f(caf::meta::type_name("taskforce.batch_acks"), x.acks);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_update& x) {
  return f(caf::meta::type_name("taskforce.task_update"), x.run_id, x.task_id,
           x.facts);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_transition& x) {
  return f(caf::meta::type_name("taskforce.run_transition"), x.run_id, x.to,
           x.reason);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, worktree_lease& x) {
  return f(caf::meta::type_name("taskforce.worktree_lease"), x.path, x.branch,
           x.reused, x.start);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, worktree_request& x) {
  return f(caf::meta::type_name("taskforce.worktree_request"), x.run_id,
           x.task_id, x.fresh, x.known_path, x.attempt);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, scope_request& x) {
  return f(caf::meta::type_name("taskforce.scope_request"), x.run_id, x.task_id,
           x.attempt, x.checkout, x.branch, x.start, x.scope);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, scope_report& x) {
  return f(caf::meta::type_name("taskforce.scope_report"), x.paths, x.moved,
           x.base_moved, x.main_paths);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, merge_request& x) {
  return f(caf::meta::type_name("taskforce.merge_request"), x.run_id, x.task_id,
           x.title, x.worktree, x.branch, x.cleanup, x.scope, x.prepare,
           x.expected, x.adopt);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, merge_outcome& x) {
  return f(caf::meta::type_name("taskforce.merge_outcome"), x.end,
           x.merge_commit, x.paths, x.message, x.tail);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, attempt_progress& x) {
  return f(caf::meta::type_name("taskforce.attempt_progress"), x.task_id,
           x.attempt, x.phase, x.detail, x.worktree, x.branch, x.spent);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, attempt_outcome& x) {
  return f(caf::meta::type_name("taskforce.attempt_outcome"), x.task_id,
           x.attempt, x.end, x.reason, x.exit_code, x.worktree, x.branch,
           x.tail, x.session, x.repairs, x.turns, x.spent);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_event& x) {
  return f(caf::meta::type_name("taskforce.run_event"), x.time_ms, x.run_id,
           x.task_id, x.title, x.state, x.run, x.attempt, x.reason, x.spent);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_view& x) {
  return f(caf::meta::type_name("taskforce.task_view"), x.id, x.state,
           x.reason);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, steer_reply& x) {
  return f(caf::meta::type_name("taskforce.steer_reply"), x.tasks);
}

/// task_spec lives in src/ (no CAF there) with std::optional fields, which
/// CAF 0.17 cannot inspect: they cross as caf::optional copies, written
/// back after loading.
template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_spec& x) {
  auto to_caf = [](const auto& o) {
    using value = typename std::decay_t<decltype(o)>::value_type;
    return o ? caf::optional<value>{*o} : caf::optional<value>{};
  };
  auto verify = to_caf(x.verify);
  auto run = to_caf(x.run);
  auto agent = to_caf(x.agent);
  auto model = to_caf(x.model);
  auto risk = to_caf(x.risk);
  auto timeout_ms = to_caf(x.timeout_ms);
  auto hold_reason = to_caf(x.hold_reason);
  auto back = [](auto& out, const auto& in) {
    if (in)
      out = *in;
    else
      out.reset();
  };
  return f(caf::meta::type_name("taskforce.task_spec"), x.id, x.index, x.line,
           x.title, x.body, x.done, x.deps, x.files, x.locks, x.priority,
           verify, run, agent, model, risk, timeout_ms, x.held, hold_reason,
           x.needs_approval, x.design, caf::meta::load_callback([&] {
             back(x.verify, verify);
             back(x.run, run);
             back(x.agent, agent);
             back(x.model, model);
             back(x.risk, risk);
             back(x.timeout_ms, timeout_ms);
             back(x.hold_reason, hold_reason);
             return caf::error{};
           }));
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_additions& x) {
  return f(caf::meta::type_name("taskforce.task_additions"), x.file, x.tasks);
}

// -- comparison ---------------------------------------------------------------

inline bool operator==(const token_usage& x, const token_usage& y) {
  return x.input_tokens == y.input_tokens && x.output_tokens == y.output_tokens
         && x.cost_usd == y.cost_usd;
}

inline bool operator==(const turn_spent& x, const turn_spent& y) {
  return x.turn == y.turn && x.kind == y.kind && x.usage == y.usage;
}

inline bool operator==(const task_facts& x, const task_facts& y) {
  return x.branch == y.branch && x.worktree == y.worktree
         && x.merge_commit == y.merge_commit && x.gate_tail == y.gate_tail
         && x.session == y.session && x.conflict_paths == y.conflict_paths
         && x.exit_code == y.exit_code && x.spent == y.spent
         && x.hold_lifted == y.hold_lifted && x.model == y.model
         && x.files == y.files && x.locks == y.locks;
}

inline bool operator==(const task_transition& x, const task_transition& y) {
  return x.task_id == y.task_id && x.event == y.event && x.from == y.from
         && x.to == y.to && x.attempt == y.attempt && x.reason == y.reason
         && x.facts == y.facts;
}

inline bool operator==(const transition_batch& x, const transition_batch& y) {
  return x.run_id == y.run_id && x.changes == y.changes;
}

inline bool operator==(const transition_ack& x, const transition_ack& y) {
  return x.durable == y.durable && x.attempt == y.attempt
         && x.actual == y.actual && x.refusal == y.refusal
         && x.waits == y.waits;
}

inline bool operator==(const batch_acks& x, const batch_acks& y) {
  return x.acks == y.acks;
}

inline bool operator==(const task_update& x, const task_update& y) {
  return x.run_id == y.run_id && x.task_id == y.task_id && x.facts == y.facts;
}

inline bool operator==(const run_transition& x, const run_transition& y) {
  return x.run_id == y.run_id && x.to == y.to && x.reason == y.reason;
}

inline bool operator==(const scope_report& x, const scope_report& y) {
  return x.paths == y.paths && x.moved == y.moved
         && x.base_moved == y.base_moved && x.main_paths == y.main_paths;
}

inline bool operator==(const merge_outcome& x, const merge_outcome& y) {
  return x.end == y.end && x.merge_commit == y.merge_commit
         && x.paths == y.paths && x.message == y.message && x.tail == y.tail;
}

inline bool operator==(const attempt_progress& x, const attempt_progress& y) {
  return x.task_id == y.task_id && x.attempt == y.attempt && x.phase == y.phase
         && x.detail == y.detail && x.worktree == y.worktree
         && x.branch == y.branch && x.spent == y.spent;
}

inline bool operator==(const attempt_outcome& x, const attempt_outcome& y) {
  return x.task_id == y.task_id && x.attempt == y.attempt && x.end == y.end
         && x.reason == y.reason && x.exit_code == y.exit_code
         && x.worktree == y.worktree && x.branch == y.branch && x.tail == y.tail
         && x.session == y.session && x.repairs == y.repairs
         && x.turns == y.turns && x.spent == y.spent;
}

inline bool operator==(const run_event& x, const run_event& y) {
  return x.run_id == y.run_id && x.task_id == y.task_id
         && state_name(x) == std::string{state_name(y)}
         && x.attempt == y.attempt && x.reason == y.reason;
}

inline bool operator==(const task_view& x, const task_view& y) {
  return x.id == y.id && x.state == y.state && x.reason == y.reason;
}

inline bool operator==(const steer_reply& x, const steer_reply& y) {
  return x.tasks == y.tasks;
}

// -- names --------------------------------------------------------------------

/// The lowercase name.
inline const char* to_string(attempt_phase x) {
  switch (x) {
    case attempt_phase::leased: return "leased";
    case attempt_phase::verifying: return "verifying";
    case attempt_phase::repairing: return "repairing";
  }
  return "unknown";
}

} // namespace taskforce
