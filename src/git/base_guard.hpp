// Who moved the base branch. A run vouches for one tip of its base at a
// time: where it found the base, where its own merges left it, where it
// accepted a person's commits. When the base is somewhere else, look_at_base
// tells how it moved (forward: new commits; backward or sideways: the base
// lost commits) and what can be told of who moved it:
//
//   - a task of the run, when a new commit on the base's first-parent line
//     is reachable from one of the run's task refs (a task's branch, the
//     HEAD of its worktree or of its merge-check worktree, a ref taskforce
//     kept for it), or when the reflog entry of the move carries the
//     task's tag (every process taskforce starts for a task has
//     GIT_REFLOG_ACTION set to it, and git writes it into the reflog of
//     each ref that process moves);
//   - a merge of a task's work (`merged`), when a task's commits came in
//     through a merge's second parent: a person's hand merge of a branch in
//     review, or not, depending on when it was made (the caller knows);
//   - nobody that can be told (`unknown`), when an entry has no message
//     (`git update-ref` writes none), claims to be taskforce's own, or when
//     the reflog does not lead back to the vouched tip (no reflog kept);
//   - a person, when every entry since the vouched tip is one a person's
//     git command writes (`commit: …`, `merge …`, `reset: moving to …`).
//
// Blocks (libgit2). Throws git::error.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "src/git/repository.hpp"

namespace taskforce::git {

/// GIT_REFLOG_ACTION for the processes of task `task_id` of run `run_id`:
/// `taskforce task <run>/<task>`.
std::string reflog_tag(const std::string& run_id, const std::string& task_id);

/// How the base moved away from the tip the run vouched for.
struct base_move {
  enum class kind : uint8_t {
    /// It did not.
    none,
    /// Fast-forward: the vouched tip is in the new one's history.
    forward,
    /// The base lost commits: moved back, or sideways (or was deleted).
    backward,
  };
  kind what = kind::none;
  /// The tip vouched for, and where the base is now ("" when deleted).
  std::string from;
  std::string to;
  /// Forward: the new commits; backward: the commits the base lost. Newest
  /// first, as `<12 hex> <subject>`, at most `shown_commits`.
  std::vector<std::string> commits;
  /// How many there are in all (at most `counted_commits`).
  size_t count = 0;
  /// Tasks of the run that made it (their refs have its commits on the
  /// first-parent line, or the reflog names them).
  std::set<std::string> tasks;
  /// Tasks whose commits came in through a merge (not on the first-parent
  /// line).
  std::set<std::string> merged;
  /// Some of it was made by someone who cannot be told (see the file
  /// comment).
  bool unknown = false;
  /// The reflog's words for the move, newest first (`commit: fix`).
  std::vector<std::string> entries;
};

/// The most commits a base_move lists, and counts.
constexpr size_t shown_commits = 5;
constexpr size_t counted_commits = 1000;

/// How `base_branch` moved away from `vouched`, and what tells who moved
/// it (see the file comment); `run_id` names the run whose task refs and
/// tags count.
base_move look_at_base(repository& repo, const std::string& base_branch,
                       const std::string& vouched, const std::string& run_id);

/// The move in words: `main moved forward from 1a2b3c4d5e6f to …: 1 new
/// commit (…) by t1 (its branch has it)`.
std::string describe(const base_move& m, const std::string& base_branch);

} // namespace taskforce::git
