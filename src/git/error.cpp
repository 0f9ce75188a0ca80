#include "src/git/error.hpp"

#include <git2.h>

namespace taskforce::git {

error::error(std::string attempted, std::string reason, int code)
  : std::runtime_error(attempted + ": " + reason),
    attempted_(std::move(attempted)), reason_(std::move(reason)), code_(code) {
  // nop
}

int check(int rc, const std::string& attempted) {
  if (rc >= 0)
    return rc;
  // git_error_last() is thread-local and the next libgit2 call may reset it:
  // read it before anything else happens.
  const git_error* last = git_error_last();
  std::string reason = last != nullptr && last->message != nullptr
                         ? last->message
                         : "libgit2 error " + std::to_string(rc);
  throw error(attempted, std::move(reason), rc);
}

} // namespace taskforce::git
