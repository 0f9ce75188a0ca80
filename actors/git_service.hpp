// The git service: the one writer of the main repository. Every operation
// that changes the repository's refs, its object store on behalf of a task,
// or the main checkout goes through this actor, one at a time, on its own
// thread (libgit2 blocks, so the actor is detached). It is a shell over the
// run's git::workspace (src/git/workspace.hpp): the worktree leases, the
// checks of what each attempt brings, the merges.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

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
  /// The ledger, where the service writes down its landings and the base
  /// tips it vouches for, on a connection of its own (empty: nowhere).
  std::filesystem::path ledger_file;
  /// The base tip the run vouched for when it stopped, and whether attempts
  /// ran then (see git::workspace::guard).
  std::string vouched;
  bool busy = false;
  /// Files the run writes in the main checkout itself (its task file's
  /// boxes, its progress file).
  std::vector<std::string> run_files;
};

/// Spawns the git service (detached).
git_actor spawn_git_service(caf::actor_system& sys, git_service_setup setup);

} // namespace taskforce
