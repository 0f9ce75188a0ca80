// The one exception type of the libgit2 layer.
#pragma once

#include <stdexcept>
#include <string>

namespace taskforce::git {

/// A failed git operation: what was attempted and why, with libgit2's own
/// message and error code when libgit2 reported it.
class error : public std::runtime_error {
 public:
  /// `attempted` names the operation and its subject ("merge taskforce/r/t
  /// into main"); `reason` is libgit2's message or our own; `code` is the
  /// libgit2 error code (GIT_ECONFLICT, ...) or -1.
  error(std::string attempted, std::string reason, int code = -1);

  /// The operation that failed.
  const std::string& attempted() const noexcept {
    return attempted_;
  }

  /// libgit2's message (read right after the failing call) or ours.
  const std::string& reason() const noexcept {
    return reason_;
  }

  /// The libgit2 error code, e.g. GIT_ENOTFOUND (-3) or GIT_ELOCKED (-14).
  int code() const noexcept {
    return code_;
  }

 private:
  std::string attempted_;
  std::string reason_;
  int code_;
};

/// Throws `error` when `rc < 0`, reading git_error_last() at once (it is
/// thread-local and overwritten by the next call). Returns `rc` otherwise.
int check(int rc, const std::string& attempted);

} // namespace taskforce::git
