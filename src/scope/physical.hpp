// Where a repository path physically lies once its symlinks are followed.
//
// A scope entry and a changed path are judged by their place on disk, not
// by their spelling: with `inlink -> src` committed, `inlink/a.txt` is
// `src/a.txt`; with `out -> /tmp/x`, `out/pwn.txt` lies outside the
// repository; with `g -> .git`, `g/hooks/x` is git's own folder. Symlinks
// are followed from the repository's top folder down to the nearest part
// that does not exist (a dangling link is followed by its text, as a write
// through it would create its target); what does not exist yet is taken as
// written. A path that ends up outside the repository, at its top folder,
// or in a folder git or taskforce owns (`.git` or `.taskforce` at the top,
// a nested repository's `.git` anywhere, in any case: path.hpp's
// find_owned_folder) is refused.
//
// This is the filesystem-facing half of the scope rules; path.hpp holds
// the pure normalisation. Symlink targets are read with lstat/readlink,
// nothing is written.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace taskforce::scope {

/// A path resolved in a repository, or the reason it is refused.
struct physical_path {
  /// Repository-relative, normalised ("src/a.txt", "src/*.ts", "src/");
  /// empty when refused.
  std::string path;
  /// Why it is refused (names the path, where it leads); empty when not.
  std::string error;
};

/// Resolves the paths of one repository (or linked worktree) whose top
/// folder is `root`.
class physical_root {
 public:
  /// `root` must exist; it is itself resolved once (it may lie under a
  /// symlink such as /tmp). Throws std::filesystem::filesystem_error when
  /// it cannot be.
  explicit physical_root(const std::filesystem::path& root);

  /// The resolved top folder.
  const std::filesystem::path& root() const {
    return root_;
  }

  /// A normalised, repository-relative path with every symlink on its
  /// way followed, its last part included.
  physical_path resolve(std::string_view path) const;

  /// A normalised scope entry (see path.hpp): a literal is resolved whole;
  /// a glob or a directory entry (`dir/`) has its literal leading folders
  /// (glob::base) resolved and the rest kept as written.
  physical_path resolve_entry(std::string_view entry) const;

  /// A path git reports as changed, judged where it physically lies: its
  /// folder is resolved (git never reports a path below a symlink, so this
  /// is its spelling unless a folder was swapped for a link); when the
  /// path is itself a symlink, its target must stay inside the repository
  /// and out of `.git` and `.taskforce`. A path that no longer exists (a
  /// deletion) is judged as spelled.
  physical_path locate_changed(std::string_view path) const;

 private:
  /// Follows `rel` from the root; absolute and lexically normal.
  std::filesystem::path follow(std::string_view rel, bool last_too,
                               std::string& error) const;
  /// `abs` as a repository path, or the reason it is refused.
  physical_path judge(std::string_view spelled,
                      const std::filesystem::path& abs) const;

  std::filesystem::path root_;
};

} // namespace taskforce::scope
