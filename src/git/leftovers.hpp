// What runs that are over left in the repository: task worktrees, task
// branches, folders under `.taskforce/` that no worktree uses, and worktree
// records whose folder is gone. `taskforce clean` lists and removes them;
// `taskforce status` counts them.
//
// A leftover belongs to a run (from its branch `taskforce/<run>/<task>` or
// its folder `.taskforce/worktrees/<run>/...`); the leftovers of a run that
// can still continue (running or paused) are that run's, never listed, and
// so is anything whose run id the ledger does not know and that is not
// shaped like one (a user's branch `taskforce/fix/parser`).
// Each says whether it holds work: uncommitted or untracked files, commits
// its run's base branch does not have, a worktree set aside after an
// attempt moved its HEAD, or files in a folder that is no worktree. Only
// what holds no work goes without `force`.
//
// Blocks (libgit2).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "src/git/repository.hpp"

namespace taskforce::git {

/// What the ledger knows of a run, for judging its leftovers.
struct run_facts {
  /// The branch its tasks merge into.
  std::string base_branch;
  /// Running or paused: a resume still needs its worktrees and branches.
  bool unfinished = false;
};

/// One thing a run left behind.
struct leftover {
  enum class kind {
    /// A linked worktree (and the branch checked out there).
    worktree,
    /// A task branch checked out nowhere.
    branch,
    /// A folder under `.taskforce/worktrees/` or `.taskforce/merge-check/`
    /// that is no worktree.
    folder,
    /// A worktree record whose folder is gone.
    record,
  };
  kind what = kind::worktree;
  /// The run it belongs to ("" when its name says none).
  std::string run_id;
  /// The folder (worktree, folder); empty for a branch.
  std::filesystem::path path;
  /// The branch (branch; a worktree's checked-out branch, "" when detached).
  std::string branch;
  /// The worktree record's name (record).
  std::string name;
  /// The work it holds, in words ("" = none: safe to remove).
  std::string work;
};

/// "worktree", "branch", "folder", "record".
const char* to_string(leftover::kind k);

/// The leftovers of `repo` (its top folder is `root`), given what the
/// ledger knows of each run by id. A run the ledger does not know (a
/// ledger removed by hand) counts as over, with the branch checked out in
/// the main checkout as its base.
std::vector<leftover>
find_leftovers(repository& repo, const std::filesystem::path& root,
               const std::map<std::string, run_facts>& runs);

/// Removes `l` (a worktree with its branch when that is a task branch);
/// one holding work only with `force`. Returns false when it held work
/// and `force` was not given (nothing changed). Throws git::error or
/// std::filesystem::filesystem_error when removing fails.
bool remove_leftover(repository& repo, const leftover& l, bool force);

} // namespace taskforce::git
