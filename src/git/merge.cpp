#include "src/git/merge.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "src/git/handle.hpp"
#include "src/git/internal.hpp"

namespace fs = std::filesystem;

namespace taskforce::git {

const char* to_string(merge_result::outcome x) {
  switch (x) {
    case merge_result::outcome::merged: return "merged";
    case merge_result::outcome::already_merged: return "already_merged";
    case merge_result::outcome::conflict: return "conflict";
    case merge_result::outcome::dirty_checkout: return "dirty_checkout";
    case merge_result::outcome::stale: return "stale";
  }
  return "unknown";
}

namespace {

// -- trees and paths ----------------------------------------------------------

std::vector<std::string> changed_between(repository& repo, git_tree* a,
                                         git_tree* b) {
  git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
  git_diff* raw = nullptr;
  check(git_diff_tree_to_tree(&raw, repo.get(), a, b, &opts),
        "compare two trees");
  diff_ptr diff{raw};
  std::vector<std::string> paths;
  auto n = git_diff_num_deltas(diff.get());
  for (size_t i = 0; i < n; ++i) {
    auto* delta = git_diff_get_delta(diff.get(), i);
    paths.emplace_back(delta->old_file.path);
    paths.emplace_back(delta->new_file.path);
  }
  detail::sort_unique(paths);
  return paths;
}

// A tree entry as (mode, id); mode 0 means "absent".
struct entry_state {
  uint32_t mode = 0;
  git_oid id{};
};

entry_state tree_entry(git_tree* tree, const std::string& path) {
  git_tree_entry* raw = nullptr;
  int rc = git_tree_entry_bypath(&raw, tree, path.c_str());
  if (rc == GIT_ENOTFOUND) {
    git_error_clear();
    return {};
  }
  check(rc, "read " + path + " from a tree");
  entry_state result;
  result.mode = git_tree_entry_filemode(raw);
  result.id = *git_tree_entry_id(raw);
  git_tree_entry_free(raw);
  return result;
}

bool same(const entry_state& x, const entry_state& y) {
  if (x.mode == 0 || y.mode == 0)
    return x.mode == y.mode;
  return x.mode == y.mode && git_oid_equal(&x.id, &y.id);
}

// The file on disk as an entry: its content hashed through the repository's
// filters (what `git add` would store). Executable bits are not compared, so
// a checkout on a filesystem without them still matches.
entry_state workdir_entry(repository& repo, const fs::path& root,
                          const std::string& path) {
  auto file = root / path;
  struct stat st;
  if (::lstat(file.c_str(), &st) != 0)
    return {};
  entry_state result;
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    auto target = fs::read_symlink(file, ec).string();
    result.mode = GIT_FILEMODE_LINK;
    check(
      git_odb_hash(&result.id, target.data(), target.size(), GIT_OBJECT_BLOB),
      "hash " + path);
  } else if (S_ISREG(st.st_mode)) {
    result.mode = GIT_FILEMODE_BLOB;
    check(git_repository_hashfile(&result.id, repo.get(), file.c_str(),
                                  GIT_OBJECT_BLOB, nullptr),
          "hash " + path);
  } else {
    result.mode = 1; // a folder or something else: matches nothing
  }
  return result;
}

bool same_content(const entry_state& disk, const entry_state& x) {
  if (disk.mode == 0 || x.mode == 0)
    return disk.mode == x.mode;
  bool disk_link = disk.mode == GIT_FILEMODE_LINK;
  bool x_link = x.mode == GIT_FILEMODE_LINK;
  bool x_file
    = x.mode == GIT_FILEMODE_BLOB || x.mode == GIT_FILEMODE_BLOB_EXECUTABLE;
  if (disk_link != x_link || (!x_link && !x_file))
    return false;
  return disk.mode != 1 && git_oid_equal(&disk.id, &x.id);
}

void remove_empty_parents(const fs::path& root, fs::path dir) {
  std::error_code ec;
  while (dir != root && dir.string().size() > root.string().size()
         && fs::is_empty(dir, ec) && !ec) {
    fs::remove(dir, ec);
    dir = dir.parent_path();
  }
}

// Writes `target`'s content for `path` into the checkout (atomically, by a
// rename over the old file).
void write_file(repository& repo, const fs::path& root, const std::string& path,
                const entry_state& target) {
  auto what = "write " + path + " into the checkout";
  auto file = root / path;
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  // Staged inside the git folder: a kill leaves no stray file in the
  // checkout, and the rename stays on one filesystem.
  auto tmp = repo.git_dir() / "taskforce-checkout.tmp";
  git_blob* raw = nullptr;
  check(git_blob_lookup(&raw, repo.get(), &target.id), what);
  blob_ptr blob{raw};
  if (target.mode == GIT_FILEMODE_LINK) {
    std::string link(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                     git_blob_rawsize(blob.get()));
    fs::remove(tmp, ec);
    fs::create_symlink(link, tmp, ec);
    if (ec)
      throw error(what, ec.message());
  } else {
    buf content;
    git_blob_filter_options fopts = GIT_BLOB_FILTER_OPTIONS_INIT;
    check(git_blob_filter(&content.value, blob.get(), path.c_str(), &fopts),
          what);
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(content.value.ptr,
                static_cast<std::streamsize>(content.value.size));
      out.flush();
      if (!out)
        throw error(what, "cannot write " + tmp.string());
    }
    ::chmod(tmp.c_str(),
            target.mode == GIT_FILEMODE_BLOB_EXECUTABLE ? 0755 : 0644);
  }
  // A folder where a file must go was emptied by the deletions before.
  if (fs::is_directory(file, ec) && !fs::is_symlink(file, ec))
    fs::remove(file, ec);
  fs::rename(tmp, file, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw error(what, "cannot replace " + file.string());
  }
}

// Brings `paths` of the checkout from `from` (the first parent) to `to`
// (HEAD), in the index and on disk, only where both still hold either
// content. The index is written once at the end; a kill before that leaves
// files at `to` with index entries at `from`, which a second pass completes.
// `index_follows`: where the file is the user's but its index entry still
// holds either version, the entry follows `to`, so `git status` shows just
// their edit (while landing; recovery leaves such a path alone entirely).
checkout_repair update_checkout(repository& repo, git_tree* from, git_tree* to,
                                const std::vector<std::string>& paths,
                                bool index_follows = true) {
  checkout_repair result;
  auto root = repo.workdir();
  auto index = detail::repository_index(repo);
  check(git_index_read(index.get(), 0), "read the index");
  struct step {
    std::string path;
    entry_state target;
  };
  std::vector<step> removals;
  std::vector<step> writes;
  std::vector<step> index_only;
  for (auto& path : paths) {
    auto a = tree_entry(from, path);
    auto b = tree_entry(to, path);
    if (a.mode == GIT_FILEMODE_COMMIT || b.mode == GIT_FILEMODE_COMMIT)
      continue; // submodules are not ours to check out
    entry_state in_index;
    if (auto* e = git_index_get_bypath(index.get(), path.c_str(), 0)) {
      in_index.mode = e->mode;
      in_index.id = e->id;
    }
    bool conflicted = git_index_get_bypath(index.get(), path.c_str(), 1)
                      || git_index_get_bypath(index.get(), path.c_str(), 2)
                      || git_index_get_bypath(index.get(), path.c_str(), 3);
    auto disk = workdir_entry(repo, root, path);
    bool index_ok = !conflicted && (same(in_index, a) || same(in_index, b));
    bool disk_ok = same_content(disk, a) || same_content(disk, b);
    if (!index_ok || !disk_ok) {
      // The file is the user's; an index entry still at either version is
      // ours, so it follows HEAD and `git status` shows just their edit.
      if (index_follows && index_ok && !same(in_index, b))
        index_only.push_back({path, b});
      result.kept.push_back(path);
      continue;
    }
    if (same(in_index, b) && same_content(disk, b))
      continue; // already done
    (b.mode == 0 ? removals : writes).push_back({path, b});
  }
  // Deletions first, so a file may replace a folder and vice versa.
  for (auto& s : removals) {
    std::error_code ec;
    fs::remove(root / s.path, ec);
    remove_empty_parents(root, (root / s.path).parent_path());
    int rc = git_index_remove_bypath(index.get(), s.path.c_str());
    check(rc, "remove " + s.path + " from the index");
    result.updated.push_back(s.path);
  }
  for (auto& s : writes) {
    write_file(repo, root, s.path, s.target);
    check(git_index_add_bypath(index.get(), s.path.c_str()),
          "add " + s.path + " to the index");
    result.updated.push_back(s.path);
  }
  for (auto& s : index_only) {
    if (s.target.mode == 0) {
      check(git_index_remove_bypath(index.get(), s.path.c_str()),
            "remove " + s.path + " from the index");
      continue;
    }
    // No stat data: git sees the file as changed until it hashes it again.
    git_index_entry entry{};
    entry.mode = s.target.mode;
    entry.id = s.target.id;
    entry.path = s.path.c_str();
    check(git_index_add(index.get(), &entry),
          "update " + s.path + " in the index");
  }
  if (!result.updated.empty() || !index_only.empty())
    check(git_index_write(index.get()), "write the index");
  detail::sort_unique(result.updated);
  return result;
}

std::vector<std::string> conflict_paths(git_index* index) {
  git_index_conflict_iterator* raw = nullptr;
  check(git_index_conflict_iterator_new(&raw, index), "list conflicts");
  conflict_iterator_ptr it{raw};
  std::vector<std::string> paths;
  const git_index_entry* ancestor = nullptr;
  const git_index_entry* ours = nullptr;
  const git_index_entry* theirs = nullptr;
  while (git_index_conflict_next(&ancestor, &ours, &theirs, it.get()) == 0) {
    for (auto* e : {ancestor, ours, theirs})
      if (e != nullptr)
        paths.emplace_back(e->path);
  }
  git_error_clear();
  detail::sort_unique(paths);
  return paths;
}

// True when HEAD of the main checkout is `refs/heads/<branch>`.
bool checked_out_here(repository& repo, const std::string& branch) {
  if (git_repository_is_bare(repo.get()))
    return false;
  try {
    return head_branch(repo) == branch;
  } catch (const error&) {
    return false; // detached
  }
}

// True when some linked worktree has `refs/heads/<branch>` checked out.
bool checked_out_elsewhere(repository& repo, const std::string& branch) {
  git_reference* raw = nullptr;
  if (git_branch_lookup(&raw, repo.get(), branch.c_str(), GIT_BRANCH_LOCAL)
      != 0) {
    git_error_clear();
    return false;
  }
  reference_ptr ref{raw};
  return git_branch_is_checked_out(ref.get()) == 1;
}

} // namespace

// -- merge --------------------------------------------------------------------

merge_candidate prepare_merge(repository& repo, const std::string& branch,
                              const std::string& base_branch,
                              const std::string& message,
                              const signature& committer) {
  auto what = "merge " + branch + " into " + base_branch;
  merge_candidate result;
  auto base_id = detail::branch_id(repo, base_branch);
  auto tip_id = detail::branch_id(repo, branch);
  result.base = to_hex(base_id);
  result.tip = to_hex(tip_id);
  if (is_ancestor(repo, result.tip, result.base)) {
    result.status = merge_result::outcome::already_merged;
    result.commit = merged_commit(repo, result.tip, base_branch).value_or("");
    return result;
  }
  auto base = detail::lookup_commit(repo, base_id);
  auto tip = detail::lookup_commit(repo, tip_id);
  detail::relax_object_checks();
  // In memory: the checkout never sees a half-merged state.
  git_merge_options mo = GIT_MERGE_OPTIONS_INIT;
  git_index* index_raw = nullptr;
  check(git_merge_commits(&index_raw, repo.get(), base.get(), tip.get(), &mo),
        what);
  index_ptr merged{index_raw};
  if (git_index_has_conflicts(merged.get())) {
    result.status = merge_result::outcome::conflict;
    result.paths = conflict_paths(merged.get());
    return result;
  }
  git_oid tree_id;
  check(git_index_write_tree_to(&tree_id, merged.get(), repo.get()), what);
  git_tree* tree_raw = nullptr;
  check(git_tree_lookup(&tree_raw, repo.get(), &tree_id), what);
  tree_ptr new_tree{tree_raw};
  // The commit object, unreachable until a ref points at it.
  auto sig = detail::make_signature(repo, committer);
  const git_commit* parents[] = {base.get(), tip.get()};
  git_oid merge_id;
  check(git_commit_create(&merge_id, repo.get(), nullptr, sig.get(), sig.get(),
                          nullptr, message.c_str(), new_tree.get(), 2, parents),
        what);
  result.status = merge_result::outcome::merged;
  result.commit = to_hex(merge_id);
  return result;
}

landing_journal::~landing_journal() = default;

merge_result land_merge(repository& repo, const std::string& candidate,
                        const std::string& base_branch,
                        const std::string& branch_tip,
                        landing_journal* journal) {
  auto what = "move " + base_branch + " to " + candidate;
  merge_result result;
  auto merge = detail::lookup_commit(repo, candidate);
  if (git_commit_parentcount(merge.get()) != 2)
    throw error(what, candidate + " is not a merge commit");
  git_commit* raw = nullptr;
  check(git_commit_parent(&raw, merge.get(), 0), what);
  commit_ptr first{raw};
  auto base_id = *git_commit_id(first.get());
  raw = nullptr;
  check(git_commit_parent(&raw, merge.get(), 1), what);
  commit_ptr second{raw};
  // The base must still be where the candidate was made on, and the branch
  // must not have moved since.
  auto now = detail::branch_id(repo, base_branch);
  if (!git_oid_equal(&base_id, &now)
      || (!branch_tip.empty()
          && to_hex(*git_commit_id(second.get())) != branch_tip)) {
    result.status = merge_result::outcome::stale;
    return result;
  }
  auto base_tree = detail::tree_of(first.get());
  auto new_tree = detail::tree_of(merge.get());
  // Never overwrite the user's uncommitted edits in the checkout.
  bool here = checked_out_here(repo, base_branch);
  if (!here && checked_out_elsewhere(repo, base_branch))
    throw error(what, base_branch
                        + " is checked out in a linked worktree;"
                          " merging there would leave it behind its branch");
  std::vector<std::string> changed;
  if (here) {
    changed = changed_between(repo, base_tree.get(), new_tree.get());
    // Only the paths the merge changes matter: edits elsewhere stay as
    // they are, and the status costs what the merge touches.
    auto dirty = changed.empty() ? std::vector<std::string>{}
                                 : detail::status_paths(repo, 0, changed);
    auto root = repo.workdir();
    for (auto& path : changed) {
      bool in_base = tree_entry(base_tree.get(), path).mode != 0;
      std::error_code ec;
      bool on_disk = fs::symlink_status(root / path, ec).type()
                     != fs::file_type::not_found;
      if (std::binary_search(dirty.begin(), dirty.end(), path)
          || (!in_base && on_disk))
        result.paths.push_back(path);
    }
    if (!result.paths.empty()) {
      result.status = merge_result::outcome::dirty_checkout;
      return result;
    }
  }
  // Written down before the base moves: after a kill between the move and
  // the checkout update, this is the one update recovery completes.
  checkout_update update{candidate, to_hex(base_id), changed, {}};
  if (journal)
    journal->landing(update);
  auto over = [&](bool moved) {
    if (!journal)
      return;
    try {
      journal->landed(update, moved);
    } catch (const std::exception&) {
      // Still in the journal: completing it again finds nothing to do.
    }
  };
  // The commit point.
  git_reference* ref_raw = nullptr;
  auto log = "taskforce: merge " + candidate;
  auto merge_id = *git_commit_id(merge.get());
  int rc = git_reference_create_matching(&ref_raw, repo.get(),
                                         ("refs/heads/" + base_branch).c_str(),
                                         &merge_id, 1, &base_id, log.c_str());
  if (rc == GIT_EMODIFIED) {
    git_error_clear();
    over(false);
    result.status = merge_result::outcome::stale;
    return result;
  }
  if (rc < 0) {
    over(false);
    check(rc, what);
  }
  reference_ptr moved{ref_raw};
  // The checkout follows, path by path, never over an edit. The merge is
  // committed by now, so a failure here is reported, not thrown (and the
  // landing stays unfinished in the journal, for the next start).
  bool followed = true;
  if (here) {
    try {
      result.skipped
        = update_checkout(repo, base_tree.get(), new_tree.get(), changed).kept;
    } catch (const error& e) {
      result.skipped = changed;
      result.checkout_error = e.what();
      followed = false;
    }
  }
  if (followed)
    over(true);
  result.status = merge_result::outcome::merged;
  result.commit = candidate;
  return result;
}

merge_result merge_into_base(repository& repo, const std::string& branch,
                             const std::string& base_branch,
                             const std::string& message,
                             const signature& committer,
                             landing_journal* journal) {
  // When someone else moved the base in between (a user's commit), start
  // over from the new tip.
  for (int round = 0;; ++round) {
    auto c = prepare_merge(repo, branch, base_branch, message, committer);
    if (c.status != merge_result::outcome::merged) {
      merge_result result;
      result.status = c.status;
      result.commit = std::move(c.commit);
      result.paths = std::move(c.paths);
      return result;
    }
    auto r = land_merge(repo, c.commit, base_branch, "", journal);
    if (r.status != merge_result::outcome::stale || round >= 3)
      return r;
  }
}

std::optional<std::string> merged_commit(repository& repo,
                                         const std::string& branch_tip,
                                         const std::string& base_branch) {
  auto what = "find where " + branch_tip + " was merged into " + base_branch;
  auto base_id = detail::branch_id(repo, base_branch);
  if (!is_ancestor(repo, branch_tip, to_hex(base_id)))
    return std::nullopt;
  // Containment only grows along the first-parent line, so walk back while
  // the parent still contains the tip.
  auto current = detail::lookup_commit(repo, base_id);
  for (;;) {
    if (git_commit_parentcount(current.get()) == 0)
      break;
    git_commit* raw = nullptr;
    check(git_commit_parent(&raw, current.get(), 0), what);
    commit_ptr parent{raw};
    if (!is_ancestor(repo, branch_tip, to_hex(*git_commit_id(parent.get()))))
      break;
    current = std::move(parent);
  }
  return to_hex(*git_commit_id(current.get()));
}

checkout_repair complete_checkout(repository& repo,
                                  const std::string& base_branch,
                                  const checkout_update& u) {
  checkout_repair result;
  if (!checked_out_here(repo, base_branch)
      || branch_tip(repo, base_branch) != u.commit)
    return result;
  result.applies = true;
  if (u.paths.empty())
    return result;
  auto from_commit = detail::lookup_commit(repo, u.base);
  auto to_commit = detail::lookup_commit(repo, u.commit);
  auto from = detail::tree_of(from_commit.get());
  auto to = detail::tree_of(to_commit.get());
  auto repair = update_checkout(repo, from.get(), to.get(), u.paths, false);
  result.updated = std::move(repair.updated);
  result.kept = std::move(repair.kept);
  return result;
}

// -- assist -------------------------------------------------------------------

std::vector<std::string> apply_to_checkout(repository& repo,
                                           const std::string& from,
                                           const std::string& to) {
  auto what = "apply the change from " + from + " to " + to + " to "
              + repo.workdir().string();
  auto a = detail::lookup_commit(repo, from);
  auto b = detail::lookup_commit(repo, to);
  auto a_tree = detail::tree_of(a.get());
  auto b_tree = detail::tree_of(b.get());
  git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
  opts.flags = GIT_DIFF_SHOW_BINARY;
  git_diff* raw = nullptr;
  check(
    git_diff_tree_to_tree(&raw, repo.get(), a_tree.get(), b_tree.get(), &opts),
    what);
  diff_ptr diff{raw};
  std::vector<std::string> paths;
  auto n = git_diff_num_deltas(diff.get());
  for (size_t i = 0; i < n; ++i) {
    auto* delta = git_diff_get_delta(diff.get(), i);
    paths.emplace_back(delta->old_file.path);
    paths.emplace_back(delta->new_file.path);
  }
  detail::sort_unique(paths);
  if (paths.empty())
    return paths;
  // libgit2 applies every patch in memory first and writes only when all
  // of them apply.
  git_apply_options aopts = GIT_APPLY_OPTIONS_INIT;
  check(git_apply(repo.get(), diff.get(), GIT_APPLY_LOCATION_WORKDIR, &aopts),
        what);
  return paths;
}

// -- diff ---------------------------------------------------------------------

std::string diff_text(repository& repo, const std::string& from,
                      const std::string& to) {
  auto what = "diff " + from + " against " + (to.empty() ? "the checkout" : to);
  auto a = detail::lookup_commit(repo, from);
  auto a_tree = detail::tree_of(a.get());
  git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
  git_diff* raw = nullptr;
  if (to.empty()) {
    opts.flags = GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS
                 | GIT_DIFF_SHOW_UNTRACKED_CONTENT;
    check(git_diff_tree_to_workdir_with_index(&raw, repo.get(), a_tree.get(),
                                              &opts),
          what);
  } else {
    auto b = detail::lookup_commit(repo, to);
    auto b_tree = detail::tree_of(b.get());
    check(git_diff_tree_to_tree(&raw, repo.get(), a_tree.get(), b_tree.get(),
                                &opts),
          what);
  }
  diff_ptr diff{raw};
  buf text;
  check(git_diff_to_buf(&text.value, diff.get(), GIT_DIFF_FORMAT_PATCH), what);
  return text.str();
}

} // namespace taskforce::git
