#include "actors/git_service.hpp"

#include <algorithm>
#include <deque>
#include <fstream>
#include <optional>
#include <set>

#include <caf/all.hpp>
#include <git2.h>
#include <spdlog/spdlog.h>

#include "src/git/git.hpp"
#include "src/git/handle.hpp"
#include "src/scope/coverage.hpp"

namespace fs = std::filesystem;

namespace taskforce {

std::string task_branch(const std::string& run_id, const std::string& task_id) {
  return "taskforce/" + run_id + "/" + task_id;
}

fs::path task_worktree(const fs::path& root, const std::string& run_id,
                       const std::string& task_id) {
  return root / ".taskforce" / "worktrees" / run_id / task_id;
}

std::string commit_in_place(git::repository& repo,
                            const std::vector<std::string>& scope,
                            const std::string& message) {
  auto changed = git::changed_paths(repo);
  scope::coverage cover{scope};
  git_index* raw_index = nullptr;
  git::check(git_repository_index(&raw_index, repo.get()), "open the index");
  git::index_ptr index{raw_index};
  auto root = repo.workdir();
  size_t staged = 0;
  for (auto& path : changed) {
    if (!cover.covers(path))
      continue;
    std::error_code ec;
    if (fs::exists(root / path, ec))
      git::check(git_index_add_bypath(index.get(), path.c_str()),
                 "stage " + path);
    else
      git::check(git_index_remove_bypath(index.get(), path.c_str()),
                 "unstage " + path);
    ++staged;
  }
  if (staged == 0)
    return "";
  git::check(git_index_write(index.get()), "write the index");
  git_oid tree_id;
  git::check(git_index_write_tree(&tree_id, index.get()), "write the tree");
  git_tree* raw_tree = nullptr;
  git::check(git_tree_lookup(&raw_tree, repo.get(), &tree_id), "read the tree");
  git::tree_ptr tree{raw_tree};
  git_signature* raw_sig = nullptr;
  if (git_signature_default(&raw_sig, repo.get()) < 0)
    git::check(git_signature_now(&raw_sig, "taskforce", "taskforce@localhost"),
               "make a signature");
  git::signature_ptr sig{raw_sig};
  git::commit_ptr parent;
  if (auto head = git::head_commit(repo)) {
    auto id = git::from_hex(*head, "read HEAD");
    git_commit* raw_parent = nullptr;
    git::check(git_commit_lookup(&raw_parent, repo.get(), &id), "read HEAD");
    parent.reset(raw_parent);
  }
  const git_commit* parents[] = {parent.get()};
  git_oid commit_id;
  git::check(git_commit_create(&commit_id, repo.get(), "HEAD", sig.get(),
                               sig.get(), nullptr, message.c_str(), tree.get(),
                               parent ? 1 : 0, parents),
             "commit in place");
  return git::to_hex(commit_id);
}

namespace {

struct git_state {
  static inline const char* name = "git_service";

  /// The service's setup (the main repository, moved in at spawn).
  git_service_setup setup{git::repository{nullptr}, {}, {}, {}, true, {}};
  /// Clean worktrees whose work is merged, ready for the next task.
  std::deque<fs::path> spares;
  /// Worktrees given to an attempt and not yet merged: never reused.
  std::set<std::string> leased;
};

using self_ptr = git_actor::stateful_pointer<git_state>;

caf::error fail(const std::string& what) {
  return caf::make_error(caf::sec::runtime_error, what);
}

bool is_worktree_at(git::repository& repo, const fs::path& path,
                    std::string* branch) {
  for (auto& wt : git::list_worktrees(repo)) {
    std::error_code ec;
    if (fs::equivalent(wt.path, path, ec)) {
      if (branch != nullptr)
        *branch = wt.branch;
      return true;
    }
  }
  return false;
}

// A folder in our worktree area that git does not know as a worktree holds
// no git work; it is moved aside rather than deleted all the same.
void move_aside(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return;
  if (fs::is_empty(path, ec)) {
    fs::remove(path, ec);
    return;
  }
  auto aside = path;
  aside += ".orphan-" + std::to_string(::time(nullptr));
  fs::rename(path, aside, ec);
}

// A worktree being created or reset is marked until it is complete: a kill
// in the middle leaves a half checkout that must never be taken for a kept
// worktree (no worker ran in it yet, so it holds no work).
fs::path marker_for(self_ptr self, const fs::path& wt) {
  auto name = wt.string();
  for (auto& c : name)
    if (c == '/')
      c = '_';
  return self->state.setup.root / ".taskforce" / "preparing" / name;
}

struct preparing {
  fs::path marker;
  preparing(fs::path m, const fs::path& wt) : marker(std::move(m)) {
    std::error_code ec;
    fs::create_directories(marker.parent_path(), ec);
    std::ofstream out(marker);
    out << wt.string() << '\n';
    out.flush();
  }
  ~preparing() {
    std::error_code ec;
    fs::remove(marker, ec);
  }
};

void drop_half_prepared(self_ptr self) {
  auto dir = self->state.setup.root / ".taskforce" / "preparing";
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return;
  auto& repo = self->state.setup.repo;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    std::ifstream in(e.path());
    std::string path;
    std::getline(in, path);
    try {
      std::string branch;
      if (!path.empty() && is_worktree_at(repo, path, &branch)) {
        spdlog::info("removing half-prepared worktree {}", path);
        git::remove_worktree(repo, path, true);
      } else if (!path.empty()) {
        move_aside(path);
      }
      git::prune_worktrees(repo);
    } catch (const std::exception& x) {
      spdlog::warn("cannot remove half-prepared worktree {}: {}", path,
                   x.what());
    }
    fs::remove(e.path(), ec);
  }
}

worktree_lease lease(self_ptr self, const worktree_request& req) {
  auto& st = self->state;
  auto& repo = st.setup.repo;
  auto branch = task_branch(req.run_id, req.task_id);
  auto path = req.known_path.empty()
                ? task_worktree(st.setup.root, req.run_id, req.task_id)
                : fs::path{req.known_path};
  // Where the task's branch is checked out is the truth; the ledger's path
  // may lag behind a kill.
  std::optional<fs::path> existing;
  for (auto& wt : git::list_worktrees(repo))
    if (wt.branch == branch)
      existing = wt.path;
  if (existing && !req.fresh) {
    // The kept worktree of an earlier (interrupted or failed) attempt.
    st.leased.insert(existing->string());
    return {existing->string(), branch, true};
  }
  if (existing && req.fresh) {
    st.leased.erase(existing->string());
    git::remove_worktree(repo, existing->string(), true);
    auto tip = git::branch_tip(repo, branch);
    auto base = git::branch_tip(repo, st.setup.base_branch);
    if (tip && base && !git::is_ancestor(repo, *tip, *base))
      spdlog::info("fresh worktree for {}: dropping unmerged {}", req.task_id,
                   branch);
    git::delete_branch(repo, branch);
  }
  auto base = git::branch_tip(repo, st.setup.base_branch);
  if (!base)
    throw git::error("lease a worktree for " + req.task_id,
                     "base branch " + st.setup.base_branch + " has no commit");
  while (!st.spares.empty()) {
    auto spare = st.spares.front();
    st.spares.pop_front();
    if (st.leased.count(spare.string()) > 0)
      continue;
    preparing mark{marker_for(self, spare), spare};
    auto r = git::reuse_worktree(repo, spare, branch, *base);
    if (r.status == git::reuse_result::outcome::reused) {
      if (!r.previous_branch.empty() && r.previous_branch != branch)
        if (auto tip = git::branch_tip(repo, r.previous_branch);
            tip && git::is_ancestor(repo, *tip, *base))
          git::delete_branch(repo, r.previous_branch);
      st.leased.insert(spare.string());
      return {spare.string(), branch, true};
    }
    if (r.status == git::reuse_result::outcome::branch_has_work)
      break; // the task's own branch holds work: never reset it
  }
  path = task_worktree(st.setup.root, req.run_id, req.task_id);
  for (int n = 2; is_worktree_at(repo, path, nullptr); ++n) {
    // Our folder holds another branch's worktree (it was reused): reset it
    // if its work is merged, else leave it alone and go next door.
    if (st.leased.count(path.string()) == 0) {
      preparing mark{marker_for(self, path), path};
      auto r = git::reuse_worktree(repo, path, branch, *base);
      if (r.status == git::reuse_result::outcome::reused) {
        st.leased.insert(path.string());
        return {path.string(), branch, true};
      }
    }
    path = task_worktree(st.setup.root, req.run_id,
                         req.task_id + "-" + std::to_string(n));
  }
  move_aside(path);
  git::prune_worktrees(repo);
  fs::create_directories(path.parent_path());
  preparing mark{marker_for(self, path), path};
  // An admin folder left by a creation that was killed half way names no
  // usable worktree: it would block the name.
  auto admin = repo.common_dir() / "worktrees" / git::worktree_name_for(branch);
  bool admin_in_use = false;
  for (auto& wt : git::list_worktrees(repo))
    admin_in_use |= wt.name == admin.filename().string();
  std::error_code ec;
  if (!admin_in_use && fs::exists(admin, ec))
    fs::remove_all(admin, ec);
  auto info = git::create_worktree(repo, path, branch, *base);
  st.leased.insert(info.path.string());
  return {info.path.string(), branch, false};
}

merge_outcome merge(self_ptr self, const merge_request& req) {
  auto& st = self->state;
  auto& repo = st.setup.repo;
  auto message = "taskforce: " + req.task_id + ": " + req.title;
  merge_outcome out;
  if (req.branch.empty()) {
    // In place (useWorktrees: false): commit the task's scope right here.
    auto commit = commit_in_place(repo, req.scope, message);
    out.status = commit.empty() ? merge_status::empty : merge_status::merged;
    out.merge_commit = commit.empty() ? git::head_commit(repo).value_or("")
                                      : commit;
    return out;
  }
  std::error_code ec;
  fs::path wt{req.worktree};
  bool have_worktree = !req.worktree.empty()
                       && is_worktree_at(repo, wt, nullptr);
  if (have_worktree) {
    auto tree = git::open(wt);
    git::commit_all(tree, message);
  }
  auto tip = git::branch_tip(repo, req.branch);
  if (!tip) {
    out.status = merge_status::error;
    out.message = "branch " + req.branch + " is gone";
    return out;
  }
  auto done_with_worktree = [&] {
    if (!have_worktree || !req.cleanup)
      return;
    st.leased.erase(wt.string());
    if (st.setup.reuse_worktrees) {
      if (std::find(st.spares.begin(), st.spares.end(), wt) == st.spares.end())
        st.spares.push_back(wt);
      return;
    }
    try {
      git::remove_worktree(repo, wt.string(), false);
      git::delete_branch(repo, req.branch);
    } catch (const git::error& e) {
      spdlog::warn("keeping worktree {}: {}", wt.string(), e.what());
    }
  };
  if (auto merged = git::merged_commit(repo, *tip, st.setup.base_branch)) {
    out.status = *merged == *tip ? merge_status::empty
                                 : merge_status::already_merged;
    out.merge_commit = *merged;
    done_with_worktree();
    if (!have_worktree && req.cleanup)
      git::delete_branch(repo, req.branch);
    return out;
  }
  auto r = git::merge_into_base(repo, req.branch, st.setup.base_branch,
                                "Merge " + req.branch + ": " + req.title);
  using oc = git::merge_result::outcome;
  switch (r.status) {
    case oc::merged:
    case oc::already_merged:
      out.status = r.status == oc::merged ? merge_status::merged
                                          : merge_status::already_merged;
      out.merge_commit = r.commit;
      done_with_worktree();
      break;
    case oc::conflict:
      out.status = merge_status::conflict;
      out.paths = r.paths;
      break;
    case oc::dirty_checkout:
      out.status = merge_status::dirty;
      out.paths = r.paths;
      break;
  }
  return out;
}

bool finish(self_ptr self) {
  auto& st = self->state;
  st.spares.clear();
  remove_merged_leftovers(st.setup.repo, st.setup.base_branch,
                          st.setup.run_id, st.leased);
  return true;
}

} // namespace

void remove_merged_leftovers(git::repository& repo,
                             const std::string& base_branch,
                             const std::string& run_id,
                             const std::set<std::string>& leased) {
  auto base = git::branch_tip(repo, base_branch);
  if (!base)
    return;
  // Worktrees of this run whose branch is merged: clean ones go (spares,
  // done tasks, a clean interrupted one); one holding changes stays.
  auto prefix = "taskforce/" + run_id + "/";
  std::set<std::string> checked_out;
  for (auto& wt : git::list_worktrees(repo)) {
    checked_out.insert(wt.branch);
    if (wt.branch.rfind(prefix, 0) != 0 || leased.count(wt.path.string()))
      continue;
    auto tip = git::branch_tip(repo, wt.branch);
    if (!tip || !git::is_ancestor(repo, *tip, *base))
      continue;
    try {
      git::remove_worktree(repo, wt.path.string(), false);
      checked_out.erase(wt.branch);
      std::error_code ec;
      fs::remove(wt.path.parent_path(), ec); // the run folder, when empty
    } catch (const git::error& e) {
      spdlog::info("keeping worktree {}: {}", wt.path.string(), e.what());
    }
  }
  // Branches of this run that are merged and checked out nowhere.
  for (auto& b : git::list_branches(repo, prefix))
    if (checked_out.count(b.name) == 0 && git::is_ancestor(repo, b.tip, *base))
      git::delete_branch(repo, b.name);
}

git_actor::behavior_type git_service(git_actor::stateful_pointer<git_state> self,
                                     git_service_setup setup) {
  self->state.setup = std::move(setup);
  drop_half_prepared(self);
  for (auto& p : self->state.setup.spares)
    if (std::find(self->state.spares.begin(), self->state.spares.end(), p)
        == self->state.spares.end())
      self->state.spares.push_back(p);
  return {
    [self](lease_atom, worktree_request& req) -> caf::result<worktree_lease> {
      try {
        return lease(self, req);
      } catch (const std::exception& e) {
        return fail(e.what());
      }
    },
    [self](changed_atom,
           std::string& path) -> caf::result<std::vector<std::string>> {
      try {
        auto tree = git::open(path);
        return git::changed_paths(tree);
      } catch (const std::exception& e) {
        return fail(e.what());
      }
    },
    [self](merge_atom, merge_request& req) -> caf::result<merge_outcome> {
      try {
        return merge(self, req);
      } catch (const std::exception& e) {
        merge_outcome out;
        out.status = merge_status::error;
        out.message = e.what();
        return out;
      }
    },
    [self](discard_atom, std::string& run,
           std::string& task) -> caf::result<bool> {
      try {
        auto& repo = self->state.setup.repo;
        auto branch = task_branch(run, task);
        bool removed = false;
        for (auto& wt : git::list_worktrees(repo))
          if (wt.branch == branch) {
            self->state.leased.erase(wt.path.string());
            removed |= git::remove_worktree(repo, wt.path.string(), true);
          }
        removed |= git::delete_branch(repo, branch);
        return removed;
      } catch (const std::exception& e) {
        return fail(e.what());
      }
    },
    [self](finished_atom) -> caf::result<bool> {
      try {
        return finish(self);
      } catch (const std::exception& e) {
        return fail(e.what());
      }
    },
  };
}

git_actor spawn_git_service(caf::actor_system& sys, git_service_setup setup) {
  return sys.spawn<caf::detached>(git_service, std::move(setup));
}

} // namespace taskforce
