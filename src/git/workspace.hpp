// The workspace of one run: the task worktrees of the main repository, and
// what each attempt may bring into the base branch. The git service actor is
// a thin shell over it (it owns one on its own thread).
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
// before the attempt. Attempts of tasks whose scopes are disjoint may run in
// place in one checkout at once: a change is the attempt's whose scope
// holds the path; a change that lies in the scope of another attempt open
// meanwhile is that one's to answer for; a change in nobody's scope is
// every checking attempt's (each that could have made it fails for it).
// What an in-place task commits must be what its last check saw: a path
// of its scope changed since (by a neighbour) stops the commit. A worktree
// whose HEAD left the task's branch (or whose branch no longer descends from
// where the attempt began), or a main checkout whose HEAD moved, fails the
// attempt: the work is pinned under
// `refs/taskforce/kept/<run>/<task>/attempt-N`, the worktree is never reused,
// and the branch is put back where the attempt began.
//
// The base branch moves only by the run's own merges. The workspace vouches
// for one tip of it at a time (where it found it, where its merges left it,
// where it accepted a person's commits) and looks at it as each attempt
// starts, at each check and before each merge (see base_guard.hpp for who
// moved it). A person's new commits are accepted. Anything else (a move the
// base lost commits by, commits of the run's tasks, moves that leave no name
// while the run's workers and gates ran) is refused: what the run made is
// put back (its commits kept under `refs/taskforce/kept/<run>/…`), and the
// attempts that answer for it fail with base_moved, so the run pauses. A
// worktree attempt also answers for the main checkout: a change there
// between the attempt's start and its check (the run's own merges and
// writes aside) fails it.
//
// Blocks (libgit2); one owner, one thread. Failures throw git::error or
// std::runtime_error.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "src/git/base_guard.hpp"
#include "src/git/merge.hpp"
#include "src/git/repository.hpp"
#include "src/git/worktree.hpp"
#include "src/scope/coverage.hpp"

namespace taskforce::git {

/// `taskforce/<run>/<task>`.
std::string task_branch(const std::string& run_id, const std::string& task_id);

/// `<root>/.taskforce/worktrees/<run>/<task>`.
std::filesystem::path task_worktree(const std::filesystem::path& root,
                                    const std::string& run_id,
                                    const std::string& task_id);

/// Removes the worktrees and branches of run `run_id` whose work is merged
/// into `base_branch` and that are clean and not `leased`; anything holding
/// work stays. Runs at the end of a run, and again on `resume` when a run
/// was killed after it completed but before this cleanup.
void remove_merged_leftovers(repository& repo, const std::string& base_branch,
                             const std::string& run_id,
                             const std::set<std::string>& leased);

/// Where an attempt works.
struct lease {
  /// The directory the worker runs in.
  std::string path;
  /// `taskforce/<run>/<task>`.
  std::string branch;
  /// The worktree was reused (kept from an interrupted attempt, or a clean
  /// merged one reset to the new base).
  bool reused = false;
  /// The commit the branch is at as the attempt begins: it must still
  /// descend from it when the attempt ends.
  std::string start;
};

/// Which attempt a check is for, and where it runs.
struct attempt_place {
  std::string run_id;
  std::string task_id;
  uint64_t attempt = 0;
  /// The checkout the attempt runs in: its worktree, or the main checkout.
  std::string checkout;
  /// The task's branch; empty when the attempt runs in place (it is then
  /// compared with the snapshot taken before it began).
  std::string branch;
  /// lease::start.
  std::string start;
};

/// What an attempt brings, or why its HEAD is not where it belongs.
struct attempt_changes {
  /// Every changed path (repository-relative, sorted).
  std::vector<std::string> paths;
  /// Empty when HEAD is where it belongs; else what moved, and where the
  /// work was kept (the attempt fails with it).
  std::string moved;
  /// Empty unless the base moved in a way the run refuses and this attempt
  /// answers for it (see the file comment): the move in words.
  std::string base_moved;
  /// In a worktree: what changed in the main checkout since the attempt
  /// began (sorted).
  std::vector<std::string> main_paths;
};

/// What to integrate.
struct integration_request {
  std::string task_id;
  std::string title;
  std::string worktree;
  /// Empty: the task ran in place; commit its scope in the main checkout.
  std::string branch;
  /// Remove the worktree and branch once merged (cleanupWorktrees).
  bool cleanup = true;
  /// The task's write scope: what an in-place task commits.
  std::vector<std::string> scope;
  /// Stop before the base moves: a new merge commit is only made and
  /// checked out in the run's scratch worktree (outcome prepared), so its
  /// gate can run there first. Nothing else changes how it ends.
  bool prepare = false;
  /// Land exactly this merge commit (of an earlier `prepare`): the base
  /// moves to it only while the base and the branch are where it was made
  /// from (outcome stale otherwise, nothing written).
  std::string expected;
  /// With `expected`: its gate failed; the task's branch and worktree move
  /// to it (the repair starts from the merge result) and nothing lands
  /// (outcome prepared, or stale).
  bool adopt = false;
};

/// How an integration ended.
struct integration {
  enum class outcome {
    /// A new commit on the base brought the task's work in.
    merged,
    /// The branch tip was already reachable from the base.
    already_merged,
    /// Nothing to merge: the task changed nothing.
    empty,
    /// The merge conflicts; `paths` name the files.
    conflict,
    /// The main checkout has tracked changes; `paths` name the files.
    dirty,
    /// Anything else; `message` says what.
    error,
    /// For check_merged: the task's work is not in the base.
    not_merged,
    /// For `prepare`: the merge commit is made (in `commit`) and checked
    /// out in the scratch worktree (`paths` holds its folder); the base has
    /// not moved.
    prepared,
    /// For `expected`: the base or the branch moved since the merge commit
    /// was made; nothing was written.
    stale,
    /// The base moved in a way the run refuses and this task answers for
    /// it; `message` says how; nothing was merged.
    base_moved,
  };
  outcome status = outcome::error;
  /// The base commit that brought the work in (merged, already_merged,
  /// empty: the base's tip).
  std::string commit;
  std::vector<std::string> paths;
  std::string message;
};

/// What the workspace makes durable about the base branch: its landings,
/// and each tip the run vouches for or move it refuses. The run's ledger in
/// production (src/run/base_record.hpp).
class base_journal : public landing_journal {
 public:
  /// The run vouches for the base at `tip` from now on; `why` says how it
  /// got there (`start`, `attempt`, `committed`, `accepted`), `task` and
  /// `attempt` name the attempt that starts on it (empty and 0 otherwise).
  virtual void vouch(const std::string& tip, const std::string& why,
                     const std::string& task, uint64_t attempt)
    = 0;
  /// The run refused move `m` (`what`: in words, with what was done).
  virtual void refused(const base_move& m, const std::string& what) = 0;
};

/// Commits, in the main checkout's current branch, the changed paths that
/// lie inside `scope` (every changed path for a task without files): a task
/// that ran in place. Nothing else that is changed or staged goes in.
/// Returns the new commit, or "" when nothing in scope changed; `committed`,
/// when given, receives the paths that went in. `changed`, when given, is
/// the checkout's changed paths as the caller just listed them (as
/// changed_paths does); else they are listed now.
std::string commit_in_place(repository& repo,
                            const std::vector<std::string>& scope,
                            const std::string& message,
                            std::vector<std::string>* committed = nullptr,
                            const std::vector<std::string>* changed = nullptr);

/// The run's worktrees and the checks of its attempts.
class workspace {
 public:
  /// Takes the main repository (its housekeeping done) and removes what a
  /// kill left half prepared. `spares` are worktrees of tasks done earlier;
  /// each is reused only if it is clean and merged.
  workspace(repository repo, std::filesystem::path root,
            std::string base_branch, std::string run_id, bool reuse_worktrees,
            const std::vector<std::filesystem::path>& spares);

  /// Where the base is vouched for and written down (see base_guard.hpp):
  /// `vouched` is the tip the run vouched for when it stopped (empty: the
  /// base as it is now), `busy` whether attempts were running then (a move
  /// that leaves no name is then the run's). A move since is judged now.
  /// `run_files` are written in the main checkout by the run itself, and
  /// never held against an attempt. Without a call: no journal, the base
  /// as it was when the workspace was made, nothing the run's own.
  void guard(base_journal* journal, const std::string& vouched, bool busy,
             std::vector<std::string> run_files);

  /// The tip the run vouches for.
  const std::string& vouched() const {
    return vouched_;
  }

  /// A worktree for attempt `attempt` of `task_id` on its branch: the kept
  /// one of an earlier attempt (unless `fresh`), a spare reset to the base
  /// tip, or a new one. `known_path` is where the ledger last saw it. The
  /// main checkout is watched from now until release().
  lease lease_worktree(const std::string& task_id, bool fresh,
                       const std::string& known_path, uint64_t attempt = 0);

  /// Remembers the checkout `place.checkout` as it is before the attempt
  /// runs in it in place, with the task's `scope` (its files); returns
  /// HEAD's commit. The attempt counts as open until release().
  std::string snapshot(const attempt_place& place,
                       std::vector<std::string> scope);

  /// The attempt ended. In place: its snapshot goes once no open attempt
  /// overlapped it (what it changed is still its to answer for in the
  /// checks of attempts it overlapped). In a worktree: the main checkout
  /// is no longer watched for it.
  void release(const attempt_place& place);

  /// What the attempt brings so far, or how its HEAD moved.
  attempt_changes check(const attempt_place& place);

  /// Commits a task's work and merges it into the base branch.
  integration integrate(const integration_request& req);

  /// Whether the task's work is in the base already (merged by hand while
  /// it waited in review): `merged` with the base commit that has it, or
  /// `not_merged`. Work still uncommitted in the task's worktree is not
  /// merged, whatever its branch says. Changes nothing.
  integration check_merged(const integration_request& req);

  /// Removes the task's worktree and branch, work and all; true if
  /// anything was removed.
  bool discard(const std::string& run_id, const std::string& task_id);

  /// The run is over: removes the clean, merged worktrees kept for reuse,
  /// and the scratch worktree where merge results were checked.
  void finish();

  /// `<root>/.taskforce/merge-check/<run>/<task>`: where a task's merge
  /// result is checked out for its gate (one per task: two merges may be
  /// checked at once).
  std::filesystem::path scratch_path(const std::string& task_id) const;

 private:
  bool is_worktree_at(const std::filesystem::path& path, std::string* branch);
  bool reusable(const std::filesystem::path& path);
  std::filesystem::path marker_for(const std::filesystem::path& wt) const;
  void drop_half_prepared();
  attempt_changes worktree_changes(repository& wt, const std::string& tip);
  attempt_changes check_worktree(const attempt_place& place);
  attempt_changes check_worktree_head(const attempt_place& place);
  lease make_lease(const std::string& task_id, bool fresh,
                   const std::string& known_path);
  attempt_changes check_in_place(const attempt_place& place);
  integration merge_task(const integration_request& req,
                         std::vector<std::string>& committed);
  std::string
  changed_after_check(const integration_request& req,
                      const std::map<std::string, std::string>& now);
  void checkout_scratch(const std::string& task_id, const std::string& commit);
  void drop_scratch();
  std::string observe_base(const std::string& observer);
  void accept_base(const std::string& tip, const std::string& why);
  void follow_in_main(const std::string& from, const std::string& to);
  std::vector<std::string> main_changes(const checkout_snapshot& before,
                                        uint64_t opened);
  bool attempts_open() const;

  /// The main repository.
  repository repo_;
  /// Its top folder.
  std::filesystem::path root_;
  /// The branch tasks merge into.
  std::string base_branch_;
  /// The run whose task branches this workspace manages.
  std::string run_id_;
  /// Keep merged worktrees as spares for the next task.
  bool reuse_;
  /// Clean worktrees whose work is merged, ready for the next task.
  std::deque<std::filesystem::path> spares_;
  /// Worktrees given to an attempt and not yet merged: never reused.
  std::set<std::string> leased_;
  /// An attempt running (or that ran) in place.
  struct in_place_attempt {
    std::string checkout;
    /// The task's files, and their coverage.
    std::vector<std::string> files;
    scope::coverage scope;
    /// The checkout as it was before the attempt.
    checkout_snapshot before;
    /// When it began and ended, on clock_; `closed` 0 while it is open.
    uint64_t opened = 0;
    uint64_t closed = 0;
  };
  /// By (task, attempt).
  std::map<std::pair<std::string, uint64_t>, in_place_attempt> in_place_;
  /// Ticks at each snapshot, check and release.
  uint64_t clock_ = 0;
  /// Per task run in place: every changed path of its scope, with its
  /// fingerprint, as its last check saw them (what it may commit).
  std::map<std::string, std::map<std::string, std::string>> checked_;
  void forget_closed();

  /// The tip the run vouches for (see guard()).
  std::string vouched_;
  /// clock_ when the base was last looked at.
  uint64_t seen_at_ = 0;
  /// clock_ when the last attempt (or merge-result gate) ended.
  uint64_t busy_until_ = 0;
  /// Where the base's records go; may be null.
  base_journal* journal_ = nullptr;
  /// What the run writes in the main checkout itself.
  std::vector<std::string> run_files_;
  /// An attempt in a worktree of its own, by task: the main checkout as it
  /// was when the attempt began.
  struct watched_attempt {
    uint64_t attempt = 0;
    checkout_snapshot main;
    uint64_t opened = 0;
    uint64_t closed = 0;
  };
  std::map<std::string, watched_attempt> watched_;
  /// The main checkout when a task's merge result was checked out for its
  /// gate, by task, until the result lands or is given up.
  std::map<std::string, std::pair<checkout_snapshot, uint64_t>> gate_watch_;
  /// Refused moves of the base not told yet to a task that answers for
  /// them, by task.
  std::map<std::string, std::string> base_news_;
};

} // namespace taskforce::git
