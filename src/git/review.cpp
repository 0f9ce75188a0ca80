#include "src/git/review.hpp"

#include <stdexcept>
#include <system_error>

#include "src/git/merge.hpp"

namespace fs = std::filesystem;

namespace taskforce::git {

namespace {

constexpr const char* review_prefix = "taskforce-review/";

fs::path review_path(const fs::path& root, const std::string& run_id,
                     const std::string& task_id) {
  return root / ".taskforce" / "review" / run_id / task_id;
}

/// Whether `rel` stays inside a checkout (no absolute path, no "..").
bool inside(const fs::path& rel) {
  if (rel.empty() || rel.is_absolute())
    return false;
  for (auto& part : rel)
    if (part == "..")
      return false;
  return true;
}

/// Makes `to` what `from` is on disk: the same file (with its executable
/// bit), the same symlink, or nothing.
void copy_path(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  auto st = fs::symlink_status(from, ec);
  auto old = fs::symlink_status(to, ec);
  if (fs::exists(old) || fs::is_symlink(old))
    fs::remove_all(to);
  if (!fs::exists(st) && !fs::is_symlink(st))
    return; // deleted in the task's checkout
  fs::create_directories(to.parent_path());
  if (fs::is_symlink(st)) {
    fs::create_symlink(fs::read_symlink(from), to);
  } else if (fs::is_regular_file(st)) {
    fs::copy_file(from, to);
    fs::permissions(to, st.permissions(), fs::perm_options::replace);
  }
}

} // namespace

std::string review_branch(const std::string& run_id,
                          const std::string& task_id) {
  return review_prefix + run_id + "/" + task_id;
}

size_t remove_reviews(repository& repo, const std::string& run_id,
                      const std::string& task_id) {
  auto prefix = review_prefix + run_id + "/";
  auto wanted = task_id.empty() ? std::string{} : prefix + task_id;
  size_t removed = 0;
  for (auto& wt : list_worktrees(repo)) {
    if (wt.branch.rfind(prefix, 0) != 0
        || (!wanted.empty() && wt.branch != wanted))
      continue;
    removed += remove_worktree(repo, wt.path.string(), true) ? 1 : 0;
  }
  prune_worktrees(repo);
  for (auto& b : list_branches(repo, prefix))
    if (wanted.empty() || b.name == wanted)
      delete_branch(repo, b.name);
  return removed;
}

review_checkout open_review(repository& repo, const fs::path& root,
                            const std::string& run_id,
                            const std::string& task_id,
                            const fs::path& checkout,
                            const std::vector<std::string>& paths,
                            const std::string& base_branch) {
  remove_reviews(repo, run_id, task_id);
  review_checkout r;
  r.path = review_path(root, run_id, task_id);
  r.branch = review_branch(run_id, task_id);
  std::error_code ec;
  fs::remove_all(r.path, ec); // a folder a kill left behind
  auto task_checkout = open(checkout);
  auto head = head_of(task_checkout).commit;
  if (head.empty())
    throw std::runtime_error("cannot review " + task_id + ": "
                             + checkout.string() + " has no commit");
  create_worktree(repo, r.path, r.branch, head);
  for (auto& p : paths) {
    fs::path rel{p};
    if (!inside(rel))
      throw std::runtime_error("cannot review " + task_id + ": the path " + p
                               + " leaves the checkout");
    copy_path(checkout / rel, r.path / rel);
  }
  auto scratch = open(r.path);
  auto from = head;
  if (auto tip = branch_tip(repo, base_branch))
    if (auto fork = merge_base(repo, head, *tip))
      from = *fork;
  r.diff = diff_text(scratch, from);
  r.before = take_snapshot(scratch);
  for (auto& b : list_branches(repo))
    if (b.name != r.branch)
      r.branches[b.name] = b.tip;
  return r;
}

std::vector<std::string> close_review(repository& repo,
                                      const review_checkout& review) {
  std::vector<std::string> changed;
  {
    auto scratch = open(review.path);
    changed = changed_since(scratch, review.before);
  }
  remove_worktree(repo, review.path.string(), true, true);
  delete_branch(repo, review.branch);
  // Refs are shared with the repository: a branch the reviewer moved, made
  // or deleted is put back.
  std::map<std::string, std::string> now;
  for (auto& b : list_branches(repo))
    if (b.name != review.branch)
      now[b.name] = b.tip;
  for (auto& [name, tip] : now) {
    auto was = review.branches.find(name);
    if (was == review.branches.end()) {
      delete_branch(repo, name);
      changed.push_back("branch " + name);
    } else if (was->second != tip) {
      move_branch(repo, name, tip, was->second);
      changed.push_back("branch " + name);
    }
  }
  for (auto& [name, tip] : review.branches)
    if (now.count(name) == 0) {
      move_branch(repo, name, "", tip);
      changed.push_back("branch " + name);
    }
  return changed;
}

} // namespace taskforce::git
