// The ledger: the durable record of runs, tasks, attempts and an append-only
// event log, in one SQLite database (`.taskforce/ledger.sqlite`).
//
// Contract:
// - One `ledger` object owns one connection and is used by one thread at a
//   time (the ledger actor, detached). Other processes (`taskforce status`,
//   `logs`, …) open their own connection and read while a run writes: the
//   database is in WAL mode, so readers never wait for the writer.
// - Every write is one `BEGIN IMMEDIATE` transaction with
//   `synchronous=FULL`: when a call returns, its change survives a crash or a
//   power cut. A task transition and its event commit together, so the
//   orchestrator acts on a transition only after the ledger has it.
// - The ledger enforces the task lifecycle (`allowed(from, to)` of
//   task_state.hpp) and the run lifecycle, and keeps attempts in step with
//   the task's state: entering `running` from ready/interrupted opens an
//   attempt, leaving the attempt states closes it with an outcome.
// - Failures throw `store::ledger_error`; nothing is half written.
// - Timestamps are milliseconds since the Unix epoch, passed in by the
//   caller (`wall_clock_ms()` in production, fixed values in tests).
//
// The pieces: sqlite.hpp (connection, statements, transactions), schema.hpp
// (tables, creation, migrations, refusing what is not a ledger), this file
// (runs, tasks, attempts, events) and mailbox.hpp (mail to and from
// workers). What the commands print is the command line's business.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "src/run/task_state.hpp"
#include "src/scope/lease.hpp"
#include "src/store/error.hpp"
#include "src/store/schema.hpp"

namespace taskforce::control {
class bg_store;
class monitor_store;
} // namespace taskforce::control

namespace taskforce::store {

namespace sqlite {
class connection;
} // namespace sqlite

/// The schema version this code writes (`PRAGMA user_version`).
constexpr int ledger_schema_version = schema::current;

/// The database's file name inside `.taskforce/`.
constexpr const char* ledger_file_name = "ledger.sqlite";

/// Milliseconds since the Unix epoch, from the system clock.
int64_t wall_clock_ms();

/// A fresh run id, `YYYYMMDD-HHMMSS-xxxx` (UTC, 4 random hex digits): sorts
/// by time, and stays unique when a deleted ledger restarts the count, so
/// branch names `taskforce/<run>/<task>` never collide with old ones.
std::string new_run_id(int64_t now_ms);

/// The most files a completed task may have changed to be counted by
/// co-change learning.
constexpr size_t co_change_max_files = 64;

/// A short fingerprint of a task file's content (`fnv1a64:<16 hex>`), to
/// notice that a file changed between runs.
std::string content_hash(std::string_view bytes);

/// An attempt's log folder relative to `.taskforce/`:
/// `logs/<run>/<task>/attempt-<n>`, holding `worker.log` and `verify.log`.
std::string attempt_log_dir(const std::string& run_id,
                            const std::string& task_id, int number);

/// How an attempt ended (attempts.state).
enum class attempt_state : uint8_t {
  /// Still open: the task is running or verifying.
  running,
  /// Scope check and gate passed (the task moved on to merging/review/done).
  passed,
  /// The attempt failed (the task went to failed, or back to ready/pending).
  failed,
  /// The worker reported blocked.
  blocked,
  /// Cut short; does not count towards `maxAttempts`.
  interrupted,
};

/// The lowercase name.
const char* to_string(attempt_state x);

/// Parses an attempt state name; false when unknown.
bool from_string(std::string_view name, attempt_state& out);

/// Token and cost usage reported by a worker.
struct usage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost_usd = 0;
};

/// The usage one turn of an attempt reported (a row of `turn_usage`).
struct turn_spend {
  /// 1 for the attempt's first turn, then its repairs, answers, messages.
  int turn = 0;
  /// start, repair, answer, message or verify.
  std::string kind;
  store::usage usage;
};

// --- rows --------------------------------------------------------------------

/// One row of `runs`.
struct run_row {
  std::string id;
  /// The task file, relative to the repository root.
  std::string file;
  /// `content_hash` of the task file when the run was created.
  std::string file_hash;
  /// The branch tasks merge into.
  std::string base_branch;
  run_state state = run_state::running;
  /// Why the run is paused, completed or aborted; null while running.
  std::optional<std::string> reason;
  int64_t created_ms = 0;
  /// When the run row itself last changed (state, reason); task activity
  /// is in the event log.
  int64_t updated_ms = 0;
  uint64_t max_concurrency = 0;
  /// The effective configuration, as a JSON object.
  std::string config_json = "{}";
};

/// One row of `tasks`, with the usage of its attempts summed.
struct task_row {
  std::string run_id;
  std::string id;
  /// 1-based position among the run's tasks: its file's, then those of
  /// each added file in the order added.
  int index = 0;
  std::string title;
  task_state state = task_state::pending;
  /// Attempts that count towards `maxAttempts` (interrupted ones do not).
  int attempts = 0;
  std::optional<std::string> branch;
  std::optional<std::string> worktree;
  /// The commit on the base branch that brought the task's work in.
  std::optional<std::string> merge_commit;
  /// Why the task is in its state (failed, blocked, conflict, skipped, …).
  std::optional<std::string> reason;
  /// Paths of the last merge conflict (or of a dirty main checkout).
  std::vector<std::string> conflict_paths;
  /// The tail of the last gate output.
  std::optional<std::string> gate_tail;
  /// When its first attempt started.
  std::optional<int64_t> started_ms;
  /// When it entered done, failed or skipped (cleared when it leaves them).
  std::optional<int64_t> finished_ms;
  /// The sum over its attempts.
  store::usage usage;
  /// A person approved the held task: the hold stays lifted at resume.
  bool hold_lifted = false;
  /// The agent session its worker reported, to continue it.
  std::optional<std::string> session;
  /// The task as its file said it (`task_content_hash`), to know it again
  /// in a later run of the file; null in ledgers written before.
  std::optional<std::string> content_hash;
};

/// One row of `attempts`.
struct attempt_row {
  std::string run_id;
  std::string task_id;
  /// 1-based, per task; interrupted attempts have numbers too.
  int number = 0;
  attempt_state state = attempt_state::running;
  int64_t started_ms = 0;
  std::optional<int64_t> ended_ms;
  std::optional<int> exit_code;
  bool interrupted = false;
  /// Gate failures repaired within this attempt.
  int repairs = 0;
  /// Relative to `.taskforce/` (see `attempt_log_dir`).
  std::string worker_log;
  std::string verify_log;
  store::usage usage;
  /// The model it ran on; nullopt = the agent's own default (or no agent).
  std::optional<std::string> model;
};

/// One entry of the append-only event log.
struct event_row {
  /// Increases by one per event across the whole ledger; never reused.
  int64_t seq = 0;
  std::string run_id;
  /// Null for run-level events.
  std::optional<std::string> task_id;
  int64_t at_ms = 0;
  /// `run.created`, `run.state`, `task.state`, `task.update`, or a kind the
  /// caller chose in `append_event`.
  std::string kind;
  /// A JSON object; for `task.state`: `from`, `to`, `event`, `attempt`,
  /// `reason`, plus the caller's `data`.
  std::string data_json = "{}";
};

// --- arguments ---------------------------------------------------------------

/// A task as the run is created.
struct new_task {
  std::string id;
  int index = 0;
  std::string title;
  /// pending, or done / held / skipped when the file says so.
  task_state state = task_state::pending;
  std::optional<std::string> reason;
  /// The task's content hash (tasks.content_hash).
  std::optional<std::string> content_hash = std::nullopt;
  /// A done task that an earlier run merged: that run's merge commit.
  std::optional<std::string> merge_commit = std::nullopt;
};

/// Tasks that join an unfinished run (`taskforce add FILE`).
struct added_tasks {
  std::string run_id;
  /// The task file they come from, relative to the repository; parsed
  /// again at every resume.
  std::string file;
  /// Their `index` is their 1-based position in `file`; each is stored at
  /// the run's last index plus that, so they follow the run's tasks in
  /// file order.
  std::vector<new_task> tasks;
};

/// A run as it is created, with all its tasks.
struct new_run {
  /// From `new_run_id`.
  std::string id;
  std::string file;
  std::string file_hash;
  std::string base_branch;
  uint64_t max_concurrency = 0;
  /// A JSON object.
  std::string config_json = "{}";
  std::vector<new_task> tasks;
};

/// Task columns a call may set; each is written only when it has a value
/// (an empty vector of conflict paths clears them).
struct task_fields {
  std::optional<std::string> branch;
  std::optional<std::string> worktree;
  std::optional<std::string> merge_commit;
  std::optional<std::vector<std::string>> conflict_paths;
  /// Kept to its last 64 KiB.
  std::optional<std::string> gate_tail;
  /// Sets branch and worktree to null (`discard` removed them); wins over
  /// `branch` and `worktree` above.
  bool clear_branch_and_worktree = false;
  /// The agent session to continue (a worker reported it).
  std::optional<std::string> session;
  /// True: a person approved the held task, the hold stays lifted at
  /// resume; false: the hold applies again.
  std::optional<bool> hold_lifted;

  /// Whether no column is set.
  bool empty() const {
    return !branch && !worktree && !merge_commit && !conflict_paths
           && !gate_tail && !clear_branch_and_worktree && !session
           && !hold_lifted;
  }
};

/// A task transition and what goes with it, written in one transaction.
struct task_change {
  /// The new state; must be `allowed` from the current one.
  task_state to = task_state::pending;
  /// Replaces the task's reason (nullopt clears it).
  std::optional<std::string> reason;
  /// Refuse (invalid_transition) unless the task is in this state now.
  std::optional<task_state> expect;
  /// Columns set together with the move.
  task_fields fields;
  /// Added to the usage of the task's latest attempt (the open one, or the
  /// one this change closes).
  std::optional<store::usage> usage;
  /// Stored on the attempt this change closes.
  std::optional<int> exit_code;
  /// Stored on the attempt this change opens (attempts.model); empty or
  /// unset = the agent's own default (NULL).
  std::optional<std::string> attempt_model;
  /// With a move to running or merging: what the task writes (its scope's
  /// claims, scope::task_claims), reserved in the one reservation table
  /// (leases.hpp) under `run/<run>/<task>` while it is running, verifying
  /// or merging, and given up when it leaves those states. A start (into
  /// running from any other state) is refused with `reserved` when a live
  /// lease of another holder overlaps: the task then stays where it was,
  /// and its reason says what it waits for. Unset: the task's leases stay
  /// as they are (none are taken).
  std::optional<std::vector<scope::claim>> reserves;
  /// A JSON object merged into the event's data; the ledger's own keys
  /// (`from`, `to`, `event`, `attempt`, `reason`, `exit_code` and the
  /// fields set) win over the caller's.
  std::string data_json = "{}";
  /// Usage of the turns that ended with this change, all of the attempt
  /// the change continues or closes: each becomes a `turn_usage` row and
  /// adds to the attempt's sums, once (a turn recorded already is
  /// skipped). Negative values count as 0.
  std::vector<turn_spend> turns;
};

/// What `transition` did.
struct transition_result {
  /// The state the task left.
  task_state from = task_state::pending;
  /// The task's latest attempt number after the change (the one it opened,
  /// continues or closed); 0 when the task has never had one.
  int attempt = 0;
  /// True when this change opened `attempt`.
  bool attempt_opened = false;
  /// True when this change closed `attempt`.
  bool attempt_closed = false;
  /// The `task.state` event written with it.
  event_row event;
};

/// One change of a `transition_batch`.
struct task_change_request {
  std::string run_id;
  std::string task_id;
  task_change change;
};

/// What became of one change of a batch: its result, or why it was refused
/// (and nothing of it was written).
using batch_outcome = std::variant<transition_result, ledger_error>;

/// What `mark_interrupted` changed.
struct recovery {
  /// Tasks moved from running/verifying to interrupted, in file order.
  std::vector<std::string> interrupted;
  /// Tasks left in merging: the merge may or may not have happened; the
  /// orchestrator checks whether the branch is in the base before merging.
  std::vector<std::string> merging;
  /// True when the run was running and is now paused.
  bool paused = false;
};

// --- query results -----------------------------------------------------------

/// What `taskforce status` shows: the run and its tasks in file order.
struct run_status {
  run_row run;
  std::vector<task_row> tasks;
  /// Files added to the run (`taskforce add`), in the order added.
  std::vector<std::string> added_files;
};

/// A run with its tasks counted by state (`taskforce list`).
struct run_summary {
  run_row run;
  /// Only states that occur.
  std::map<task_state, int> counts;
  int total = 0;
  /// The sum over the run's attempts.
  store::usage usage;
};

/// One line of a run's job log (like GNU parallel's `--joblog`): a task
/// with its times, attempts, repairs, last exit and usage.
struct job_row {
  std::string task_id;
  std::string title;
  task_state state = task_state::pending;
  /// When its first attempt started.
  std::optional<int64_t> started_ms;
  /// When it finished (done, failed, skipped), else when its latest
  /// attempt ended; none while an attempt runs.
  std::optional<int64_t> ended_ms;
  /// Attempts that count towards `maxAttempts`.
  int attempts = 0;
  /// Gate repairs over all its attempts.
  int repairs = 0;
  /// The exit code of its latest attempt that has one.
  std::optional<int> exit_code;
  store::usage usage;
};

/// A task that merged its own work (see `co_change_uncounted`).
struct merged_task {
  std::string run_id;
  std::string task_id;
  /// The commit on the base branch that brought its work in.
  std::string merge_commit;
  /// Why it is done ("no changes": the commit is the base it found).
  std::string reason;
};

/// What `taskforce logs TASK` shows.
struct task_history {
  /// Gate tail, conflict paths, branch, worktree, merge commit.
  task_row task;
  /// Oldest first; each names its log files.
  std::vector<attempt_row> attempts;
  /// Every event about the task, oldest first.
  std::vector<event_row> events;
};

// --- the ledger --------------------------------------------------------------

/// How `ledger::open` opens the database.
struct ledger_options {
  /// Read-only connections never create, migrate or write (status, logs).
  bool read_only = false;
  /// FULL (the default) survives power loss; NORMAL only process crashes.
  bool synchronous_full = true;
  /// How long a writer waits for another process's transaction.
  int busy_timeout_ms = 5000;
};

/// The durable record of runs; see the contract at the top of this file.
class ledger {
 public:
  /// Opens (and, unless read-only, creates and migrates) the database at
  /// `path`. Creating the schema is idempotent. Throws ledger_error.
  static ledger open(const std::filesystem::path& path,
                     const ledger_options& options = {});

  ledger(ledger&&) noexcept;
  ledger& operator=(ledger&&) noexcept;
  ledger(const ledger&) = delete;
  ledger& operator=(const ledger&) = delete;
  ~ledger();

  /// The database file.
  const std::filesystem::path& path() const {
    return path_;
  }

  /// The repository's run lock file beside it (`.taskforce/run.lock`):
  /// whether a run's leases are alive (leases.hpp).
  std::filesystem::path run_lock_file() const;

  // -- runs --

  /// Creates the run (state running) with all its tasks and a `run.created`
  /// event, in one transaction. Throws duplicate when the id exists.
  void create_run(const new_run& run, int64_t now_ms);

  /// Moves the run to `to` with `reason` (nullopt clears it) and writes a
  /// `run.state` event. The same state again only replaces the reason.
  /// Throws invalid_transition when the run lifecycle forbids the move.
  event_row set_run_state(const std::string& run_id, run_state to,
                          const std::optional<std::string>& reason,
                          int64_t now_ms);

  /// The run, or nullopt.
  std::optional<run_row> find_run(const std::string& run_id) const;

  /// The most recently created run of `file` (relative to the repository),
  /// whatever its state, or nullopt.
  std::optional<run_row> latest_run_of(const std::string& file) const;

  /// The most recently created run, or nullopt when there is none.
  std::optional<run_row> latest_run() const;

  /// The most recently created run that is running or paused, optionally
  /// only of `file` (relative to the repository).
  std::optional<run_row>
  latest_unfinished_run(const std::optional<std::string>& file
                        = std::nullopt) const;

  /// Every run, newest first, with its tasks counted by state.
  std::vector<run_summary> list_runs() const;

  /// Appends tasks to an unfinished run and records their file, with a
  /// `run.tasks_added` event, in one transaction: all of them or none.
  /// Throws not_found (no run), duplicate (an id the run has, or one given
  /// twice) or invalid_transition (the run is completed or aborted, or a
  /// task cannot start its life in its state). Returns the file's position
  /// among the added files (1 for the first).
  int add_tasks(const added_tasks& added, int64_t now_ms);

  /// The files added to the run, in the order added.
  std::vector<std::string> added_files(const std::string& run_id) const;

  // -- tasks --

  /// Moves a task and writes its `task.state` event in one transaction; the
  /// attempt bookkeeping follows the state (see the contract). Throws
  /// not_found, invalid_transition (lifecycle or `expect`), bad_json or
  /// reserved (a start whose scope another holder reserves: the task's
  /// reason then says what it waits for, and nothing else changed).
  transition_result transition(const std::string& run_id,
                               const std::string& task_id,
                               const task_change& change, int64_t now_ms);

  /// Group commit: applies the changes in order in one transaction, so they
  /// cost one sync instead of one each. Each change stands alone: a refused
  /// one (not_found, invalid_transition, bad_json) writes nothing and the
  /// others still apply (a start refused as `reserved` writes only the
  /// task's reason: what it waits for); later changes see earlier ones. Throws
  /// (and writes nothing at all) only when the transaction itself fails. A
  /// ledger actor can gather the transitions waiting in its mailbox into one
  /// batch and acknowledge each after the single commit.
  std::vector<batch_outcome>
  transition_batch(const std::vector<task_change_request>& changes,
                   int64_t now_ms);

  /// Sets task columns without a state change and writes a `task.update`
  /// event (data: `data_json` plus the fields set). Throws not_found.
  event_row update_task(const std::string& run_id, const std::string& task_id,
                        const task_fields& fields, int64_t now_ms,
                        const std::string& data_json = "{}");

  /// Records the commit that merged the task, before the task is marked
  /// done, so a crash in between never merges twice. Same as update_task
  /// with only `merge_commit`, under the event kind `task.merge_commit`.
  event_row record_merge_commit(const std::string& run_id,
                                const std::string& task_id,
                                const std::string& commit, int64_t now_ms);

  /// Adds to the usage of the task's open attempt (a repair round's worker
  /// run, for example). Throws invalid_transition when none is open.
  void add_usage(const std::string& run_id, const std::string& task_id,
                 const store::usage& u);

  /// The task, or nullopt.
  std::optional<task_row> find_task(const std::string& run_id,
                                    const std::string& task_id) const;

  /// The task's state alone (cheaper than find_task), or nullopt.
  std::optional<task_state> state_of(const std::string& run_id,
                                     const std::string& task_id) const;

  /// The run's tasks in file order.
  std::vector<task_row> tasks(const std::string& run_id) const;

  /// The task's attempts, oldest first.
  std::vector<attempt_row> attempts(const std::string& run_id,
                                    const std::string& task_id) const;

  // -- events --

  /// Appends an event of the caller's `kind` (a JSON object as `data_json`).
  event_row append_event(const std::string& run_id,
                         const std::optional<std::string>& task_id,
                         const std::string& kind, const std::string& data_json,
                         int64_t now_ms);

  /// The run's events with a sequence number above `after_seq`, oldest
  /// first, at most `limit` (0: all). Lets a reader follow a live run.
  std::vector<event_row> events(const std::string& run_id,
                                int64_t after_seq = 0, size_t limit = 0) const;

  // -- what the commands show --

  /// The run and its tasks, or nullopt when the run does not exist.
  std::optional<run_status> status(const std::string& run_id) const;

  /// The task's row, attempts and events, or nullopt.
  std::optional<task_history> history(const std::string& run_id,
                                      const std::string& task_id) const;

  /// The schema version of the file (older than ledger_schema_version only
  /// on a read-only connection to a ledger nobody migrated yet).
  int schema_version() const {
    return version_;
  }

  // -- co-change learning --

  /// Counts task `task_id` of run `run_id` as a completed task that changed
  /// `files`: each pair of them (order and duplicates do not matter) gains
  /// one, in one transaction with the mark that the task was counted. A
  /// task is counted once (false when it was already, or when it changed
  /// more than `co_change_max_files` files: a sweeping change says nothing
  /// about which files belong together, and would cost n^2 rows). Throws
  /// not_found when the task does not exist.
  bool record_co_change(const std::string& run_id, const std::string& task_id,
                        const std::vector<std::string>& files);

  /// Done tasks that merged work of their own (a merge commit and at least
  /// one attempt: not carried over from an earlier run) and that
  /// record_co_change has not counted yet, oldest first.
  std::vector<merged_task> co_change_uncounted() const;

  /// Whether the task was counted by record_co_change (or skipped by it).
  bool co_change_counted(const std::string& run_id,
                         const std::string& task_id) const;

  /// The learned pairs seen in at least `min_count` completed tasks, each
  /// (a, b) with a < b, in that order.
  std::vector<std::pair<std::string, std::string>>
  co_change_pairs(uint64_t min_count) const;

  // -- recovery --

  /// After the process that drove `run_id` died (or on Ctrl-C): in one
  /// transaction, every running/verifying task becomes interrupted (its open
  /// attempt too, no longer counted towards maxAttempts), and a running run
  /// becomes paused with `reason`. Call it only while holding the run lock:
  /// it assumes nobody else drives the run.
  recovery mark_interrupted(const std::string& run_id,
                            const std::string& reason, int64_t now_ms);

  // -- usage
  // -------------------------------------------------------------------

  /// The usage of each turn of the task's attempts, by attempt then turn;
  /// the attempt number is in `first`.
  std::vector<std::pair<int, turn_spend>>
  turn_usage(const std::string& run_id, const std::string& task_id) const;

  /// The run's usage: the sum over its attempts.
  store::usage run_usage(const std::string& run_id) const;

  /// The run's job log, one row per task in file order (empty when the run
  /// does not exist).
  std::vector<job_row> job_log(const std::string& run_id) const;

 private:
  friend class mailbox;
  friend class control::bg_store;
  friend class control::monitor_store;

  ledger(std::unique_ptr<sqlite::connection> db, std::filesystem::path path,
         int version);

  std::unique_ptr<sqlite::connection> db_;
  std::filesystem::path path_;
  int version_ = 0;
};

} // namespace taskforce::store
