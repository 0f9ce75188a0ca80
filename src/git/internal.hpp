// Helpers shared by the .cpp files of src/git; not part of the API.
#pragma once

#include <string>
#include <vector>

#include "src/git/handle.hpp"
#include "src/git/repository.hpp"

namespace taskforce::git::detail {

/// Looks up the commit with id `hex`.
commit_ptr lookup_commit(repository& repo, const std::string& hex);

/// Looks up the commit with id `id`.
commit_ptr lookup_commit(repository& repo, const git_oid& id);

/// The tree of `commit`.
tree_ptr tree_of(const git_commit* commit);

/// A signature for now from `who`, with the fallbacks of `signature`.
signature_ptr make_signature(repository& repo, const signature& who);

/// The id `refs/heads/<branch>` points to; throws when missing.
git_oid branch_id(repository& repo, const std::string& branch);

/// The repository's own index; throws for a bare repository.
index_ptr repository_index(repository& repo);

/// Status entries of a checkout with the given status options flags, shown
/// for index and workdir; every path named by an entry (both sides). A
/// non-empty `only` limits the status to those exact paths.
std::vector<std::string> status_paths(repository& repo, unsigned int flags,
                                      const std::vector<std::string>& only
                                      = {});

/// Turns off libgit2's check, on every tree and commit written, that each
/// object it names exists: that check opens every blob of the tree (about
/// 80 ms per tree at 2,000 loose files) and our trees come from indexes
/// whose objects were just written. Process-wide, idempotent.
void relax_object_checks();

/// Sorts and deduplicates `xs`.
void sort_unique(std::vector<std::string>& xs);

} // namespace taskforce::git::detail
