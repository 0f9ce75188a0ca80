// Normalising the paths and globs a task declares in `files`.
//
// A scope entry is relative to the repository: `./a` and `a//b` are
// tidied, inner `..` resolved, and a path is refused when it is absolute,
// escapes the repository, or points into a folder git or taskforce owns
// (see find_owned_folder). A trailing `/` is kept: it claims the whole
// directory.
#pragma once

#include <string>
#include <string_view>

namespace taskforce::scope {

/// A normalised scope entry, or the reason it is refused.
struct normalized_path {
  /// The tidy path ("src/auth/", "src/*.ts"); empty when refused.
  std::string path;
  /// Why the entry is refused ("is absolute", ...); empty when accepted.
  std::string error;
};

/// Normalises one `files` entry as written (backticks already stripped).
normalized_path normalize_path(std::string_view raw);

/// A folder of the repository that git or taskforce owns, on a path.
struct owned_folder {
  /// The path up to and including the owned part, as written (".GIT",
  /// "vendor/lib/.git"); empty when the path has none.
  std::string folder;
  /// "git" or "taskforce".
  std::string owner;
  /// The part is a nested repository's git folder (not the first part).
  bool nested = false;

  /// "into .GIT/, which belongs to git", "into vendor/lib/.git/, a nested
  /// repository's git folder, which belongs to git".
  std::string describe() const;
};

/// The owned folder on `path` (repository-relative, `/`-separated,
/// normalised): its first part when that is `.git` or `.taskforce`, or any
/// later part named `.git`. Names are compared without regard to case: on
/// a case-insensitive filesystem (macOS, vfat, ext4 with casefold) `.GIT`
/// is `.git`.
owned_folder find_owned_folder(std::string_view path);

} // namespace taskforce::scope
