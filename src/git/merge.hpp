// Merging a task branch into the base branch, recognising merges done
// elsewhere, and completing a checkout update cut short by a crash.
//
// merge_into_base orders its writes so that a kill at any instant leaves a
// state that is either untouched or completed by complete_checkout:
//   1. merge in memory (no MERGE_HEAD, no half-merged index ever appears),
//   2. refuse if the update would overwrite tracked edits in the checkout,
//   3. write the merge commit object (unreachable until step 4),
//   4. write down the landing (the merge, the tip it replaces, the paths it
//      changes) in the caller's journal, durably,
//   5. move the base ref with compare-and-swap (the commit point),
//   6. update index and files of the main checkout, only for the paths the
//      merge changed and only where they still hold the base's content,
//      then tell the journal the landing is over.
// After a kill between 5 and 6 the journal holds the one landing whose
// checkout update is unfinished, and complete_checkout finishes exactly that
// one; nothing else in the checkout is ever taken for a half-done update.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/git/repository.hpp"

namespace taskforce::git {

/// What merge_into_base did.
struct merge_result {
  /// The kinds of outcome.
  enum class outcome {
    /// A new merge commit is the base's tip (in `commit`).
    merged,
    /// The branch tip was already reachable from the base; `commit` is the
    /// first commit on the base's first-parent line containing it.
    already_merged,
    /// The merge conflicts in `paths`; nothing was written.
    conflict,
    /// Tracked files in the main checkout that the merge would overwrite
    /// hold uncommitted changes (or untracked files are in the way); listed
    /// in `paths`; nothing was written.
    dirty_checkout,
    /// land_merge: the base is no longer where the candidate was made on
    /// (or moved while it landed); nothing was written.
    stale,
  };
  /// What happened.
  outcome status = outcome::conflict;
  /// The merge commit (merged, already_merged).
  std::string commit;
  /// Conflicting or dirty paths.
  std::vector<std::string> paths;
  /// For merged: paths whose checkout update was skipped because the user
  /// edited them between the check and the update (rare; they stay as the
  /// user left them, and git status shows them as changed).
  std::vector<std::string> skipped;
  /// For merged: why the checkout could not be updated at all (e.g. the
  /// user's git held index.lock), empty when it was. The merge itself is
  /// done; call complete_checkout once the obstacle is gone.
  std::string checkout_error;
};

/// The name of an outcome ("merged", "conflict", ...).
const char* to_string(merge_result::outcome x);

/// A merge on its way onto the base: what the update of the main checkout
/// after the base moved needs, and nothing more.
struct checkout_update {
  /// The merge commit the base moves to.
  std::string commit;
  /// The tip it replaces (the merge's first parent).
  std::string base;
  /// The paths the merge changes against `base` (empty when the base is
  /// not checked out in the main checkout: nothing there follows it).
  std::vector<std::string> paths;
  /// Whose merge it is (a task's id), for the journal; may be empty.
  std::string task;
};

/// Where land_merge writes down a landing before the base moves, and its
/// end: the durable record from which a kill's unfinished checkout update
/// is completed, and only that one (the run's ledger in production).
class landing_journal {
 public:
  virtual ~landing_journal();
  /// Durable when it returns; the base has not moved yet. A throw stops
  /// the landing before anything is written.
  virtual void landing(const checkout_update& u) = 0;
  /// The landing is over: the base moved and the checkout followed
  /// (`moved`), or the base never moved. A throw is ignored: the landing
  /// then stays in the journal, and completing it again changes nothing.
  virtual void landed(const checkout_update& u, bool moved) = 0;
};

/// Merges local branch `branch` into local branch `base_branch` as a merge
/// commit with the base tip as first parent and the branch tip as second,
/// never a fast-forward, then updates the main checkout when `base_branch`
/// is checked out there. See the file comment for the order of writes.
/// Throws `error` only for failures other than conflicts and dirtiness
/// (a missing branch, I/O, a ref lock held by someone else, the base
/// checked out in a linked worktree), and then the base has not moved.
merge_result merge_into_base(repository& repo, const std::string& branch,
                             const std::string& base_branch,
                             const std::string& message,
                             const signature& committer = {},
                             landing_journal* journal = nullptr);

/// A merge made but not landed: the commit object exists, no ref points
/// at it yet.
struct merge_candidate {
  /// merged: `commit` is the candidate (its parents the base tip and the
  /// branch tip); already_merged: `commit` as merge_result says; conflict:
  /// `paths`. Never dirty_checkout or stale.
  merge_result::outcome status = merge_result::outcome::conflict;
  std::string commit;
  /// The base tip and the branch tip it was made from.
  std::string base;
  std::string tip;
  std::vector<std::string> paths;
};

/// Steps 1 and 3 of merge_into_base: the merge of `branch` into the tip of
/// `base_branch`, made in memory and written as a commit object that
/// nothing refers to yet. The checkout and every ref stay as they are, so
/// the result can be checked (its gate run) before land_merge.
merge_candidate prepare_merge(repository& repo, const std::string& branch,
                              const std::string& base_branch,
                              const std::string& message,
                              const signature& committer = {});

/// Steps 2, 4 and 5 of merge_into_base for a candidate of prepare_merge:
/// `base_branch` moves to exactly `candidate` only while it is still at the
/// candidate's first parent and, when `branch_tip` is given, the
/// candidate's second parent is `branch_tip` (stale otherwise, nothing
/// written); never over uncommitted edits in the checkout
/// (dirty_checkout). With a `journal`, the landing is written down there
/// before the base moves (see the file comment). Throws as merge_into_base
/// does.
merge_result land_merge(repository& repo, const std::string& candidate,
                        const std::string& base_branch,
                        const std::string& branch_tip = "",
                        landing_journal* journal = nullptr);

/// If `branch_tip` is reachable from `base_branch`, the first (oldest)
/// commit on the base's first-parent line that contains it; nothing
/// otherwise. Recognises merges done by hand with the git CLI.
std::optional<std::string> merged_commit(repository& repo,
                                         const std::string& branch_tip,
                                         const std::string& base_branch);

/// What complete_checkout did.
struct checkout_repair {
  /// False when the update is not for this checkout any more: HEAD is not
  /// on the base branch, or the base is not at the update's merge (it
  /// never moved there, or moved on since). Nothing was touched then.
  bool applies = false;
  /// Paths brought to the merge's content in the index and the files.
  std::vector<std::string> updated;
  /// Paths left alone, index and file, because they hold neither the
  /// base's version nor the merge's (the user changed them).
  std::vector<std::string> kept;
};

/// Recovery after a kill between moving the ref and updating the checkout,
/// for the one landing `u` the journal holds unfinished: when HEAD is on
/// `base_branch` and the branch is at `u.commit`, each of `u.paths` whose
/// index entry and file both still hold the base's version (or already the
/// merge's) is brought to the merge's version. A path whose index entry or
/// file holds anything else is not touched at all, and no other path is
/// ever looked at. A no-op on a checkout that is up to date.
checkout_repair complete_checkout(repository& repo,
                                  const std::string& base_branch,
                                  const checkout_update& u);

/// Applies the change from commit `from` to commit `to` to the files of
/// `repo`'s checkout, leaving it uncommitted and unstaged (assist mode:
/// the user reviews and commits). All or nothing: when any change does not
/// apply to the files as they are, nothing is written and this throws,
/// naming the path. Returns the paths it changed.
std::vector<std::string> apply_to_checkout(repository& repo,
                                           const std::string& from,
                                           const std::string& to);

/// A patch text (`git diff` format) from commit `from` to commit `to`; with
/// `to` empty, from `from` to the index and files of `repo`'s checkout,
/// untracked files shown as added. For `taskforce diff TASK`: pass the
/// merge base of the task branch and the base as `from`.
std::string diff_text(repository& repo, const std::string& from,
                      const std::string& to = "");

} // namespace taskforce::git
