// Coverage: whether a changed path lies inside a task's declared scope
// (the run engine's diff-scope check).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/scope/glob.hpp"

namespace taskforce::scope {

/// A task's `files`, compiled once for many `covers` questions.
class coverage {
 public:
  /// Compiles normalised entries; throws std::invalid_argument on bad glob
  /// syntax (parsed task files never carry any).
  explicit coverage(const std::vector<std::string>& files);

  /// Whether `path` (repository-relative, normalised) is declared: equal to
  /// a literal, matched by a glob, or under a directory entry (`dir/`).
  bool covers(std::string_view path) const;

  /// Whether the scope is empty (a task without files declares nothing).
  bool empty() const {
    return globs_.empty();
  }

 private:
  std::vector<glob> globs_;
};

/// Whether a file at `path` (repository-relative, normalised) stands where
/// `files` needs a folder: `path` is a leading folder of an entry, up to
/// its first glob character (`notes` for `notes/`, `notes/*.txt` or
/// `notes/a/b.txt`). A task writing there would have to replace it.
bool in_the_way(const std::vector<std::string>& files, std::string_view path);

/// One-shot form of `coverage(files).covers(path)`.
bool covers(const std::vector<std::string>& files, std::string_view path);

} // namespace taskforce::scope
