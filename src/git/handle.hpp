// RAII ownership of libgit2 objects. Include only in .cpp files of src/git
// and in tests that need raw libgit2; everything else uses the value-based
// API of repository.hpp, worktree.hpp and merge.hpp.
#pragma once

#include <memory>
#include <string>

#include <git2.h>

namespace taskforce::git {

/// Frees a libgit2 object with its own free function.
template<class T, void (*Free)(T*)>
struct git_deleter {
  void operator()(T* x) const noexcept {
    Free(x);
  }
};

/// A uniquely owned libgit2 object.
template<class T, void (*Free)(T*)>
using git_ptr = std::unique_ptr<T, git_deleter<T, Free>>;

/// An owned reference.
using reference_ptr = git_ptr<git_reference, git_reference_free>;
/// An owned commit.
using commit_ptr = git_ptr<git_commit, git_commit_free>;
/// An owned tree.
using tree_ptr = git_ptr<git_tree, git_tree_free>;
/// An owned index (the repository's or an in-memory merge result).
using index_ptr = git_ptr<git_index, git_index_free>;
/// An owned blob.
using blob_ptr = git_ptr<git_blob, git_blob_free>;
/// An owned generic object.
using object_ptr = git_ptr<git_object, git_object_free>;
/// An owned status list.
using status_list_ptr = git_ptr<git_status_list, git_status_list_free>;
/// An owned diff.
using diff_ptr = git_ptr<git_diff, git_diff_free>;
/// An owned worktree handle.
using worktree_ptr = git_ptr<git_worktree, git_worktree_free>;
/// An owned signature.
using signature_ptr = git_ptr<git_signature, git_signature_free>;
/// An owned config.
using config_ptr = git_ptr<git_config, git_config_free>;
/// An owned revision walker.
using revwalk_ptr = git_ptr<git_revwalk, git_revwalk_free>;
/// An owned branch iterator.
using branch_iterator_ptr
  = git_ptr<git_branch_iterator, git_branch_iterator_free>;
/// An owned conflict iterator.
using conflict_iterator_ptr
  = git_ptr<git_index_conflict_iterator, git_index_conflict_iterator_free>;

/// An owned git_buf, disposed on destruction.
struct buf {
  git_buf value = GIT_BUF_INIT;
  buf() = default;
  buf(const buf&) = delete;
  buf& operator=(const buf&) = delete;
  ~buf() {
    git_buf_dispose(&value);
  }
  /// The content as a string.
  std::string str() const {
    return value.ptr ? std::string(value.ptr, value.size) : std::string{};
  }
};

/// An owned git_strarray, disposed on destruction.
struct strarray {
  git_strarray value{nullptr, 0};
  strarray() = default;
  strarray(const strarray&) = delete;
  strarray& operator=(const strarray&) = delete;
  ~strarray() {
    git_strarray_dispose(&value);
  }
};

/// The 40-hex-digit form of an object id.
std::string to_hex(const git_oid& id);

/// Parses 40 hex digits; throws `error` naming `attempted` otherwise.
git_oid from_hex(const std::string& hex, const std::string& attempted);

} // namespace taskforce::git
