// Normalising the paths and globs a task declares in `files`.
//
// A scope entry is relative to the repository: `./a` and `a//b` are
// tidied, inner `..` resolved, and a path is refused when it is absolute,
// escapes the repository, or points into `.git/` or `.taskforce/`. A
// trailing `/` is kept: it claims the whole directory.
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

} // namespace taskforce::scope
