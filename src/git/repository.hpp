// The libgit2 layer's repository handle and the read-only questions the run
// engine asks of a repository (branches, ancestry, dirtiness), plus the two
// housekeeping writes it does before a run (exclude, stale locks).
//
// Threading: libgit2 allows one thread at a time per repository object. A
// `repository` is owned by one actor (the main repository's single writer,
// or a worker for its own worktree) and never shared. Every call blocks and
// belongs in a detached actor. Failures throw `git::error`.
//
// Commit ids cross this API as 40-hex-digit strings so they can be stored in
// the ledger and carried in messages unchanged.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "src/git/error.hpp"

struct git_repository;

namespace taskforce::git {

/// Keeps libgit2 initialised while alive (refcounted by libgit2 itself, so
/// nesting is cheap). `main` and benchmarks hold one for their lifetime.
class library {
 public:
  library();
  ~library();
  library(const library&) = delete;
  library& operator=(const library&) = delete;
};

/// An open repository or linked worktree; move-only, closes on destruction.
class repository {
 public:
  /// Takes ownership of an open libgit2 repository.
  explicit repository(git_repository* raw) noexcept : raw_(raw) {}
  repository(repository&& other) noexcept;
  repository& operator=(repository&& other) noexcept;
  repository(const repository&) = delete;
  repository& operator=(const repository&) = delete;
  ~repository();

  /// The libgit2 handle, still owned by this object.
  git_repository* get() const noexcept {
    return raw_;
  }

  /// The checkout's top folder (with a trailing '/' removed); throws for a
  /// bare repository.
  std::filesystem::path workdir() const;

  /// This checkout's own git folder (`.git`, or `.git/worktrees/<name>` for a
  /// linked worktree).
  std::filesystem::path git_dir() const;

  /// The folder shared by all worktrees (`.git` of the main checkout).
  std::filesystem::path common_dir() const;

  /// True for a linked worktree.
  bool is_worktree() const;

 private:
  git_repository* raw_;
};

/// Who a commit is by. Empty fields fall back to the repository's
/// `user.name` / `user.email`, then to "taskforce" <taskforce@localhost>.
struct signature {
  /// The author's and committer's name.
  std::string name;
  /// The author's and committer's email.
  std::string email;
};

/// Opens the repository or worktree whose top folder is `path` (no search
/// upwards).
repository open(const std::filesystem::path& path);

/// Opens the repository that contains `path`, searching upwards.
repository discover(const std::filesystem::path& path);

/// Creates a new repository at `path` whose unborn HEAD names
/// `initial_branch` (for the demo and tests).
repository init(const std::filesystem::path& path,
                const std::string& initial_branch = "main");

/// The short name of the branch HEAD points to ("main"), also when it is
/// unborn; throws when HEAD is detached.
std::string head_branch(repository& repo);

/// The commit HEAD points to, or nothing on an unborn branch.
std::optional<std::string> head_commit(repository& repo);

/// Where HEAD points.
struct head_info {
  /// The ref HEAD names ("refs/heads/main"); "" when HEAD is detached.
  std::string ref;
  /// The commit HEAD resolves to; "" on an unborn branch.
  std::string commit;
};

/// Where HEAD of `repo` (a checkout or a linked worktree) points now.
head_info head_of(repository& repo);

/// Points HEAD at `ref` (a full name, "refs/heads/main"), or detaches it at
/// `commit` when `ref` is empty. Only HEAD changes: the index and the files
/// stay as they are.
void point_head(repository& repo, const std::string& ref,
                const std::string& commit);

/// The tip of local branch `branch` (short name), or nothing when the branch
/// does not exist.
std::optional<std::string> branch_tip(repository& repo,
                                      const std::string& branch);

/// The commit a revision (`main`, `HEAD~2`, an id) names; throws when none.
std::string resolve(repository& repo, const std::string& revision);

/// True when `commit` is `of` or one of its ancestors (is merged into it).
bool is_ancestor(repository& repo, const std::string& commit,
                 const std::string& of);

/// The best common ancestor of two commits, or nothing when unrelated.
std::optional<std::string> merge_base(repository& repo, const std::string& a,
                                      const std::string& b);

/// Paths (repository-relative, sorted, unique) that differ between the
/// trees of commits `from` and `to`: both sides of every change, renames
/// as a deletion and an addition.
std::vector<std::string>
paths_between(repository& repo, const std::string& from, const std::string& to);

/// Keeps `commit` reachable under the ref `name` ("refs/taskforce/kept/
/// ..."), or under `name-2`, `name-3`... when a ref of that name already
/// points elsewhere. Returns the name used.
std::string pin_commit(repository& repo, const std::string& name,
                       const std::string& commit);

/// Paths (repository-relative, sorted) whose tracked content differs from
/// HEAD in the index or the working folder: staged or unstaged
/// modifications, deletions, type changes, and conflicts. Untracked and
/// ignored files are not listed. Used to refuse a run on a dirty main
/// checkout and a merge that would overwrite a user's edit.
std::vector<std::string> dirty_tracked_paths(repository& repo);

/// Adds `pattern` as a line of the shared `info/exclude` unless a line
/// equal to it is already there. Returns true when it added the line.
bool ensure_excluded(repository& repo, const std::string& pattern);

/// Removes lock files a killed git process left behind: index.lock of the
/// main checkout and of every linked worktree, HEAD/ORIG_HEAD/MERGE_HEAD
/// locks, ref and reflog locks, packed-refs.lock, config.lock, shallow.lock.
/// The caller guarantees that no other writer runs. Returns the removed
/// files.
std::vector<std::filesystem::path> clear_stale_locks(repository& repo);

/// A local branch with its tip.
struct branch_info {
  /// Short name, e.g. "taskforce/r1/t2".
  std::string name;
  /// Tip commit.
  std::string tip;
};

/// Local branches whose short name starts with `prefix` ("" for all).
std::vector<branch_info> list_branches(repository& repo,
                                       const std::string& prefix = "");

/// Points local branch `branch` at `to`, only if it is still at `from`
/// ("" for a branch that does not exist: it is created). Throws when
/// someone moved it meanwhile.
void move_branch(repository& repo, const std::string& branch,
                 const std::string& from, const std::string& to);

/// Deletes local branch `branch`; false when it did not exist. Throws when
/// it is checked out in some worktree. Never checks whether it is merged:
/// that is the caller's rule (see is_ancestor).
bool delete_branch(repository& repo, const std::string& branch);

} // namespace taskforce::git
