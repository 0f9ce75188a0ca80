// Linked worktrees for task attempts: create one per task branch, reuse a
// merged one cheaply, list what changed in it, commit it, remove it.
//
// Rule kept by every function here: a worktree that holds work (uncommitted
// changes, untracked files, or commits not reachable from the base) is never
// reset, cleaned or deleted unless the caller says `force` explicitly (the
// user's `taskforce discard`).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "src/git/repository.hpp"

namespace taskforce::git {

/// A linked worktree of the main repository.
struct worktree_info {
  /// The admin name under `.git/worktrees/` (no slashes).
  std::string name;
  /// The checkout's top folder.
  std::filesystem::path path;
  /// The branch checked out there (short name), "" when detached.
  std::string branch;
  /// The commit checked out there, "" when unborn.
  std::string head;
  /// Set aside by keep_worktree: never reused, reset or removed, except
  /// on the user's word.
  bool kept = false;
};

/// A worktree admin name derived from a branch name: characters other than
/// [A-Za-z0-9._-] become '-', and a short hash of the branch keeps two
/// branches that differ only in those characters apart
/// ("taskforce/r1/t2" -> "taskforce-r1-t2-1a2b3c").
std::string worktree_name_for(const std::string& branch);

/// Creates branch `branch` at `base_commit` and a linked worktree at `path`
/// checked out on it, named worktree_name_for(branch) (with "-2", "-3"...
/// when a reused worktree still holds that name). When the branch already
/// exists, it is reset to `base_commit` only if its tip is already merged
/// into `base_commit`; otherwise this throws (its work is kept). Throws when
/// the branch is checked out elsewhere, or when `path` exists and is not
/// empty (a folder left with just the `.git` link of a registration a kill
/// cut short counts as empty).
///
/// Caution for callers: a branch just created sits at the base, so
/// merged_commit finds it "merged" before any work is committed on it.
/// Record the base a branch was created at and treat the task as done only
/// when the branch tip differs from it (or the worker reported no change).
worktree_info create_worktree(repository& repo,
                              const std::filesystem::path& path,
                              const std::string& branch,
                              const std::string& base_commit);

/// What reuse_worktree did.
struct reuse_result {
  /// Why a worktree was or was not reused.
  enum class outcome {
    /// Reset to the base on the new branch; ready for the next task.
    reused,
    /// `path` is not a valid linked worktree of this repository: create a
    /// fresh one instead (after removing the folder if it is empty junk).
    not_a_worktree,
    /// Uncommitted or untracked changes are there (listed in `paths`).
    uncommitted_work,
    /// Its HEAD (in `commit`) is not merged into the new base.
    unmerged_work,
    /// The target branch exists with commits not merged into the base.
    branch_has_work,
  };
  /// What happened.
  outcome status = outcome::not_a_worktree;
  /// The branch checked out there before (for delete_branch once merged).
  std::string previous_branch;
  /// The worktree as it is now.
  worktree_info worktree;
  /// For uncommitted_work: the changed paths.
  std::vector<std::string> paths;
  /// For unmerged_work and branch_has_work: the unmerged commit.
  std::string commit;
};

/// The fast path for the next task: a clean worktree at `path` whose HEAD is
/// merged into `base_commit` is switched to a new branch `branch` at
/// `base_commit` and its files are brought to that commit, rewriting only
/// the files that differ (like `git checkout -f -B branch base` followed by
/// `git clean -fd`, without a fresh checkout). Ignored files are kept. Any
/// work in the worktree makes it refuse and change nothing. A reuse cut
/// short by a kill leaves a marker in the worktree's admin folder; the next
/// reuse_worktree (or remove_worktree) of that worktree knows its
/// half-switched files are no one's work and finishes (or removes) it.
reuse_result reuse_worktree(repository& repo, const std::filesystem::path& path,
                            const std::string& branch,
                            const std::string& base_commit);

/// Every path that differs from HEAD in a worktree (repository-relative,
/// sorted, unique): modified, added, deleted, type-changed, both sides of a
/// rename, untracked files (untracked folders are listed file by file), in
/// the index or the working folder. Ignored files are not listed.
std::vector<std::string> changed_paths(repository& worktree);

/// A checkout as it was before an attempt that runs in it in place: where
/// HEAD pointed, and every path that differed from HEAD then with what the
/// index and the file held (the user's uncommitted work, an earlier task's
/// changes in assist mode).
struct checkout_snapshot {
  /// Where HEAD pointed.
  head_info head;
  /// Each path changed_paths listed, with a fingerprint of its index entry
  /// and its file (content hash, type, executable bit).
  std::map<std::string, std::string> dirty;
};

/// Takes the snapshot of a checkout (the main one, or a worktree).
checkout_snapshot take_snapshot(repository& checkout);

/// Each path changed_paths lists, with its fingerprint (as in
/// checkout_snapshot::dirty).
std::map<std::string, std::string> fingerprints(repository& checkout);

/// What changed in the checkout since `before` (sorted, unique): every
/// path whose index entry or file differs from the snapshot's (one that
/// was clean counts as changed once it differs from HEAD), and every path
/// the commits between the snapshot's HEAD and HEAD's commit now changed.
/// Ignored files are not looked at. `seen`, when given, receives the
/// fingerprints of every path that differs from HEAD now.
std::vector<std::string>
changed_since(repository& checkout, const checkout_snapshot& before,
              std::map<std::string, std::string>* seen = nullptr);

/// Stages every change (additions, modifications, deletions; ignored files
/// stay out) and commits it on the worktree's branch with `message`.
/// Returns the new tip, or the unchanged tip when there was nothing to
/// commit. On an unborn branch it creates the root commit.
std::string commit_all(repository& worktree, const std::string& message,
                       const signature& author = {});

/// Like commit_all, but stages only `paths` (repository-relative; a path
/// whose file is gone is staged as deleted); other changes stay as they
/// are. For tasks run in place in the main checkout, committing just their
/// scope. Returns the new tip, or the unchanged tip when the staged tree
/// equals HEAD's.
std::string commit_paths(repository& repo,
                         const std::vector<std::string>& paths,
                         const std::string& message,
                         const signature& author = {});

/// Commits exactly `paths` (repository-relative, as they are on disk; a
/// path whose file is gone is committed as deleted) on top of HEAD, and
/// updates only their index entries: whatever else is staged or changed
/// stays out of the commit and as it was. For tasks run in place in the
/// main checkout, committing just their scope. Returns the new tip, or
/// the unchanged tip when nothing differs from HEAD. Throws on an unborn
/// branch.
std::string commit_only(repository& repo, const std::vector<std::string>& paths,
                        const std::string& message,
                        const signature& author = {});

/// Marks the linked worktree at `path` as kept (worktree_info::kept): an
/// attempt moved its HEAD, so what it holds is nobody's to reuse. The
/// mark lives in the worktree's admin folder and lasts as long as it.
/// False when no worktree is at `path`.
bool keep_worktree(repository& repo, const std::filesystem::path& path);

/// The linked worktrees of `repo` (not the main checkout).
std::vector<worktree_info> list_worktrees(repository& repo);

/// Removes a linked worktree named by its admin name or its path: the
/// folder and its admin entry. Without `force` it refuses (throws) when the
/// worktree holds uncommitted or untracked changes. Its branch is kept (see
/// delete_branch). False when no such worktree exists.
///
/// With `defer_deletion` the folder is moved (atomically, in no time) into
/// the repository's trash and its files are deleted later by empty_trash:
/// unlinking thousands of files that have reached the disk costs seconds
/// here (about 4 s for 2,000 files on an ext4 mounted with `discard`), and
/// a run need not wait for it. Falls back to deleting at once when the
/// trash is on another filesystem.
bool remove_worktree(repository& repo, const std::string& name_or_path,
                     bool force = false, bool defer_deletion = false);

/// Deletes what remove_worktree(..., defer_deletion) moved to the trash
/// (`<git common dir>/taskforce-trash/`), also what a killed process left
/// there. Returns how many removed worktree folders it deleted.
size_t empty_trash(repository& repo);

/// Drops admin entries of worktrees whose folder is gone, and unfinished
/// ones a kill left in the middle of creating a worktree; returns their
/// names.
std::vector<std::string> prune_worktrees(repository& repo);

} // namespace taskforce::git
