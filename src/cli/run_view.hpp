// How the command line shows what the ledger holds: the `status --json`
// object, events and mail as JSON lines, and what a task waits for from a
// person. `status`, `list`, `logs` and the live table share these, so a task
// awaiting approval or an answer reads the same everywhere.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "src/store/ledger.hpp"
#include "src/store/mailbox.hpp"

namespace taskforce::cli {

/// What a task waits for from a person.
enum class awaiting : uint8_t {
  /// Nothing: it runs, waits for other tasks, or is over.
  nothing,
  /// review: `approve` merges it, `reject` blocks it.
  approval,
  /// blocked: `answer` runs it again with the answer.
  answer,
  /// held: `approve` lifts the hold (so does editing the file and
  /// `resume`).
  decision,
};

/// What task `t` waits for.
awaiting awaiting_of(const store::task_row& t);

/// Whether the run's config keeps blocked workers for an answer
/// (`run.askUserOnBlocked`), as the run recorded it.
bool asks_user_on_blocked(const store::run_row& run);

/// The reason `status` gives for a task: the recorded one (the question of
/// a blocked worker, the hold line, why it awaits approval, …); for a
/// failed task, followed by the last lines of the output that failed it
/// (the gate's, or the worker's); for a task in review without one,
/// "awaiting approval". Nullopt when there is none.
std::optional<std::string> shown_reason(const store::task_row& t);

/// One line telling a person what to type for a task that waits on them
/// (`t1 awaits approval: taskforce approve t1, or taskforce reject t1
/// REASON`); empty when it waits for nothing.
std::string next_step(const store::task_row& t, bool ask_user_on_blocked);

/// Whether each merged task's merge commit is still in the run's base
/// branch, as the repository at `root` has it now (a person may have reset
/// it away): by task id, for the tasks with a merge commit. Empty when the
/// repository cannot be read.
std::map<std::string, bool> merges_on_base(const std::filesystem::path& root,
                                           const store::run_status& x);

/// The `status --json` object:
/// `{"run":{"id","file","state","reason","usage"},
///   "tasks":[{"id","state","attempts","branch","merge_commit",
///             "merge_on_base","reason","usage"}]}`
/// (absent values are null; `merge_on_base` from `on_base`, null for a task
/// it does not have; each reason as `shown_reason` gives it; each usage
/// `{"input_tokens","output_tokens","cost_usd"}`, the run's the sum over its
/// tasks).
std::string to_status_json(const store::run_status& x,
                           const std::map<std::string, bool>& on_base = {});

/// The `logs --json` object: the task as status shows it plus `title`,
/// `worktree`, `conflict_paths`, `gate_tail`, `session`, `hold_lifted`;
/// its attempts; its mail; its events:
/// `{"task":{…},"attempts":[…],"mail":[…],"events":[…]}`.
std::string to_logs_json(const store::task_history& h,
                         const std::vector<store::mail_row>& mail,
                         const std::map<std::string, bool>& on_base = {});

/// The event as one JSON line (no newline):
/// `{"seq":…,"run":…,"task":…|null,"at_ms":…,"kind":…,"data":{…}}`.
std::string to_json_line(const store::event_row& x);

/// The mail as one JSON line (no newline):
/// `{"id":…,"task":…|null,"kind":…,"direction":…,"text":…,"created_ms":…,
///   "delivered_ms":…|null,"attempt":…|null}`.
std::string to_json_line(const store::mail_row& x);

/// `2026-12-01 17:07:22Z`: a ledger time for people (UTC, to the second).
std::string format_time(int64_t ms);

/// `{"input_tokens":…,"output_tokens":…,"cost_usd":…}` as `status --json`
/// shows usage.
std::string to_usage_json(const store::usage& u);

/// The run's usage on one line: `usage: 320 tokens (240 in, 80 out),
/// $0.0040`.
std::string usage_line(const store::usage& u);

/// The job log as people read it, like GNU parallel's `--joblog`: one line
/// per task (TASK START DURATION ATTEMPTS REPAIRS EXIT TOKENS COST; `-`
/// where there is nothing yet), a total line, and the run's wall time (from
/// its creation to its last change, or to `now_ms` while it runs).
std::string format_job_log(const store::run_row& run,
                           const std::vector<store::job_row>& jobs,
                           int64_t now_ms);

/// For a run its budget paused (reason `budget`): what it spent against
/// which limit, and how to go on; empty for any other run.
std::string budget_note(const store::run_row& run, const store::usage& total);

} // namespace taskforce::cli
