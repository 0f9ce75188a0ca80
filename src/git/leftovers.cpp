#include "src/git/leftovers.hpp"

#include <cctype>
#include <optional>
#include <set>

#include "src/git/error.hpp"
#include "src/git/worktree.hpp"
#include "src/text/join.hpp"

namespace fs = std::filesystem;

namespace taskforce::git {

namespace {

const std::string branch_prefix = "taskforce/";

/// The run of a task branch `taskforce/<run>/<task>`; "" for another one.
std::string run_of_branch(const std::string& branch) {
  if (branch.rfind(branch_prefix, 0) != 0)
    return {};
  auto rest = branch.substr(branch_prefix.size());
  auto slash = rest.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == rest.size())
    return {};
  return rest.substr(0, slash);
}

fs::path resolved(const fs::path& p) {
  std::error_code ec;
  auto r = fs::weakly_canonical(p, ec);
  if (ec)
    r = p.lexically_normal();
  return r.has_filename() ? r : r.parent_path();
}

/// `path` relative to `dir` when it lies inside it; nothing otherwise.
std::optional<fs::path> inside(const fs::path& path, const fs::path& dir) {
  auto rel = resolved(path).lexically_relative(resolved(dir));
  if (rel.empty() || rel.begin()->string() == ".."
      || rel.begin()->string() == ".")
    return std::nullopt;
  return rel;
}

/// Regular files (and symlinks) anywhere under `dir`.
size_t files_under(const fs::path& dir) {
  size_t n = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec))
    if (!it->is_directory(ec))
      ++n;
  return n;
}

/// "a, b, c" or "a, b, c and 4 more".
std::string some_of(const std::vector<std::string>& paths) {
  constexpr size_t shown = 3;
  if (paths.size() <= shown)
    return join(paths);
  std::vector<std::string> head(paths.begin(), paths.begin() + shown);
  return join(head) + " and " + std::to_string(paths.size() - shown) + " more";
}

/// Who judges the leftovers of one repository.
struct judge {
  repository& repo;
  const std::map<std::string, run_facts>& runs;
  std::string head_branch_name;

  /// Whether the run's leftovers are a resume's to use, or `run_id` is no
  /// run's at all: the ledger does not know it and it is not shaped like a
  /// run id (`20261202-055014-247e`), so a branch such as
  /// `taskforce/fix/parser` is the user's.
  bool not_ours(const std::string& run_id) const {
    auto r = runs.find(run_id);
    if (r != runs.end())
      return r->second.unfinished;
    auto digits = [&](size_t from, size_t n) {
      for (size_t i = from; i < from + n; ++i)
        if (i >= run_id.size()
            || !std::isdigit(static_cast<unsigned char>(run_id[i])))
          return false;
      return true;
    };
    if (run_id.size() < 17 || !digits(0, 8) || run_id[8] != '-' || !digits(9, 6)
        || run_id[15] != '-')
      return true;
    for (size_t i = 16; i < run_id.size(); ++i)
      if (!std::isxdigit(static_cast<unsigned char>(run_id[i])))
        return true;
    return false;
  }

  std::string base_of(const std::string& run_id) const {
    auto r = runs.find(run_id);
    return r != runs.end() && !r->second.base_branch.empty()
             ? r->second.base_branch
             : head_branch_name;
  }

  /// Why `commit` is work the run's base does not have ("" when it has it).
  std::string unmerged(const std::string& run_id, const std::string& commit) {
    auto base = base_of(run_id);
    auto tip = branch_tip(repo, base);
    if (!tip)
      return "its run's base branch " + base + " is gone";
    if (commit.empty() || is_ancestor(repo, commit, *tip))
      return {};
    return "commits not merged into " + base;
  }
};

} // namespace

const char* to_string(leftover::kind k) {
  switch (k) {
    case leftover::kind::worktree: return "worktree";
    case leftover::kind::branch: return "branch";
    case leftover::kind::folder: return "folder";
    case leftover::kind::record: return "record";
  }
  return "?";
}

std::vector<leftover>
find_leftovers(repository& repo, const fs::path& root,
               const std::map<std::string, run_facts>& runs) {
  judge j{repo, runs, {}};
  try {
    j.head_branch_name = head_branch(repo);
  } catch (const error&) {
    // A detached HEAD: runs the ledger does not know have no base.
  }
  auto state = root / ".taskforce";
  auto worktrees_dir = state / "worktrees";
  auto scratch_dir = state / "merge-check";
  std::vector<leftover> out;
  std::set<std::string> checked_out;
  std::set<fs::path> registered;
  for (auto& wt : list_worktrees(repo)) {
    checked_out.insert(wt.branch);
    registered.insert(resolved(wt.path));
    auto in_tree = inside(wt.path, worktrees_dir);
    auto in_scratch = inside(wt.path, scratch_dir);
    if (!in_tree && !in_scratch)
      continue; // the user's own worktree
    leftover l;
    l.path = wt.path;
    l.branch = wt.branch;
    l.name = wt.name;
    l.run_id = run_of_branch(wt.branch);
    if (l.run_id.empty())
      l.run_id = (in_tree ? *in_tree : *in_scratch).begin()->string();
    if (j.not_ours(l.run_id))
      continue;
    std::error_code ec;
    if (!fs::exists(wt.path / ".git", ec)) {
      l.what = leftover::kind::record;
      if (!run_of_branch(wt.branch).empty())
        l.work = j.unmerged(l.run_id, wt.head);
      out.push_back(std::move(l));
      continue;
    }
    l.what = leftover::kind::worktree;
    if (in_scratch) {
      // Where a merge result was checked for its gate: never anyone's work.
      out.push_back(std::move(l));
      continue;
    }
    std::vector<std::string> why;
    if (wt.kept)
      why.push_back("set aside after an attempt moved its HEAD");
    try {
      auto checkout = open(wt.path);
      if (auto changed = changed_paths(checkout); !changed.empty())
        why.push_back("uncommitted changes: " + some_of(changed));
    } catch (const error& e) {
      why.push_back(std::string{"cannot be read: "} + e.what());
    }
    if (auto u = j.unmerged(l.run_id, wt.head); !u.empty())
      why.push_back(u);
    l.work = join(why, "; ");
    out.push_back(std::move(l));
  }
  for (auto& b : list_branches(repo, branch_prefix)) {
    auto run_id = run_of_branch(b.name);
    if (run_id.empty() || checked_out.count(b.name) > 0 || j.not_ours(run_id))
      continue;
    leftover l;
    l.what = leftover::kind::branch;
    l.run_id = run_id;
    l.branch = b.name;
    l.work = j.unmerged(run_id, b.tip);
    out.push_back(std::move(l));
  }
  // Folders no worktree uses: what a kill or a removal by hand left.
  for (auto& top : {worktrees_dir, scratch_dir}) {
    std::error_code ec;
    for (fs::directory_iterator runs_it(top, ec), end; !ec && runs_it != end;
         runs_it.increment(ec)) {
      if (!runs_it->is_directory(ec))
        continue;
      auto run_id = runs_it->path().filename().string();
      if (j.not_ours(run_id))
        continue;
      bool any = false;
      std::error_code ec2;
      for (fs::directory_iterator it(runs_it->path(), ec2); !ec2 && it != end;
           it.increment(ec2)) {
        any = true;
        if (registered.count(resolved(it->path())) > 0)
          continue;
        leftover l;
        l.what = leftover::kind::folder;
        l.run_id = run_id;
        l.path = it->path();
        // A half-prepared checkout set aside (".orphan-"): no worker ran
        // in it. A scratch folder: nobody's work either.
        bool orphan = it->path().filename().string().find(".orphan-")
                      != std::string::npos;
        if (top == worktrees_dir && !orphan)
          if (auto n = files_under(it->path()); n > 0)
            l.work = std::to_string(n) + (n == 1 ? " file" : " files")
                     + " in a folder that is no worktree";
        out.push_back(std::move(l));
      }
      if (!any) {
        leftover l;
        l.what = leftover::kind::folder;
        l.run_id = run_id;
        l.path = runs_it->path();
        out.push_back(std::move(l));
      }
    }
  }
  return out;
}

namespace {

/// Removes `dir` and its parents up to `.taskforce/`, each only when empty.
void drop_empty_parents(fs::path dir) {
  std::error_code ec;
  for (int i = 0; i < 2 && !dir.empty(); ++i) {
    if (!fs::remove(dir, ec))
      return;
    dir = dir.parent_path();
  }
}

} // namespace

bool remove_leftover(repository& repo, const leftover& l, bool force) {
  if (!l.work.empty() && !force)
    return false;
  auto drop_branch = [&] {
    if (!run_of_branch(l.branch).empty())
      delete_branch(repo, l.branch);
  };
  switch (l.what) {
    case leftover::kind::worktree:
      remove_worktree(repo, l.path.string(), true);
      drop_branch();
      drop_empty_parents(l.path.parent_path());
      break;
    case leftover::kind::record:
      prune_worktrees(repo);
      drop_branch();
      break;
    case leftover::kind::branch: delete_branch(repo, l.branch); break;
    case leftover::kind::folder:
      fs::remove_all(l.path);
      drop_empty_parents(l.path.parent_path());
      break;
  }
  return true;
}

} // namespace taskforce::git
