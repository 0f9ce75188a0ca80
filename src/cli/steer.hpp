// Shared pieces of the commands that read and steer a run through the
// ledger (status, list, logs, diff, abort, discard, and inbox / report
// from inside a worker), also while another process drives it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "src/store/ledger.hpp"

namespace taskforce::cli {

/// Opens the repository's ledger (read-only unless `write`); throws
/// usage_error when the repository has never run anything.
store::ledger open_ledger(const std::filesystem::path& root, bool write);

/// The repository's ledger opened read-only, or nullopt when the repository
/// has never run anything (for the commands where none is an answer).
std::optional<store::ledger>
open_ledger_if_any(const std::filesystem::path& root);

/// The run a command means: `--run ID` when given, else the latest
/// unfinished run, else the latest run. Throws usage_error when none.
store::run_row pick_run(const store::ledger& db, const std::string& run_id);

/// Where the worktree recorded for `t` stands now.
struct task_worktree {
  /// The folder still holds t's work: it exists, and its HEAD is not on
  /// another task's branch.
  bool here = false;
  /// When not: the taskforce branch the folder holds now (a worktree goes
  /// to the next task once its work is merged), or "" when it is gone.
  std::string reused_for;
};

/// Where `t`'s recorded worktree stands; nullopt when it has none.
std::optional<task_worktree> worktree_of(const store::task_row& t);

/// Whether a process drives a run in this repository right now, and which.
std::optional<std::string> driver_of(const std::filesystem::path& root);

/// The task a command run inside a worker (or gate) process works for,
/// from the environment taskforce gives every such process.
struct worker_env {
  /// TASKFORCE_REPO: the main repository, whose ledger holds the run.
  std::filesystem::path repo;
  /// TASKFORCE_RUN_ID.
  std::string run_id;
  /// TASKFORCE_TASK_ID.
  std::string task_id;
  /// TASKFORCE_ATTEMPT, when set.
  std::optional<int> attempt;
};

/// The worker environment of `command` (`inbox`, `report`). Throws
/// usage_error naming what is missing or wrong outside a worker.
worker_env worker_environment(const std::string& command);

/// Opens the ledger of `w.repo` for writing and checks that it has the
/// run and task `w` names; throws usage_error naming what is not there.
store::ledger open_worker_ledger(const worker_env& w,
                                 const std::string& command);

} // namespace taskforce::cli
