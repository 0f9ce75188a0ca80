// The runtime's own record of what a task changed: a snapshot of the
// working tree under its roots when its child is linked, compared with the
// tree at completion.
//
// A snapshot maps each file under the roots (repository-relative) to a
// fingerprint "<size>:<mtime ns>:<content hash>"; a symlink is recorded by
// its target text ("link:<target>"), and a root that does not exist as
// "-". Symlinked folders are recorded as links and never entered, other
// kinds of files (sockets, fifos) are ignored. Nothing else is skipped: a
// nested repository's `.git` under a root (one made after the task was
// prepared; prepare refuses a root that holds one) is recorded like any
// folder, so writes into it are seen. Two fingerprints are the same file when
// size and content hash (or the link text) agree: touching a file changes
// nothing.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace taskforce::control {

/// Repository-relative path → fingerprint.
using snapshot = std::map<std::string, std::string>;

/// The fingerprint of an absent path.
constexpr const char* absent_fingerprint = "-";

/// The files under canonical `roots` of the repository at `repo_top`.
snapshot take_snapshot(const std::filesystem::path& repo_top,
                       const std::vector<std::string>& roots);

/// Whether two fingerprints stand for the same content.
bool same_content(const std::string& a, const std::string& b);

/// What changed between two snapshots, each list sorted.
struct tree_diff {
  std::vector<std::string> added;
  std::vector<std::string> modified;
  std::vector<std::string> deleted;

  /// All three, sorted.
  std::vector<std::string> all() const;
  bool empty() const {
    return added.empty() && modified.empty() && deleted.empty();
  }
};

/// `after` compared with `before` (absent entries count as missing files).
tree_diff compare(const snapshot& before, const snapshot& after);

} // namespace taskforce::control
