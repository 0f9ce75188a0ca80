// The git service: the one writer of the main repository. Every operation
// that changes the repository's refs, its object store on behalf of a task,
// or the main checkout goes through this actor, one at a time, on its own
// thread (libgit2 blocks, so the actor is detached).
//
// Worktrees live at `.taskforce/worktrees/<run>/<task>` on branches
// `taskforce/<run>/<task>`, created from the current tip of the base branch
// so a dependent sees its dependencies' merged work. A worktree whose work
// is merged is kept as a spare and reset to the next task's base (rewriting
// only the files that differ) instead of paying for a fresh checkout; a
// worktree holding work that is not merged is never reset or deleted (only
// `discard` does that, on the user's word).
//
// It also answers, for each check of an attempt, what the attempt brings:
// in a worktree, every path between the fork from the base and the branch
// tip plus the working tree; in place, what changed since a snapshot taken
// before the attempt. A worktree whose HEAD left the task's branch (or
// whose branch no longer descends from where the attempt began), or a
// main checkout whose HEAD moved, fails the attempt: the work is pinned
// under `refs/taskforce/kept/<run>/<task>/attempt-N`, the worktree is
// never reused, and the branch is put back where the attempt began.
#pragma once

#include <filesystem>
#include <set>
#include <string>

#include <caf/fwd.hpp>

#include "messages/interfaces.hpp"
#include "src/git/repository.hpp"

namespace taskforce {

/// What the git service needs.
struct git_service_setup {
  /// The main repository, opened by the command (its housekeeping done).
  git::repository repo;
  /// The repository's top folder.
  std::filesystem::path root;
  /// The branch tasks merge into.
  std::string base_branch;
  /// The run whose task branches this service manages.
  std::string run_id;
  /// Keep merged worktrees as spares for the next task.
  bool reuse_worktrees = true;
  /// Worktrees that may be spares (of tasks done earlier); each is reused
  /// only if it is clean and merged.
  std::vector<std::filesystem::path> spares;
};

/// Spawns the git service (detached).
/// Removes the worktrees and branches of run `run_id` whose work is merged
/// into `base_branch` and that are clean and not `leased`; anything holding
/// work stays. Runs at the end of a run, and again on `resume` when a run
/// was killed after it completed but before this cleanup.
void remove_merged_leftovers(git::repository& repo,
                             const std::string& base_branch,
                             const std::string& run_id,
                             const std::set<std::string>& leased);

git_actor spawn_git_service(caf::actor_system& sys, git_service_setup setup);

/// `taskforce/<run>/<task>`.
std::string task_branch(const std::string& run_id, const std::string& task_id);

/// `<root>/.taskforce/worktrees/<run>/<task>`.
std::filesystem::path task_worktree(const std::filesystem::path& root,
                                    const std::string& run_id,
                                    const std::string& task_id);

/// Commits, in the main checkout's current branch, the changed paths that
/// lie inside `scope` (every changed path for a task without files): a task
/// that ran in place. Nothing else that is changed or staged goes in.
/// Returns the new commit, or "" when nothing in scope changed.
std::string commit_in_place(git::repository& repo,
                            const std::vector<std::string>& scope,
                            const std::string& message);

} // namespace taskforce
