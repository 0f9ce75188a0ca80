// The verifier's scratch checkout: a task's work copied into a worktree of
// its own, so an independent agent run can read it (and run whatever it
// likes) while nothing it does reaches the task. What it changed there is
// listed and thrown away with the checkout.
//
// The scratch lives at `.taskforce/review/<run>/<task>` on a branch
// `taskforce-review/<run>/<task>` at the commit the task's checkout has
// checked out (its branch tip; in place, HEAD of the main checkout). The
// task's changed paths are copied over as they are on disk (a path gone
// there is deleted), so the scratch shows exactly the task's work as
// uncommitted changes. A scratch left by a killed process holds nothing of
// value: opening the task's next review, or remove_reviews, drops it.
//
// Blocks (libgit2); one owner, one thread. Failures throw git::error or
// std::runtime_error.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "src/git/repository.hpp"
#include "src/git/worktree.hpp"

namespace taskforce::git {

/// `taskforce-review/<run>/<task>`.
std::string review_branch(const std::string& run_id,
                          const std::string& task_id);

/// A scratch checkout with a task's work in it.
struct review_checkout {
  /// Its top folder.
  std::filesystem::path path;
  /// Its branch.
  std::string branch;
  /// The task's work as a patch: the scratch against the point where the
  /// task's checkout forked from `base_branch`.
  std::string diff;
  /// The scratch as the reviewer gets it.
  checkout_snapshot before;
  /// Every other local branch and its tip as the reviewer starts: the
  /// scratch shares the repository's refs, so a branch it moves is put
  /// back.
  std::map<std::string, std::string> branches;
};

/// Makes the scratch of task `task_id` from the checkout it runs in
/// (`checkout`) and its changed paths (`paths`, repository-relative, as the
/// last check of the attempt listed them).
review_checkout open_review(repository& repo, const std::filesystem::path& root,
                            const std::string& run_id,
                            const std::string& task_id,
                            const std::filesystem::path& checkout,
                            const std::vector<std::string>& paths,
                            const std::string& base_branch);

/// What the reviewer changed in the scratch (sorted), then removes it and
/// its branch. A local branch it moved, made or deleted elsewhere is put
/// back as it was and listed as `branch NAME`.
std::vector<std::string> close_review(repository& repo,
                                      const review_checkout& review);

/// Removes the scratch of one task (`task_id`), or of every task of the run
/// (empty `task_id`), with its branch; returns how many were removed.
size_t remove_reviews(repository& repo, const std::string& run_id,
                      const std::string& task_id = "");

} // namespace taskforce::git
