#include "src/git/worktree.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <system_error>

#include "src/git/handle.hpp"
#include "src/git/internal.hpp"
#include "src/text/file.hpp"

namespace fs = std::filesystem;

namespace taskforce::git {

namespace {

// The file in a worktree's admin folder that marks a reuse in progress; it
// holds the HEAD the worktree had when the reuse began.
constexpr const char* reuse_marker = "taskforce-reusing";

// The file in a worktree's admin folder that sets it aside for good.
constexpr const char* kept_marker = "taskforce-kept";

std::string read_text(const fs::path& file) {
  return read_file(file).value_or("");
}

std::string trim(std::string s) {
  while (!s.empty()
         && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
    s.pop_back();
  return s;
}

// An admin folder that git_worktree_add began and a kill cut short: it
// lacks the files written last (`gitdir`, `HEAD`). Such a folder never
// described a usable worktree.
bool unfinished_admin(const fs::path& admin) {
  std::error_code ec;
  return fs::is_directory(admin, ec)
         && (!fs::exists(admin / "gitdir", ec)
             || !fs::exists(admin / "HEAD", ec));
}

// When the worktree whose admin folder is `admin` was being created or
// reused when a kill came, the commit its files came from (or "" when
// unknown); nothing when it was not. A first checkout leaves the index
// file; without one the worktree was never checked out.
std::optional<std::string> interrupted_switch(repository& repo,
                                              const fs::path& admin) {
  std::error_code ec;
  auto marker = read_text(admin / reuse_marker);
  if (!marker.empty())
    return trim(marker);
  if (!fs::exists(admin / "index", ec)) {
    auto head = trim(read_text(admin / "HEAD"));
    const std::string ref_prefix = "ref: refs/heads/";
    if (head.compare(0, ref_prefix.size(), ref_prefix) == 0)
      return branch_tip(repo, head.substr(ref_prefix.size())).value_or("");
    return head;
  }
  return std::nullopt;
}

// Compares paths after resolving what can be resolved, so "/tmp/x/" and a
// symlinked spelling of the same folder match.
bool same_path(const fs::path& a, const fs::path& b) {
  std::error_code ec1;
  std::error_code ec2;
  auto x = fs::weakly_canonical(a, ec1);
  auto y = fs::weakly_canonical(b, ec2);
  if (ec1 || ec2)
    return a.lexically_normal() == b.lexically_normal();
  return x == y;
}

// Reads a worktree's HEAD from its admin folder without opening it, so an
// invalid worktree (folder gone) is listed too.
void read_admin_head(repository& repo, const fs::path& admin,
                     worktree_info& info) {
  auto head = trim(read_text(admin / "HEAD"));
  const std::string ref_prefix = "ref: refs/heads/";
  if (head.compare(0, ref_prefix.size(), ref_prefix) == 0) {
    info.branch = head.substr(ref_prefix.size());
    info.head = branch_tip(repo, info.branch).value_or("");
  } else if (head.size() == GIT_OID_HEXSZ) {
    info.head = head;
  }
}

std::optional<worktree_info> find_worktree(repository& repo,
                                           const std::string& name_or_path) {
  for (auto& info : list_worktrees(repo))
    if (info.name == name_or_path
        || (name_or_path.find('/') != std::string::npos
            && same_path(info.path, name_or_path)))
      return info;
  return std::nullopt;
}

worktree_ptr lookup_worktree(repository& repo, const std::string& name) {
  git_worktree* raw = nullptr;
  check(git_worktree_lookup(&raw, repo.get(), name.c_str()),
        "look up worktree " + name);
  return worktree_ptr{raw};
}

// Points `branch` at `base`, creating it when missing. An existing branch is
// moved only when its tip is already merged into `base`; returns the
// unmerged tip otherwise (and moves nothing).
std::optional<std::string> set_branch(repository& repo,
                                      const std::string& branch,
                                      const std::string& base) {
  auto what = "point branch " + branch + " at " + base;
  auto tip = branch_tip(repo, branch);
  if (tip && !is_ancestor(repo, *tip, base))
    return tip;
  if (tip && *tip == base)
    return std::nullopt;
  auto id = from_hex(base, what);
  git_reference* raw = nullptr;
  auto log = "taskforce: branch at " + base;
  if (tip) {
    // Compare-and-swap: nobody moved it since we looked.
    auto old = from_hex(*tip, what);
    check(git_reference_create_matching(&raw, repo.get(),
                                        ("refs/heads/" + branch).c_str(), &id,
                                        1, &old, log.c_str()),
          what);
  } else {
    auto commit = detail::lookup_commit(repo, id);
    check(git_branch_create(&raw, repo.get(), branch.c_str(), commit.get(), 0),
          what);
  }
  reference_ptr guard{raw};
  return std::nullopt;
}

} // namespace

std::string worktree_name_for(const std::string& branch) {
  std::string name;
  for (char c : branch) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    name += ok ? c : '-';
  }
  while (!name.empty() && name.front() == '.')
    name.erase(name.begin());
  // FNV-1a keeps "a/b" and "a-b" apart while the name stays readable.
  uint32_t hash = 2166136261u;
  for (unsigned char c : branch) {
    hash ^= c;
    hash *= 16777619u;
  }
  char suffix[16];
  std::snprintf(suffix, sizeof(suffix), "-%06x", hash & 0xffffffu);
  return name + suffix;
}

// -- create -------------------------------------------------------------------

worktree_info create_worktree(repository& repo, const fs::path& path,
                              const std::string& branch,
                              const std::string& base_commit) {
  auto what = "create worktree " + path.string() + " on branch " + branch;
  auto abs = fs::absolute(path).lexically_normal();
  std::error_code ec;
  // A folder holding only the `.git` link of a registration a kill cut
  // short (its admin folder missing or unfinished) is no one's work.
  if (fs::is_regular_file(abs / ".git", ec)
      && std::distance(fs::directory_iterator(abs, ec),
                       fs::directory_iterator{})
           == 1) {
    auto link = trim(read_text(abs / ".git"));
    const std::string prefix = "gitdir: ";
    if (link.compare(0, prefix.size(), prefix) == 0) {
      fs::path admin = link.substr(prefix.size());
      if (!fs::exists(admin, ec) || unfinished_admin(admin))
        fs::remove(abs / ".git", ec);
    }
  }
  if (fs::exists(abs, ec)) {
    if (!fs::is_directory(abs, ec) || !fs::is_empty(abs, ec))
      throw error(what, "the folder exists and is not empty");
    fs::remove(abs, ec); // libgit2 insists on creating the folder itself
  }
  fs::create_directories(abs.parent_path(), ec);
  if (ec)
    throw error(what, "cannot create " + abs.parent_path().string() + ": "
                        + ec.message());
  // A stale admin entry of a worktree whose folder is gone (a crash, or a
  // folder deleted by hand) is pruned; a live one under the same name (a
  // reused worktree now serving another branch) makes us pick the next
  // free name.
  auto base_name = worktree_name_for(branch);
  std::string name;
  for (int n = 1;; ++n) {
    name = n == 1 ? base_name : base_name + "-" + std::to_string(n);
    auto admin = repo.common_dir() / "worktrees" / name;
    if (unfinished_admin(admin)) {
      fs::remove_all(admin, ec);
      break;
    }
    git_worktree* raw = nullptr;
    if (git_worktree_lookup(&raw, repo.get(), name.c_str()) != 0) {
      git_error_clear();
      if (!fs::exists(admin, ec))
        break;
      continue; // unreadable, but not ours to delete
    }
    worktree_ptr old{raw};
    if (git_worktree_validate(old.get()) != 0) {
      git_error_clear();
      git_worktree_prune_options popts = GIT_WORKTREE_PRUNE_OPTIONS_INIT;
      check(git_worktree_prune(old.get(), &popts), what);
      break;
    }
  }
  {
    git_reference* raw = nullptr;
    if (git_branch_lookup(&raw, repo.get(), branch.c_str(), GIT_BRANCH_LOCAL)
        == 0) {
      reference_ptr ref{raw};
      if (git_branch_is_checked_out(ref.get()) == 1)
        throw error(what,
                    "branch " + branch + " is checked out in another worktree");
    } else {
      git_error_clear();
    }
  }
  if (auto unmerged = set_branch(repo, branch, base_commit))
    throw error(what, "branch " + branch + " holds commit " + *unmerged
                        + " that is not merged into " + base_commit);
  git_reference* ref_raw = nullptr;
  check(
    git_branch_lookup(&ref_raw, repo.get(), branch.c_str(), GIT_BRANCH_LOCAL),
    what);
  reference_ptr ref{ref_raw};
  // The worktree is registered without files first, then marked, then
  // checked out: a kill during the (long) checkout leaves a marked
  // worktree that reuse_worktree finishes and remove_worktree removes,
  // instead of one whose missing files look like a worker's deletions.
  git_worktree_add_options opts = GIT_WORKTREE_ADD_OPTIONS_INIT;
  opts.ref = ref.get();
  opts.checkout_options.checkout_strategy = GIT_CHECKOUT_NONE;
  git_worktree* wt_raw = nullptr;
  check(git_worktree_add(&wt_raw, repo.get(), name.c_str(), abs.c_str(), &opts),
        what);
  worktree_ptr wt_handle{wt_raw};
  auto marker = repo.common_dir() / "worktrees" / name / reuse_marker;
  {
    std::ofstream out(marker, std::ios::binary | std::ios::trunc);
    out << base_commit << '\n';
    out.flush();
    if (!out)
      throw error(what, "cannot write " + marker.string());
  }
  auto wt = open(abs);
  git_checkout_options co = GIT_CHECKOUT_OPTIONS_INIT;
  co.checkout_strategy = GIT_CHECKOUT_FORCE;
  check(git_checkout_head(wt.get(), &co), what);
  fs::remove(marker, ec);
  return worktree_info{name, git_worktree_path(wt_handle.get()), branch,
                       base_commit};
}

// -- reuse --------------------------------------------------------------------

reuse_result reuse_worktree(repository& repo, const fs::path& path,
                            const std::string& branch,
                            const std::string& base_commit) {
  auto what = "reuse worktree " + path.string() + " for branch " + branch;
  reuse_result result;
  auto found = find_worktree(repo, fs::absolute(path).string());
  if (!found)
    return result; // not_a_worktree
  {
    auto wt_handle = lookup_worktree(repo, found->name);
    if (git_worktree_validate(wt_handle.get()) != 0) {
      git_error_clear();
      return result;
    }
  }
  result.worktree = *found;
  result.previous_branch = found->branch;
  auto wt = open(found->path);
  // A marker in the worktree's admin folder says a reuse began here and was
  // cut short: the worktree was clean and merged when it began, and nothing
  // but that reuse has touched it since, so its half-switched files are
  // not work and may be overwritten.
  auto marker = wt.git_dir() / reuse_marker;
  auto interrupted = interrupted_switch(repo, wt.git_dir());
  std::optional<std::string> head;
  if (interrupted) {
    if (interrupted->size() == GIT_OID_HEXSZ)
      head = *interrupted;
  } else {
    // Work in progress of any kind keeps the worktree as it is.
    if (git_repository_state(wt.get()) != GIT_REPOSITORY_STATE_NONE) {
      result.status = reuse_result::outcome::uncommitted_work;
      result.paths = {"(a merge, rebase or cherry-pick is in progress)"};
      return result;
    }
    result.paths = changed_paths(wt);
    if (!result.paths.empty()) {
      result.status = reuse_result::outcome::uncommitted_work;
      return result;
    }
    head = head_commit(wt);
    if (head && !is_ancestor(repo, *head, base_commit)) {
      result.status = reuse_result::outcome::unmerged_work;
      result.commit = *head;
      return result;
    }
  }
  // The target branch must not hold work either, and must not be checked
  // out in another worktree.
  if (branch != found->branch) {
    git_reference* raw = nullptr;
    if (git_branch_lookup(&raw, repo.get(), branch.c_str(), GIT_BRANCH_LOCAL)
        == 0) {
      reference_ptr ref{raw};
      if (git_branch_is_checked_out(ref.get()) == 1)
        throw error(what,
                    "branch " + branch + " is checked out in another worktree");
    } else {
      git_error_clear();
    }
  }
  {
    auto tip = branch_tip(repo, branch);
    if (tip && !is_ancestor(repo, *tip, base_commit)) {
      result.status = reuse_result::outcome::branch_has_work;
      result.commit = *tip;
      return result;
    }
  }
  // From here on the worktree is half switched until the marker goes.
  {
    std::ofstream out(marker, std::ios::binary | std::ios::trunc);
    out << head.value_or("") << '\n';
    out.flush();
    if (!out)
      throw error(what, "cannot write " + marker.string());
  }
  set_branch(repo, branch, base_commit);
  // Bring the files to the base, writing only what differs from the old
  // HEAD (the worktree is clean, so the old HEAD is what is on disk; after
  // an interrupted reuse the files are a mix of both, so they are forced).
  auto base = detail::lookup_commit(repo, base_commit);
  auto base_tree = detail::tree_of(base.get());
  git_checkout_options co = GIT_CHECKOUT_OPTIONS_INIT;
  co.checkout_strategy = !interrupted
                           ? GIT_CHECKOUT_SAFE | GIT_CHECKOUT_RECREATE_MISSING
                           : GIT_CHECKOUT_FORCE;
  tree_ptr baseline;
  if (head) {
    auto old = detail::lookup_commit(wt, *head);
    baseline = detail::tree_of(old.get());
    co.baseline = baseline.get();
  }
  {
    // The tree must be looked up in the worktree's own repository handle.
    git_object* raw = nullptr;
    auto tree_id = *git_tree_id(base_tree.get());
    check(git_object_lookup(&raw, wt.get(), &tree_id, GIT_OBJECT_TREE), what);
    object_ptr target{raw};
    check(git_checkout_tree(wt.get(), target.get(), &co), what);
  }
  check(git_repository_set_head(wt.get(), ("refs/heads/" + branch).c_str()),
        what);
  std::error_code ec;
  fs::remove(marker, ec);
  result.status = reuse_result::outcome::reused;
  result.paths.clear();
  result.worktree.branch = branch;
  result.worktree.head = base_commit;
  return result;
}

// -- inspect and commit -------------------------------------------------------

std::vector<std::string> changed_paths(repository& worktree) {
  // Rename detection is off: a rename shows as a deletion and an addition,
  // which names both sides, as the scope check needs.
  return detail::status_paths(worktree,
                              GIT_STATUS_OPT_INCLUDE_UNTRACKED
                                | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS);
}

namespace {

// What the index and the file hold for `path`: enough to tell that either
// changed, without keeping the content.
std::string fingerprint(repository& repo, git_index* index,
                        const std::string& path) {
  std::string print;
  if (auto* entry = git_index_get_bypath(index, path.c_str(), 0))
    print = std::to_string(entry->mode) + ":" + to_hex(entry->id);
  else
    print = "-";
  auto file = repo.workdir() / path;
  std::error_code ec;
  auto status = fs::symlink_status(file, ec);
  if (ec || !fs::exists(status)) {
    print += "|-";
  } else if (fs::is_symlink(status)) {
    print += "|l:" + fs::read_symlink(file, ec).string();
  } else if (fs::is_regular_file(status)) {
    git_oid id;
    if (git_odb_hashfile(&id, file.c_str(), GIT_OBJECT_BLOB) == 0) {
      print += "|f:" + to_hex(id);
    } else {
      git_error_clear();
      print += "|f:?";
    }
    auto exec
      = (status.permissions() & fs::perms::owner_exec) != fs::perms::none;
    print += exec ? "x" : "";
  } else {
    print += "|d";
  }
  return print;
}

} // namespace

std::map<std::string, std::string> fingerprints(repository& repo) {
  auto index = detail::repository_index(repo);
  check(git_index_read(index.get(), 0), "read the index");
  std::map<std::string, std::string> result;
  for (auto& path : changed_paths(repo))
    result.emplace(path, fingerprint(repo, index.get(), path));
  return result;
}

checkout_snapshot take_snapshot(repository& checkout) {
  checkout_snapshot snap;
  snap.head = head_of(checkout);
  snap.dirty = fingerprints(checkout);
  return snap;
}

std::vector<std::string>
changed_since(repository& checkout, const checkout_snapshot& before,
              std::map<std::string, std::string>* seen) {
  auto now = fingerprints(checkout);
  std::vector<std::string> changed;
  for (auto& [path, print] : now) {
    auto was = before.dirty.find(path);
    if (was == before.dirty.end() || was->second != print)
      changed.push_back(path);
  }
  // Dirty then, clean now: reverted, or committed.
  for (auto& [path, print] : before.dirty)
    if (now.count(path) == 0)
      changed.push_back(path);
  auto head = head_commit(checkout).value_or("");
  if (head != before.head.commit && !head.empty()
      && !before.head.commit.empty())
    for (auto& path : paths_between(checkout, before.head.commit, head))
      changed.push_back(path);
  detail::sort_unique(changed);
  if (seen)
    *seen = std::move(now);
  return changed;
}

std::string commit_all(repository& worktree, const std::string& message,
                       const signature& author) {
  // One status pass instead of git_index_add_all + git_index_update_all
  // (two passes over the folder).
  return commit_paths(worktree, changed_paths(worktree), message, author);
}

std::string commit_paths(repository& repo,
                         const std::vector<std::string>& paths,
                         const std::string& message, const signature& author) {
  auto what = "commit in " + repo.workdir().string();
  detail::relax_object_checks();
  auto index = detail::repository_index(repo);
  check(git_index_read(index.get(), 0), what);
  if (git_index_has_conflicts(index.get()))
    throw error(what, "the index has unresolved conflicts");
  auto root = repo.workdir();
  for (auto& path : paths) {
    std::error_code ec;
    auto type = fs::symlink_status(root / path, ec).type();
    if (type == fs::file_type::regular || type == fs::file_type::symlink)
      check(git_index_add_bypath(index.get(), path.c_str()),
            what + ": stage " + path);
    else
      check(git_index_remove_bypath(index.get(), path.c_str()),
            what + ": unstage " + path);
  }
  check(git_index_write(index.get()), what);
  git_oid tree_id;
  check(git_index_write_tree(&tree_id, index.get()), what);
  auto head = head_commit(repo);
  commit_ptr parent;
  if (head) {
    parent = detail::lookup_commit(repo, *head);
    if (git_oid_equal(git_commit_tree_id(parent.get()), &tree_id))
      return *head; // nothing changed
  }
  git_tree* tree_raw = nullptr;
  check(git_tree_lookup(&tree_raw, repo.get(), &tree_id), what);
  tree_ptr tree{tree_raw};
  auto sig = detail::make_signature(repo, author);
  const git_commit* parents[] = {parent.get()};
  git_oid id;
  check(git_commit_create(&id, repo.get(), "HEAD", sig.get(), sig.get(),
                          nullptr, message.c_str(), tree.get(), head ? 1 : 0,
                          parents),
        what);
  return to_hex(id);
}

std::string commit_only(repository& repo, const std::vector<std::string>& paths,
                        const std::string& message, const signature& author) {
  auto what = "commit in " + repo.workdir().string();
  detail::relax_object_checks();
  auto head = head_commit(repo);
  if (!head)
    throw error(what, "HEAD has no commit yet");
  auto parent = detail::lookup_commit(repo, *head);
  auto base = detail::tree_of(parent.get());
  auto root = repo.workdir();
  // The updates name their paths and ids; both must outlive the call.
  std::vector<git_oid> ids(paths.size());
  std::vector<git_tree_update> updates;
  for (size_t i = 0; i < paths.size(); ++i) {
    auto& path = paths[i];
    std::error_code ec;
    auto status = fs::symlink_status(root / path, ec);
    git_tree_update u{};
    u.path = path.c_str();
    if (fs::is_regular_file(status) || fs::is_symlink(status)) {
      check(git_blob_create_from_workdir(&ids[i], repo.get(), path.c_str()),
            what + ": store " + path);
      u.action = GIT_TREE_UPDATE_UPSERT;
      u.id = ids[i];
      u.filemode
        = fs::is_symlink(status) ? GIT_FILEMODE_LINK
          : (status.permissions() & fs::perms::owner_exec) != fs::perms::none
            ? GIT_FILEMODE_BLOB_EXECUTABLE
            : GIT_FILEMODE_BLOB;
    } else {
      git_tree_entry* raw = nullptr;
      if (git_tree_entry_bypath(&raw, base.get(), path.c_str()) != 0) {
        git_error_clear();
        continue; // neither there nor in HEAD
      }
      git_tree_entry_free(raw);
      u.action = GIT_TREE_UPDATE_REMOVE;
    }
    updates.push_back(u);
  }
  git_oid tree_id;
  check(git_tree_create_updated(&tree_id, repo.get(), base.get(),
                                updates.size(), updates.data()),
        what);
  if (git_oid_equal(git_commit_tree_id(parent.get()), &tree_id))
    return *head; // nothing changed
  git_tree* tree_raw = nullptr;
  check(git_tree_lookup(&tree_raw, repo.get(), &tree_id), what);
  tree_ptr tree{tree_raw};
  auto sig = detail::make_signature(repo, author);
  const git_commit* parents[] = {parent.get()};
  git_oid id;
  check(git_commit_create(&id, repo.get(), "HEAD", sig.get(), sig.get(),
                          nullptr, message.c_str(), tree.get(), 1, parents),
        what);
  // The committed paths' index entries follow; nothing else is touched.
  auto index = detail::repository_index(repo);
  check(git_index_read(index.get(), 0), what);
  for (auto& u : updates) {
    if (u.action == GIT_TREE_UPDATE_UPSERT)
      check(git_index_add_bypath(index.get(), u.path),
            what + ": stage " + u.path);
    else
      check(git_index_remove_bypath(index.get(), u.path),
            what + ": unstage " + u.path);
  }
  check(git_index_write(index.get()), what);
  return to_hex(id);
}

// -- list, remove, prune ------------------------------------------------------

bool keep_worktree(repository& repo, const fs::path& path) {
  auto found = find_worktree(repo, fs::absolute(path).string());
  if (!found)
    return false;
  auto marker = repo.common_dir() / "worktrees" / found->name / kept_marker;
  std::ofstream out(marker, std::ios::binary | std::ios::trunc);
  out << found->head << '\n';
  out.flush();
  if (!out)
    throw error("keep worktree " + found->path.string(),
                "cannot write " + marker.string());
  return true;
}

std::vector<worktree_info> list_worktrees(repository& repo) {
  strarray names;
  check(git_worktree_list(&names.value, repo.get()), "list worktrees");
  std::vector<worktree_info> result;
  for (size_t i = 0; i < names.value.count; ++i) {
    std::string name = names.value.strings[i];
    git_worktree* raw = nullptr;
    if (git_worktree_lookup(&raw, repo.get(), name.c_str()) != 0) {
      git_error_clear();
      continue;
    }
    worktree_ptr wt{raw};
    worktree_info info;
    info.name = name;
    info.path = git_worktree_path(wt.get());
    auto admin = repo.common_dir() / "worktrees" / name;
    read_admin_head(repo, admin, info);
    std::error_code ec;
    info.kept = fs::exists(admin / kept_marker, ec);
    result.push_back(std::move(info));
  }
  return result;
}

namespace {

fs::path trash_dir(repository& repo) {
  return repo.common_dir() / "taskforce-trash";
}

// Moves `folder` into the trash and says where; nothing when it cannot
// (another filesystem), in which case nothing moved.
std::optional<fs::path> move_to_trash(repository& repo,
                                      const fs::path& folder) {
  static unsigned counter = 0;
  auto trash = trash_dir(repo);
  std::error_code ec;
  fs::create_directories(trash, ec);
  auto target = trash
                / (folder.filename().string() + "-" + std::to_string(::getpid())
                   + "-" + std::to_string(++counter));
  fs::rename(folder, target, ec);
  if (ec)
    return std::nullopt;
  return target;
}

} // namespace

bool remove_worktree(repository& repo, const std::string& name_or_path,
                     bool force, bool defer_deletion) {
  auto found = find_worktree(repo, name_or_path);
  if (!found)
    return false;
  auto what = "remove worktree " + found->path.string();
  std::error_code ec;
  bool folder = fs::exists(found->path / ".git", ec);
  // A worktree whose reuse was cut short holds no work (see reuse_worktree).
  bool reuse_interrupted
    = interrupted_switch(repo, repo.common_dir() / "worktrees" / found->name)
        .has_value();
  if (folder && !force && !reuse_interrupted) {
    auto wt = open(found->path);
    auto paths = changed_paths(wt);
    if (!paths.empty()) {
      std::string list;
      for (size_t i = 0; i < paths.size() && i < 10; ++i)
        list += (i ? ", " : "") + paths[i];
      if (paths.size() > 10)
        list += ", ...";
      throw error(what, "it holds uncommitted changes: " + list);
    }
  }
  // Move the folder into the trash first (atomic), so a kill never leaves
  // a valid worktree with half its files deleted, and what a kill leaves
  // in the trash is found by empty_trash; then drop the admin entry, then
  // delete the moved folder (now, or later from the trash).
  fs::path doomed;
  if (fs::exists(found->path, ec)) {
    if (auto moved = move_to_trash(repo, found->path)) {
      if (!defer_deletion)
        doomed = *moved;
    } else {
      doomed = found->path;
      doomed += ".removing-" + std::to_string(::getpid());
      fs::rename(found->path, doomed, ec);
      if (ec)
        throw error(what, "cannot move the folder aside: " + ec.message());
    }
  }
  auto wt = lookup_worktree(repo, found->name);
  git_worktree_prune_options popts = GIT_WORKTREE_PRUNE_OPTIONS_INIT;
  popts.flags = GIT_WORKTREE_PRUNE_VALID;
  if (force)
    popts.flags |= GIT_WORKTREE_PRUNE_LOCKED;
  check(git_worktree_prune(wt.get(), &popts), what);
  if (!doomed.empty()) {
    fs::remove_all(doomed, ec);
    if (ec)
      throw error(what,
                  "cannot delete " + doomed.string() + ": " + ec.message());
  }
  return true;
}

size_t empty_trash(repository& repo) {
  auto trash = trash_dir(repo);
  std::error_code ec;
  size_t removed = 0;
  for (auto& entry : fs::directory_iterator(trash, ec)) {
    std::error_code ec2;
    fs::remove_all(entry.path(), ec2);
    if (ec2)
      throw error("empty the trash " + trash.string(),
                  "cannot delete " + entry.path().string() + ": "
                    + ec2.message());
    ++removed;
  }
  return removed;
}

std::vector<std::string> prune_worktrees(repository& repo) {
  strarray names;
  check(git_worktree_list(&names.value, repo.get()), "list worktrees");
  std::vector<std::string> pruned;
  for (size_t i = 0; i < names.value.count; ++i) {
    std::string name = names.value.strings[i];
    auto admin = repo.common_dir() / "worktrees" / name;
    if (unfinished_admin(admin)) {
      std::error_code ec;
      fs::remove_all(admin, ec);
      pruned.push_back(name);
      continue;
    }
    git_worktree* raw = nullptr;
    if (git_worktree_lookup(&raw, repo.get(), name.c_str()) != 0) {
      git_error_clear();
      continue;
    }
    worktree_ptr wt{raw};
    git_worktree_prune_options popts = GIT_WORKTREE_PRUNE_OPTIONS_INIT;
    if (git_worktree_is_prunable(wt.get(), &popts) != 1) {
      git_error_clear();
      continue;
    }
    check(git_worktree_prune(wt.get(), &popts), "prune worktree " + name);
    pruned.push_back(name);
  }
  return pruned;
}

} // namespace taskforce::git
