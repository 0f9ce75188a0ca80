// Starting and recovering a run: the blocking steps before any actor runs,
// shared by every front end that drives or steers a run (the command line,
// the server, the embedding API).
//
//   open_run:  refuse a damaged ledger ─▶ parse the task file ─▶ take the
//              run lock ─▶ clean up what a killed driver left (its worker
//              processes, stale git locks, worktrees, a half-done checkout)
//              ─▶ learn co-changes ─▶ create the run (skipping the tasks
//              an earlier run of the file merged) or pick the one to
//              resume ─▶ refuse the mistakes the checks before anything
//              starts find (preflight.hpp) and a dirty checkout ─▶ load_run
//              (on a repository without a ledger the checks come before
//              anything is created at all)
//   load_run:  the run as the ledger and its task files have it (the file's
//              tasks, then those of every added file), ready for a
//              scheduler: states, reasons, holds (a lifted hold stays
//              lifted), approvals, what earlier attempts left, and the
//              learned co-change pairs as conflicts.
//
// No actors here: this is plain blocking code (libgit2, SQLite, files).
// Bad input throws setup_error (the command line exits 2 with its text).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/config/config.hpp"
#include "src/git/repository.hpp"
#include "src/plan/graph.hpp"
#include "src/run/scheduler.hpp"
#include "src/run/setup.hpp"
#include "src/store/ledger.hpp"
#include "src/store/run_lock.hpp"
#include "src/taskfile/task.hpp"

namespace taskforce::run {

/// Bad input or a state the run cannot start from (a dirty checkout, an
/// unknown run, a changed task file); the message says what and where.
class setup_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A run loaded from the ledger and its task files.
struct loaded_run {
  /// The run's row.
  store::run_row run;
  /// Files added with `add`, in the order added.
  std::vector<std::string> added_files;
  /// Every task of the run, in ledger order (the run's file, then each
  /// added file).
  plan::task_graph graph{std::vector<task_spec>{}};
  /// One per task of `graph`: the ledger's state and reason, the holds
  /// (lifted ones stay lifted) and the approvals.
  std::vector<task_record> records;
  /// One per task of `graph`.
  std::vector<task_memory> memory;
  /// One per task of `graph`: the ledger's row.
  std::vector<store::task_row> rows;
  /// The scheduler's rules for `cfg` (the budget as budget_of gives it).
  rules rule_set;
  /// The usage the ledger has for the run: the budget counts from it.
  spend spent;
};

/// The tasks of `file_rel` (relative to `root`, or absolute) parsed as
/// `run` parses them with `cfg`. Throws setup_error with every error as
/// `FILE:LINE: message`, or when the file has no task.
std::vector<task_spec> parse_task_file(const std::filesystem::path& root,
                                       const std::string& file_rel,
                                       const config& cfg);

/// The ledger's row for a task the file gives: pending, or done when the
/// file checks it; with its content hash.
store::new_task new_task_of(const task_spec& spec);

/// A fingerprint of the task as its file says it: its id and everything
/// that shapes its work (title, body, deps, files, locks, priority, gate,
/// run, agent, model, risk, timeout), not where it stands in the file nor
/// whether it is checked. A later run of the file knows a task it already
/// merged by it.
std::string task_content_hash(const task_spec& spec);

/// Refuses (setup_error, every finding as `FILE:LINE: message`) the tasks
/// of `file_rel` that would run (the not-done ones) when the checks before
/// anything starts find a mistake in them (see preflight.hpp).
void refuse_preflight(const std::filesystem::path& root,
                      const std::string& file_rel,
                      const std::vector<task_spec>& tasks, const config& cfg);

/// `file` relative to `root` when it lies inside, else absolute.
std::string relative_to(const std::filesystem::path& root,
                        const std::string& file);

/// Loads run `run_id` from `db` exactly as a driver resuming it does,
/// without changing anything: parses its file and added files with `cfg`,
/// and matches their tasks with the ledger's. The caller holds the run lock
/// (so nobody changes the run meanwhile). Throws setup_error when the run
/// is unknown, a file cannot be read or parsed, or the files no longer hold
/// the run's tasks.
loaded_run load_run(const std::filesystem::path& root, const store::ledger& db,
                    const std::string& run_id, const config& cfg);

/// What to open.
struct open_options {
  /// The repository's top folder.
  std::filesystem::path root;
  /// The task file (as given); empty = resume the latest unfinished run.
  std::string file;
  /// The effective config (command-line overrides applied).
  config cfg;
};

/// A run ready to be driven: the lock held, the leftovers of a killed
/// driver cleaned up, the ledger open and the run loaded (attempts a
/// killed driver cut short recorded interrupted).
struct opened_run {
  /// libgit2, initialised while the run is driven.
  std::unique_ptr<git::library> git_library;
  /// The main repository (for the git service).
  git::repository repo;
  store::run_lock lock;
  store::ledger db;
  /// The task file, relative to the repository.
  std::string file;
  std::string base_branch;
  loaded_run loaded;
  /// Worktrees of done tasks an earlier driver left: spares to reuse.
  std::vector<std::string> spares;
  /// The base tip the run vouched for when it stopped ("" for a new run):
  /// a move since is judged against it (src/git/base_guard.hpp).
  std::string vouched;
  /// Attempts were running (or merging) when the run stopped.
  bool busy = false;
};

/// A task of the file that an earlier run merged, with the same content:
/// a new run of the file does not run it again.
struct merged_before {
  std::string task_id;
  /// The run that merged it.
  std::string run_id;
  std::string merge_commit;
};

/// What open_run found.
struct open_result {
  /// The run to drive; empty when there is nothing to resume because the
  /// latest run completed (`completed_run` names it), or when every task
  /// of the file was merged before (`merged` lists them).
  std::optional<opened_run> run;
  std::optional<store::run_row> completed_run;
  /// A new run of a file whose last run ended: its tasks that were merged
  /// then and did not change since. The new run has them done (reason
  /// "already merged in run ID", the merge commit of then); when no other
  /// task is left, no run is created.
  std::vector<merged_before> merged;
};

/// Takes the run lock and prepares the run to drive (see the top of this
/// file). Throws setup_error for bad input or a lock held by another
/// process.
open_result open_run(const open_options& opts);

/// Co-change learning: counts every task that merged work of its own and
/// was not counted yet (see ledger::co_change_uncounted) with the files its
/// merge brought (the merge commit against its first parent). Counting is
/// idempotent, so a kill at any point loses nothing and counts nothing
/// twice. Returns how many tasks it counted. Call it holding the run lock.
size_t learn_co_changes(git::repository& repo, store::ledger& db);

/// learn_co_changes on the repository at `root` and its ledger, when
/// `cfg.run.co_change_learning` is on (a run just ended).
void learn_co_changes(const std::filesystem::path& root, const config& cfg);

/// The `.taskforce` folder of a repository.
std::filesystem::path state_dir(const std::filesystem::path& root);

/// Where the workers and gates of the repository at `root` are recorded
/// while they run (`.taskforce/procs/`, see proc::run_options).
std::filesystem::path worker_records(const std::filesystem::path& root);

/// Kills whatever the workers and gates of a killed driver of this
/// repository left running, in their groups or out of them, found by the
/// marks recorded before they started. Returns how many processes it
/// killed. Call it holding the run lock.
size_t kill_leftover_workers(const std::filesystem::path& root);

} // namespace taskforce::run
