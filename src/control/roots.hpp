// Write roots of managed background tasks: what a contract's roots mean on
// disk, when two of them conflict, and whether a path lies inside them.
//
// A root is judged by where it physically lies (src/scope/physical.hpp
// follows the symlinks): `alias -> docs` makes the root `alias` the root
// `docs`; a path that does not exist yet is resolved through its nearest
// existing parent. A root is refused (control_errc::bad_request, naming it)
// when it is empty, the repository's top folder, absolute outside the
// repository, escaping it (`../x`), in `.git` or `.taskforce` (or a nested
// repository's `.git`; in any case, see scope::find_owned_folder), directly
// or through a symlink, or when it holds a nested repository. Canonical
// roots are repository-relative with `/` separators and no `.`/`..` parts;
// the list is de-duplicated and nested roots are folded into their ancestor
// (["src/lib", "./src", "src"] → ["src"]).
//
// Conflicts and containment of canonical roots are pure text functions
// (component-wise: `src` contains `src/lib`, not `srcx`); the filesystem
// is read only to canonicalise.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/scope/lease.hpp"
#include "src/scope/physical.hpp"

namespace taskforce::control {

// -- pure ---------------------------------------------------------------------

// Containment and conflicts of canonical roots (src/scope/lease.hpp).
using scope::path_within;
using scope::roots_conflict;

/// Sorted, de-duplicated canonical roots with each nested root folded into
/// its ancestor.
std::vector<std::string> fold_roots(std::vector<std::string> roots);

// -- on disk ------------------------------------------------------------------

/// `path` (relative to the repository, or absolute) as a normalised
/// repository-relative path with its symlinks followed, or the reason it is
/// refused (outside the repository, its top folder, in .git/.taskforce).
scope::physical_path locate(const scope::physical_root& repo,
                            std::string_view path);

/// The first folder named `.git` (in any case) below the canonical `root`
/// (a nested repository's), as a repository path; empty when there is
/// none. Symlinked folders are not entered; a submodule's `.git` file is
/// an ordinary file.
std::string nested_git_folder(const scope::physical_root& repo,
                              const std::string& root);

/// One root canonicalised; throws control_error(bad_request) naming it, and
/// also when it holds a nested repository (nested_git_folder), whose git
/// folder the completion gate could not judge.
std::string canonical_root(const scope::physical_root& repo,
                           std::string_view root);

/// A contract's roots canonicalised and folded (see above); throws
/// control_error(bad_request) naming the first refused root.
std::vector<std::string> canonical_roots(const scope::physical_root& repo,
                                         const std::vector<std::string>& roots);

/// Whether a write to `path` lands inside one of the canonical `roots`,
/// physically (`src/link/x` with `src/link -> ../docs` lies in `docs`).
struct containment {
  /// True when inside a root.
  bool inside = false;
  /// Where the path physically lies (repository-relative); empty when it
  /// was refused.
  std::string path;
  /// The root it lies in, when inside.
  std::optional<std::string> root;
  /// Why not, in plain words ("outside the task's roots src, docs", or the
  /// refusal of the path itself); empty when inside.
  std::string reason;
};

/// Judges a write to `path` (relative or absolute) against `roots`.
containment within_roots(const scope::physical_root& repo,
                         std::string_view path,
                         const std::vector<std::string>& roots);

} // namespace taskforce::control
