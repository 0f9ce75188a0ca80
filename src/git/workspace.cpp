#include "src/git/workspace.hpp"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <optional>

#include <spdlog/spdlog.h>

#include "src/git/merge.hpp"
#include "src/scope/coverage.hpp"
#include "src/text/join.hpp"

namespace fs = std::filesystem;

namespace taskforce::git {

std::string task_branch(const std::string& run_id, const std::string& task_id) {
  return "taskforce/" + run_id + "/" + task_id;
}

fs::path task_worktree(const fs::path& root, const std::string& run_id,
                       const std::string& task_id) {
  return root / ".taskforce" / "worktrees" / run_id / task_id;
}

std::string commit_in_place(repository& repo,
                            const std::vector<std::string>& scope,
                            const std::string& message,
                            std::vector<std::string>* committed,
                            const std::vector<std::string>* changed) {
  scope::coverage cover{scope};
  std::vector<std::string> mine;
  auto looked = changed ? std::vector<std::string>{} : changed_paths(repo);
  for (auto& path : changed ? *changed : looked)
    if (scope.empty() || cover.covers(path))
      mine.push_back(path);
  if (mine.empty())
    return "";
  auto head = head_commit(repo);
  auto tip = commit_only(repo, mine, message);
  if (head && tip == *head)
    return "";
  if (committed)
    *committed = std::move(mine);
  return tip;
}

namespace {

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

std::string short_id(const std::string& commit) {
  return commit.substr(0, 12);
}

std::string kept_ref(const attempt_place& req) {
  return "refs/taskforce/kept/" + req.run_id + "/" + req.task_id + "/attempt-"
         + std::to_string(req.attempt);
}

std::string describe_head(const git::head_info& head) {
  const std::string heads = "refs/heads/";
  if (head.ref.empty())
    return "a detached HEAD at " + short_id(head.commit);
  if (head.ref.rfind(heads, 0) == 0)
    return "branch " + head.ref.substr(heads.size());
  return head.ref;
}

// Keeps `commit` reachable unless `from` already reaches it; adds what it
// did to `kept`.
void keep(git::repository& repo, const std::string& name,
          const std::string& commit, const std::string& from,
          std::vector<std::string>& kept) {
  if (commit.empty() || commit == from
      || (!from.empty() && git::is_ancestor(repo, commit, from)))
    return;
  kept.push_back("commit " + short_id(commit) + " is kept as "
                 + git::pin_commit(repo, name, commit));
}

// A landing written down for the task it is for.
struct task_journal : landing_journal {
  landing_journal* to;
  std::string task;
  task_journal(landing_journal* j, std::string t) : to(j), task(std::move(t)) {}
  void landing(const checkout_update& u) override {
    auto mine = u;
    mine.task = task;
    to->landing(mine);
  }
  void landed(const checkout_update& u, bool moved) override {
    auto mine = u;
    mine.task = task;
    to->landed(mine, moved);
  }
};

} // namespace

workspace::workspace(repository repo, fs::path root, std::string base_branch,
                     std::string run_id, bool reuse_worktrees,
                     const std::vector<fs::path>& spares)
  : repo_(std::move(repo)), root_(std::move(root)),
    base_branch_(std::move(base_branch)), run_id_(std::move(run_id)),
    reuse_(reuse_worktrees) {
  vouched_ = branch_tip(repo_, base_branch_).value_or("");
  drop_half_prepared();
  for (auto& p : spares)
    if (std::find(spares_.begin(), spares_.end(), p) == spares_.end())
      spares_.push_back(p);
}

std::string workspace::snapshot(const attempt_place& place,
                                std::vector<std::string> scope) {
  // The base as the attempt starts: a refused move since is told at its
  // first check.
  base_news_.erase(place.task_id);
  if (gate_watch_.erase(place.task_id) > 0)
    busy_until_ = ++clock_;
  if (auto news = observe_base(place.task_id); !news.empty())
    base_news_[place.task_id] = news;
  auto& path = place.checkout;
  auto snap = fs::equivalent(path, root_) ? take_snapshot(repo_) : [&] {
    auto other = open(path);
    return take_snapshot(other);
  }();
  auto head = snap.head.commit;
  // An earlier attempt of the task is over, whether or not it said so.
  for (auto& [key, a] : in_place_)
    if (key.first == place.task_id && a.closed == 0)
      a.closed = ++clock_;
  scope::coverage cover{scope};
  in_place_.insert_or_assign({place.task_id, place.attempt},
                             in_place_attempt{path, std::move(scope),
                                              std::move(cover), std::move(snap),
                                              ++clock_, 0});
  checked_.erase(place.task_id);
  forget_closed();
  if (journal_)
    try {
      journal_->vouch(vouched_, "attempt", place.task_id, place.attempt);
    } catch (const std::exception& e) {
      spdlog::warn("cannot record the base tip: {}", e.what());
    }
  return head;
}

void workspace::release(const attempt_place& place) {
  if (!place.branch.empty()) {
    auto w = watched_.find(place.task_id);
    if (w != watched_.end() && w->second.attempt == place.attempt
        && w->second.closed == 0)
      busy_until_ = w->second.closed = ++clock_;
    return;
  }
  auto found = in_place_.find({place.task_id, place.attempt});
  if (found == in_place_.end() || found->second.closed != 0)
    return;
  busy_until_ = found->second.closed = ++clock_;
  forget_closed();
}

// A closed attempt is kept while an attempt open now began before it
// closed: the open one's check may see its changes.
void workspace::forget_closed() {
  auto first_open = clock_ + 1;
  for (auto& [key, a] : in_place_)
    if (a.closed == 0)
      first_open = std::min(first_open, a.opened);
  for (auto it = in_place_.begin(); it != in_place_.end();)
    if (it->second.closed != 0 && it->second.closed < first_open)
      it = in_place_.erase(it);
    else
      ++it;
}

attempt_changes workspace::check(const attempt_place& place) {
  return place.branch.empty() ? check_in_place(place) : check_worktree(place);
}

integration workspace::check_merged(const integration_request& req) {
  integration out;
  out.status = integration::outcome::not_merged;
  if (req.branch.empty())
    return out;
  fs::path wt{req.worktree};
  if (!req.worktree.empty() && is_worktree_at(wt, nullptr)) {
    auto tree = open(wt);
    if (!changed_paths(tree).empty())
      return out;
  }
  auto tip = branch_tip(repo_, req.branch);
  if (!tip) {
    out.message = "branch " + req.branch + " is gone";
    return out;
  }
  if (auto merged = merged_commit(repo_, *tip, base_branch_)) {
    out.status = integration::outcome::merged;
    out.commit = *merged;
  }
  return out;
}

bool workspace::discard(const std::string& run_id, const std::string& task_id) {
  auto branch = task_branch(run_id, task_id);
  bool removed = false;
  for (auto& wt : list_worktrees(repo_))
    if (wt.branch == branch) {
      leased_.erase(wt.path.string());
      removed |= remove_worktree(repo_, wt.path.string(), true);
    }
  removed |= delete_branch(repo_, branch);
  return removed;
}

bool workspace::is_worktree_at(const fs::path& path, std::string* branch) {
  for (auto& wt : list_worktrees(repo_)) {
    std::error_code ec;
    if (fs::equivalent(wt.path, path, ec)) {
      if (branch != nullptr)
        *branch = wt.branch;
      return true;
    }
  }
  return false;
}

// Whether the worktree at `path` may be reset for another task: it is on
// one of our branches and was not set aside because an attempt moved its
// HEAD (see check_worktree).
bool workspace::reusable(const fs::path& path) {
  for (auto& wt : list_worktrees(repo_)) {
    std::error_code ec;
    if (fs::equivalent(wt.path, path, ec))
      return !wt.kept && wt.branch.rfind("taskforce/", 0) == 0;
  }
  return false;
}

// A worktree being created or reset is marked until it is complete: a kill
// in the middle leaves a half checkout that must never be taken for a kept
// worktree (no worker ran in it yet, so it holds no work).
fs::path workspace::marker_for(const fs::path& wt) const {
  auto name = wt.string();
  for (auto& c : name)
    if (c == '/')
      c = '_';
  return root_ / ".taskforce" / "preparing" / name;
}

void workspace::drop_half_prepared() {
  auto dir = root_ / ".taskforce" / "preparing";
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return;
  auto& repo = repo_;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    std::ifstream in(e.path());
    std::string path;
    std::getline(in, path);
    try {
      std::string branch;
      if (!path.empty() && is_worktree_at(path, &branch)) {
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

lease workspace::lease_worktree(const std::string& task_id, bool fresh,
                                const std::string& known_path,
                                uint64_t attempt) {
  base_news_.erase(task_id);
  if (gate_watch_.erase(task_id) > 0) // a merge check that never ended
    busy_until_ = ++clock_;
  if (auto news = observe_base(task_id); !news.empty())
    base_news_[task_id] = news;
  auto l = make_lease(task_id, fresh, known_path);
  // From now on the main checkout is the run's to keep as it is.
  watched_.insert_or_assign(
    task_id, watched_attempt{attempt, take_snapshot(repo_), ++clock_, 0});
  if (journal_)
    try {
      journal_->vouch(vouched_, "attempt", task_id, attempt);
    } catch (const std::exception& e) {
      spdlog::warn("cannot record the base tip: {}", e.what());
    }
  return l;
}

lease workspace::make_lease(const std::string& task_id, bool fresh,
                            const std::string& known_path) {
  auto& repo = repo_;
  auto branch = task_branch(run_id_, task_id);
  auto path = known_path.empty() ? task_worktree(root_, run_id_, task_id)
                                 : fs::path{known_path};
  // Where the task's branch is checked out is the truth; the ledger's path
  // may lag behind a kill.
  std::optional<fs::path> existing;
  for (auto& wt : git::list_worktrees(repo))
    if (wt.branch == branch && !wt.kept)
      existing = wt.path;
  if (existing && !fresh) {
    // The kept worktree of an earlier (interrupted or failed) attempt.
    leased_.insert(existing->string());
    return {existing->string(), branch, true,
            git::branch_tip(repo, branch).value_or("")};
  }
  if (existing && fresh) {
    leased_.erase(existing->string());
    git::remove_worktree(repo, existing->string(), true);
    auto tip = git::branch_tip(repo, branch);
    auto base = git::branch_tip(repo, base_branch_);
    if (tip && base && !git::is_ancestor(repo, *tip, *base))
      spdlog::info("fresh worktree for {}: dropping unmerged {}", task_id,
                   branch);
    git::delete_branch(repo, branch);
  }
  auto base = git::branch_tip(repo, base_branch_);
  if (!base)
    throw git::error("lease a worktree for " + task_id,
                     "base branch " + base_branch_ + " has no commit");
  while (!spares_.empty()) {
    auto spare = spares_.front();
    spares_.pop_front();
    if (leased_.count(spare.string()) > 0 || !reusable(spare))
      continue;
    preparing mark{marker_for(spare), spare};
    auto r = git::reuse_worktree(repo, spare, branch, *base);
    if (r.status == git::reuse_result::outcome::reused) {
      if (!r.previous_branch.empty() && r.previous_branch != branch)
        if (auto tip = git::branch_tip(repo, r.previous_branch);
            tip && git::is_ancestor(repo, *tip, *base))
          git::delete_branch(repo, r.previous_branch);
      leased_.insert(spare.string());
      return {spare.string(), branch, true, *base};
    }
    if (r.status == git::reuse_result::outcome::branch_has_work)
      break; // the task's own branch holds work: never reset it
  }
  // A branch holding work checked out nowhere (its worktree was kept when
  // an attempt moved HEAD) goes on from its tip; any other from the base.
  auto from = *base;
  if (auto tip = git::branch_tip(repo, branch);
      tip && !git::is_ancestor(repo, *tip, *base))
    from = *tip;
  path = task_worktree(root_, run_id_, task_id);
  for (int n = 2; is_worktree_at(path, nullptr); ++n) {
    // Our folder holds another branch's worktree (it was reused): reset it
    // if its work is merged, else leave it alone and go next door.
    if (leased_.count(path.string()) == 0 && from == *base && reusable(path)) {
      preparing mark{marker_for(path), path};
      auto r = git::reuse_worktree(repo, path, branch, *base);
      if (r.status == git::reuse_result::outcome::reused) {
        leased_.insert(path.string());
        return {path.string(), branch, true, *base};
      }
    }
    path = task_worktree(root_, run_id_, task_id + "-" + std::to_string(n));
  }
  move_aside(path);
  git::prune_worktrees(repo);
  fs::create_directories(path.parent_path());
  preparing mark{marker_for(path), path};
  // An admin folder left by a creation that was killed half way names no
  // usable worktree: it would block the name.
  auto admin = repo.common_dir() / "worktrees" / git::worktree_name_for(branch);
  bool admin_in_use = false;
  for (auto& wt : git::list_worktrees(repo))
    admin_in_use |= wt.name == admin.filename().string();
  std::error_code ec;
  if (!admin_in_use && fs::exists(admin, ec))
    fs::remove_all(admin, ec);
  auto info = git::create_worktree(repo, path, branch, from);
  leased_.insert(info.path.string());
  return {info.path.string(), branch, false, from};
}

// Every path a task branch brings into the base, plus its working tree.
attempt_changes workspace::worktree_changes(repository& wt,
                                            const std::string& tip) {
  auto& repo = repo_;
  attempt_changes out;
  auto base = git::branch_tip(repo, base_branch_);
  if (base)
    if (auto fork = git::merge_base(repo, *base, tip))
      out.paths = git::paths_between(repo, *fork, tip);
  for (auto& path : git::changed_paths(wt))
    out.paths.push_back(path);
  std::sort(out.paths.begin(), out.paths.end());
  out.paths.erase(std::unique(out.paths.begin(), out.paths.end()),
                  out.paths.end());
  return out;
}

// A worktree's HEAD must still be the task's branch, and the branch must
// still descend from where the attempt began. Otherwise nothing is merged,
// nothing is lost: the work is pinned, the worktree left as it is (never
// reused), and the branch put back where the attempt began, so the next
// attempt starts from there in a worktree of its own.
attempt_changes workspace::check_worktree(const attempt_place& req) {
  attempt_changes out;
  out.base_moved = observe_base(req.task_id);
  if (!out.base_moved.empty())
    return out;
  out = check_worktree_head(req);
  if (!out.moved.empty())
    return out;
  auto w = watched_.find(req.task_id);
  if (w == watched_.end() || w->second.attempt != req.attempt)
    return out;
  // The main checkout's HEAD is the person's: the run's merges follow it
  // only while it is on the base.
  auto& was = w->second.main.head;
  if (auto now = head_of(repo_); now.ref != was.ref) {
    out.moved = "HEAD of the main checkout left " + describe_head(was) + " for "
                + describe_head(now) + "; nothing of the attempt is "
                + "merged (git checkout " + base_branch_
                + " there puts it back)";
    return out;
  }
  out.main_paths = main_changes(w->second.main, w->second.opened);
  return out;
}

attempt_changes workspace::check_worktree_head(const attempt_place& req) {
  auto& repo = repo_;
  auto wt = git::open(req.checkout);
  auto head = git::head_of(wt);
  auto tip = git::branch_tip(repo, req.branch);
  bool on_branch = head.ref == "refs/heads/" + req.branch;
  bool descends
    = tip && (req.start.empty() || git::is_ancestor(repo, req.start, *tip));
  if (on_branch && descends)
    return worktree_changes(wt, *tip);
  std::string what = "HEAD of " + req.checkout + " ";
  if (!on_branch)
    what += "left " + req.branch + " for " + describe_head(head);
  else if (!tip)
    what += "is on " + req.branch + ", which is gone";
  else
    what += "is on " + req.branch + ", which was moved to " + short_id(*tip)
            + ", away from " + short_id(req.start) + " where the attempt began";
  // The branch stays where it is when it still descends from the start.
  auto restore_to = descends ? *tip : req.start;
  std::vector<std::string> kept;
  keep(repo, kept_ref(req), head.commit, restore_to, kept);
  if (tip && *tip != head.commit)
    keep(repo, kept_ref(req) + "-branch", *tip, restore_to, kept);
  // A task's branch checked out in the kept worktree would keep that task
  // (this one, once its branch is put back, or another one the worker
  // took) from a worktree of its own: HEAD detaches at the same commit,
  // no file changes.
  bool detach
    = !head.commit.empty()
      && (on_branch || head.ref.rfind("refs/heads/taskforce/", 0) == 0);
  if (detach)
    git::point_head(wt, "", head.commit);
  if (!descends && !restore_to.empty())
    git::move_branch(repo, req.branch, tip.value_or(""), restore_to);
  git::keep_worktree(repo, req.checkout);
  leased_.erase(req.checkout);
  spares_.erase(
    std::remove(spares_.begin(), spares_.end(), fs::path{req.checkout}),
    spares_.end());
  attempt_changes out;
  out.moved = what + "; nothing of it is merged";
  for (auto& k : kept)
    out.moved += "; " + k;
  out.moved += "; the worktree is left as it is";
  if (detach)
    out.moved += " (its HEAD detached at " + short_id(head.commit) + ")";
  out.moved += ", and the next attempt starts from " + req.branch + " at "
               + short_id(restore_to.empty() ? head.commit : restore_to)
               + " in a worktree of its own";
  return out;
}

// In place, HEAD must still be the branch it was, at the commit it was: a
// worker that commits or switches branches there writes the base branch
// unchecked. HEAD and the branch are put back (the files and the index
// stay as the worker left them, so its changes show as uncommitted), and
// its commits are pinned.
attempt_changes workspace::check_in_place(const attempt_place& req) {
  auto found = in_place_.find({req.task_id, req.attempt});
  if (found == in_place_.end() || found->second.checkout != req.checkout)
    throw std::runtime_error(
      "no snapshot of " + req.checkout + " was taken before attempt "
      + std::to_string(req.attempt) + " of " + req.task_id);
  auto& me = found->second;
  auto& before = me.before;
  std::optional<git::repository> other;
  if (!fs::equivalent(req.checkout, root_))
    other.emplace(git::open(req.checkout));
  auto& repo = other ? *other : repo_;
  attempt_changes out;
  std::map<std::string, std::string> now;
  auto changed = git::changed_since(repo, before, &now);
  // The neighbours: attempts in the same checkout, with a scope, open at
  // some time since this one began. A change in one's scope is theirs;
  // their own checks judge it (and their commit must match it).
  std::vector<const in_place_attempt*> neighbours;
  for (auto& [key, a] : in_place_)
    if (&a != &me && a.checkout == me.checkout && !a.scope.empty()
        && (a.closed == 0 || a.closed > me.opened))
      neighbours.push_back(&a);
  ++clock_;
  auto own = [&me](const std::string& path) {
    return me.scope.empty() || me.scope.covers(path);
  };
  for (auto& path : changed) {
    bool theirs = !own(path)
                  && std::any_of(neighbours.begin(), neighbours.end(),
                                 [&path](const in_place_attempt* a) {
                                   return a->scope.covers(path);
                                 });
    if (!theirs)
      out.paths.push_back(path);
  }
  auto& seen = checked_[req.task_id];
  seen.clear();
  for (auto& [path, print] : now)
    if (own(path))
      seen.emplace(path, print);
  auto head = git::head_of(repo);
  const std::string heads = "refs/heads/";
  auto branch = before.head.ref.rfind(heads, 0) == 0
                  ? before.head.ref.substr(heads.size())
                  : std::string{};
  auto tip = branch.empty() ? std::optional<std::string>{}
                            : git::branch_tip(repo, branch);
  bool moved_branch = !branch.empty() && tip != before.head.commit;
  if (head.ref == before.head.ref && head.commit == before.head.commit
      && !moved_branch) {
    out.base_moved = observe_base(req.task_id);
    return out;
  }
  std::vector<std::string> kept;
  auto name = kept_ref(req);
  keep(repo, name, head.commit, before.head.commit, kept);
  if (tip && *tip != head.commit)
    keep(repo, name + "-branch", *tip, before.head.commit, kept);
  if (moved_branch && !before.head.commit.empty())
    git::move_branch(repo, branch, tip.value_or(""), before.head.commit);
  if (head.ref != before.head.ref || head.ref.empty())
    git::point_head(repo, before.head.ref, before.head.commit);
  if (head.ref != before.head.ref)
    out.moved = "HEAD of the main checkout left " + describe_head(before.head)
                + " for " + describe_head(head);
  else
    out.moved = "HEAD of the main checkout moved from "
                + short_id(before.head.commit) + " to "
                + short_id(head.commit.empty() ? "none" : head.commit);
  if (moved_branch && head.ref != before.head.ref)
    out.moved
      += ", and " + branch + " moved to " + short_id(tip.value_or("none"));
  out.moved += "; nothing is committed in place: HEAD is back on "
               + describe_head(before.head) + " at "
               + short_id(before.head.commit);
  if (head.commit != before.head.commit || moved_branch)
    out.moved += ", and what the commits changed is left uncommitted in the "
                 "checkout";
  for (auto& k : kept)
    out.moved += "; " + k;
  // Commits on the base itself: the run pauses (see the file comment).
  if (branch == base_branch_
      && (moved_branch
          || (head.ref == before.head.ref
              && head.commit != before.head.commit)))
    out.base_moved = std::exchange(out.moved, {});
  return out;
}

// The service's own commits on the main checkout's HEAD are no attempt's
// doing: a snapshot of an attempt running in place meanwhile (a task that
// got no worktree) follows them.
integration workspace::integrate(const integration_request& req) {
  if (auto news = observe_base(req.task_id); !news.empty()) {
    if (gate_watch_.erase(req.task_id) > 0)
      busy_until_ = ++clock_;
    integration out;
    out.status = integration::outcome::base_moved;
    out.message = news;
    return out;
  }
  // The gate on the merge result answers for the main checkout too.
  if (auto g = gate_watch_.find(req.task_id); g != gate_watch_.end()) {
    auto changed = req.expected.empty() || req.adopt
                     ? std::vector<std::string>{}
                     : main_changes(g->second.first, g->second.second);
    gate_watch_.erase(g);
    busy_until_ = ++clock_;
    if (!changed.empty()) {
      integration out;
      out.status = integration::outcome::error;
      out.message = "the gate on the merge result changed the main checkout "
                    "(nothing may change there while it runs): "
                    + join(changed) + "; nothing was merged";
      return out;
    }
  }
  auto before = git::head_of(repo_);
  auto was = vouched_;
  std::vector<std::string> committed;
  auto out = merge_task(req, committed);
  if (out.status == integration::outcome::prepared && req.prepare)
    gate_watch_.insert_or_assign(
      req.task_id, std::make_pair(take_snapshot(repo_), ++clock_));
  // The run's own merge (or commit in place) is the base's new tip.
  if (out.status == integration::outcome::merged
      && branch_tip(repo_, base_branch_) == out.commit) {
    vouched_ = out.commit;
    follow_in_main(was, out.commit);
    // A landing is in the journal already; a commit in place is not.
    if (journal_ && req.branch.empty())
      try {
        journal_->vouch(out.commit, "committed", req.task_id, 0);
      } catch (const std::exception& e) {
        spdlog::warn("cannot record the base tip: {}", e.what());
      }
  }
  auto after = git::head_of(repo_);
  if (after.commit != before.commit)
    for (auto& [key, a] : in_place_) {
      auto& snap = a.before;
      if (snap.head.ref != before.ref || snap.head.commit != before.commit)
        continue;
      snap.head.commit = after.commit;
      // What went in is clean now, and no change of theirs.
      for (auto& path : committed)
        snap.dirty.erase(path);
    }
  return out;
}

// In place, the task's paths must be as its last check saw them: a
// neighbour running in the same checkout may have written there since.
// `now`: the checkout's fingerprints, as the commit will take them.
std::string
workspace::changed_after_check(const integration_request& req,
                               const std::map<std::string, std::string>& now) {
  auto found = checked_.find(req.task_id);
  if (found == checked_.end())
    return ""; // checked by an earlier process (resumed while merging)
  scope::coverage cover{req.scope};
  std::vector<std::string> stale;
  for (auto& [path, print] : now) {
    if (!req.scope.empty() && !cover.covers(path))
      continue;
    auto was = found->second.find(path);
    if (was == found->second.end() || was->second != print)
      stale.push_back(path);
  }
  return join(stale);
}

integration workspace::merge_task(const integration_request& req,
                                  std::vector<std::string>& committed) {
  auto& repo = repo_;
  auto message = "taskforce: " + req.task_id + ": " + req.title;
  integration out;
  if (req.branch.empty()) {
    // In place (useWorktrees: false): commit the task's scope right here.
    // One look at the checkout serves both the comparison with the last
    // check and the commit: what goes in is exactly what was compared.
    auto now = git::fingerprints(repo);
    auto stale = changed_after_check(req, now);
    if (!stale.empty()) {
      out.status = integration::outcome::error;
      out.message = stale
                    + " changed after the task's last check (another "
                      "task running in place, or a process left behind); "
                      "nothing was committed";
      return out;
    }
    checked_.erase(req.task_id);
    std::vector<std::string> changed;
    changed.reserve(now.size());
    for (auto& entry : now)
      changed.push_back(entry.first);
    auto commit
      = commit_in_place(repo, req.scope, message, &committed, &changed);
    out.status = commit.empty() ? integration::outcome::empty
                                : integration::outcome::merged;
    out.commit = commit.empty() ? git::head_commit(repo).value_or("") : commit;
    return out;
  }
  std::error_code ec;
  fs::path wt{req.worktree};
  bool have_worktree = !req.worktree.empty() && is_worktree_at(wt, nullptr);
  if (have_worktree) {
    auto tree = git::open(wt);
    // The attempt's checks saw HEAD on the branch; anything since (a
    // process left behind) must not slip work past them.
    if (git::head_of(tree).ref != "refs/heads/" + req.branch) {
      out.status = integration::outcome::error;
      out.message = "HEAD of " + wt.string() + " is no longer on " + req.branch
                    + "; nothing was merged";
      return out;
    }
    git::commit_all(tree, message);
  }
  auto tip = git::branch_tip(repo, req.branch);
  if (!tip) {
    out.status = integration::outcome::error;
    out.message = "branch " + req.branch + " is gone";
    return out;
  }
  auto done_with_worktree = [&] {
    if (!have_worktree || !req.cleanup)
      return;
    leased_.erase(wt.string());
    if (reuse_) {
      if (std::find(spares_.begin(), spares_.end(), wt) == spares_.end())
        spares_.push_back(wt);
      return;
    }
    try {
      git::remove_worktree(repo, wt.string(), false);
      git::delete_branch(repo, req.branch);
    } catch (const git::error& e) {
      spdlog::warn("keeping worktree {}: {}", wt.string(), e.what());
    }
  };
  if (auto merged = git::merged_commit(repo, *tip, base_branch_)) {
    out.status = *merged == *tip ? integration::outcome::empty
                                 : integration::outcome::already_merged;
    out.commit = *merged;
    done_with_worktree();
    if (!have_worktree && req.cleanup)
      git::delete_branch(repo, req.branch);
    return out;
  }
  auto merge_message = "Merge " + req.branch + ": " + req.title;
  git::merge_result r;
  if (!req.expected.empty() && req.adopt) {
    out.commit = req.expected;
    if (!have_worktree || !git::is_ancestor(repo, *tip, req.expected)) {
      out.status = integration::outcome::stale;
      return out;
    }
    // All its work is committed (prepare did that): a kill half way leaves
    // nothing of value in it, and the next start removes it.
    preparing mark{marker_for(wt), wt};
    auto moved = git::reuse_worktree(repo, wt, req.branch, req.expected);
    out.status = moved.status == git::reuse_result::outcome::reused
                   ? integration::outcome::prepared
                   : integration::outcome::stale;
    return out;
  }
  task_journal journal{journal_, req.task_id};
  auto* to_journal = journal_ ? &journal : nullptr;
  if (!req.expected.empty()) {
    r = git::land_merge(repo, req.expected, base_branch_, *tip, to_journal);
  } else if (req.prepare) {
    auto c = git::prepare_merge(repo, req.branch, base_branch_, merge_message);
    if (c.status == git::merge_result::outcome::merged) {
      checkout_scratch(req.task_id, c.commit);
      out.status = integration::outcome::prepared;
      out.commit = c.commit;
      out.paths = {scratch_path(req.task_id).string()};
      return out;
    }
    r.status = c.status;
    r.commit = std::move(c.commit);
    r.paths = std::move(c.paths);
  } else {
    r = git::merge_into_base(repo, req.branch, base_branch_, merge_message, {},
                             to_journal);
  }
  using oc = git::merge_result::outcome;
  switch (r.status) {
    case oc::merged:
    case oc::already_merged:
      out.status = r.status == oc::merged
                     ? integration::outcome::merged
                     : integration::outcome::already_merged;
      out.commit = r.commit;
      done_with_worktree();
      break;
    case oc::conflict:
      out.status = integration::outcome::conflict;
      out.paths = r.paths;
      out.message = "merge conflict in " + join(r.paths) + " (branch "
                    + req.branch + " kept)";
      break;
    case oc::dirty_checkout:
      out.status = integration::outcome::dirty;
      out.paths = r.paths;
      out.message = "main checkout has uncommitted changes to " + join(r.paths)
                    + " (nothing overwritten)";
      break;
    case oc::stale:
      out.status = integration::outcome::stale;
      out.message = base_branch_ + " or " + req.branch
                    + " moved since the merge result was checked; nothing was "
                      "merged";
      break;
  }
  return out;
}

// -- the base branch ----------------------------------------------------------

void workspace::guard(base_journal* journal, const std::string& vouched,
                      bool busy, std::vector<std::string> run_files) {
  journal_ = journal;
  run_files_ = std::move(run_files);
  std::sort(run_files_.begin(), run_files_.end());
  if (vouched.empty()) {
    // A new run: the base as it is now.
    accept_base(branch_tip(repo_, base_branch_).value_or(""), "start");
    seen_at_ = ++clock_;
    return;
  }
  vouched_ = vouched;
  // Attempts ran when the run stopped: a move that leaves no name may be
  // theirs (a process the kill left behind, or one before it).
  if (busy)
    busy_until_ = ++clock_;
  observe_base("");
}

bool workspace::attempts_open() const {
  for (auto& [key, a] : in_place_)
    if (a.closed == 0)
      return true;
  for (auto& [task, a] : watched_)
    if (a.closed == 0)
      return true;
  return !gate_watch_.empty();
}

// The run vouches for `tip` from now on; the main checkout's watches take
// what moved with it as the run's.
void workspace::accept_base(const std::string& tip, const std::string& why) {
  auto was = std::exchange(vouched_, tip);
  follow_in_main(was, tip);
  if (journal_)
    try {
      journal_->vouch(tip, why, "", 0);
    } catch (const std::exception& e) {
      spdlog::warn("cannot record the base tip: {}", e.what());
    }
}

// The base moved from `from` to `to` by the run's own doing (or a person's
// commit it accepted) while the main checkout is on it: each watch takes
// the paths between as they are now, so none of it counts as an attempt's.
void workspace::follow_in_main(const std::string& from, const std::string& to) {
  if (from.empty() || to.empty() || from == to
      || (watched_.empty() && gate_watch_.empty()))
    return;
  try {
    if (head_of(repo_).ref != "refs/heads/" + base_branch_)
      return;
    auto paths = paths_between(repo_, from, to);
    auto now = fingerprints(repo_);
    auto follow = [&](checkout_snapshot& snap) {
      snap.head.commit = to;
      for (auto& p : paths)
        if (auto i = now.find(p); i != now.end())
          snap.dirty[p] = i->second;
        else
          snap.dirty.erase(p);
    };
    for (auto& [task, w] : watched_)
      if (w.closed == 0)
        follow(w.main);
    for (auto& [task, g] : gate_watch_)
      follow(g.first);
  } catch (const std::exception& e) {
    spdlog::warn("cannot follow the main checkout: {}", e.what());
  }
}

// What changed in the main checkout since `before` (taken at clock_
// `opened`): each path whose index entry or file differs from then. What
// the run writes there itself, and what attempts running in place meanwhile
// answer for, are not counted.
std::vector<std::string>
workspace::main_changes(const checkout_snapshot& before, uint64_t opened) {
  auto now = fingerprints(repo_);
  std::vector<std::string> changed;
  for (auto& [path, print] : now)
    if (auto was = before.dirty.find(path);
        was == before.dirty.end() || was->second != print)
      changed.push_back(path);
  for (auto& [path, print] : before.dirty)
    if (now.count(path) == 0)
      changed.push_back(path);
  std::sort(changed.begin(), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  auto excused = [&](const std::string& path) {
    if (std::binary_search(run_files_.begin(), run_files_.end(), path))
      return true;
    for (auto& [key, a] : in_place_)
      if ((a.closed == 0 || a.closed > opened)
          && (a.scope.empty() || a.scope.covers(path)))
        return true;
    return false;
  };
  changed.erase(std::remove_if(changed.begin(), changed.end(), excused),
                changed.end());
  return changed;
}

// Looks at the base (see the file comment). Returns the refused move that
// `observer` (a task, or "" for none) answers for, once, or "".
std::string workspace::observe_base(const std::string& observer) {
  auto now = ++clock_;
  auto told = [&] {
    auto found = base_news_.find(observer);
    if (found == base_news_.end())
      return std::string{};
    auto news = std::move(found->second);
    base_news_.erase(found);
    return news;
  };
  auto settle = [&] {
    seen_at_ = now;
    for (auto it = watched_.begin(); it != watched_.end();)
      if (it->second.closed != 0 && it->second.closed < seen_at_)
        it = watched_.erase(it);
      else
        ++it;
    return told();
  };
  base_move m;
  try {
    m = look_at_base(repo_, base_branch_, vouched_, run_id_);
  } catch (const std::exception& e) {
    spdlog::warn("cannot look at {}: {}", base_branch_, e.what());
    return told();
  }
  if (m.what == base_move::kind::none)
    return settle();
  bool window = attempts_open() || busy_until_ > seen_at_;
  // A merge of a task's branch counts as a person's only while none of the
  // run's workers and gates ran (a hand merge while the run waits).
  bool by_run = !m.tasks.empty() || ((m.unknown || !m.merged.empty()) && window)
                || m.to.empty();
  auto culprits = m.tasks.empty() && by_run ? m.merged : m.tasks;
  if (!by_run && m.what == base_move::kind::forward) {
    // A person's commits (or, while nothing of the run ran, a move that
    // leaves no name).
    accept_base(m.to, "accepted");
    return settle();
  }
  auto what = describe(m, base_branch_);
  if (by_run) {
    // Not the run's to keep: the base goes back, the commits are kept.
    try {
      std::vector<std::string> kept;
      auto owner = culprits.empty() ? std::string{"base"} : *culprits.begin();
      keep(repo_, "refs/taskforce/kept/" + run_id_ + "/" + owner + "/base",
           m.to, vouched_, kept);
      move_branch(repo_, base_branch_, m.to, vouched_);
      what += "; " + base_branch_ + " is back at " + short_id(vouched_);
      for (auto& k : kept)
        what += "; " + k;
    } catch (const std::exception& e) {
      what += "; it could not be put back: " + std::string{e.what()};
    }
  } else {
    // A person moved it back: named, not undone.
    what += "; nothing was undone (git update-ref refs/heads/" + base_branch_
            + " " + m.from + " puts back what it lost; a resume goes on from "
            + short_id(m.to) + ")";
    accept_base(m.to, "accepted");
  }
  // Told with the attempt it fails; said here when nobody carries it.
  if (observer.empty())
    spdlog::warn("{}", what);
  else
    spdlog::info("{}", what);
  if (journal_)
    try {
      journal_->refused(m, what);
    } catch (const std::exception& e) {
      spdlog::warn("cannot record the move of {}: {}", base_branch_, e.what());
    }
  // Who answers for it: the tasks that made it, or, when that cannot be
  // told, every attempt that ran since the base was last seen; and someone
  // who is there to tell it, so the run pauses.
  std::set<std::string> who;
  auto open_now = [&](const std::string& task) {
    if (auto w = watched_.find(task);
        w != watched_.end() && w->second.closed == 0)
      return true;
    for (auto& [key, a] : in_place_)
      if (key.first == task && a.closed == 0)
        return true;
    return false;
  };
  bool carried = false;
  if (!culprits.empty()) {
    for (auto& t : culprits) {
      who.insert(t);
      carried |= open_now(t);
    }
  } else {
    for (auto& [task, w] : watched_)
      if (w.closed == 0 || w.closed > seen_at_)
        who.insert(task);
    for (auto& [key, a] : in_place_)
      if (a.closed == 0 || a.closed > seen_at_)
        who.insert(key.first);
    for (auto& [task, g] : gate_watch_)
      who.insert(task);
  }
  if (!carried && !observer.empty())
    who.insert(observer);
  for (auto& t : who)
    base_news_.emplace(t, what);
  return settle();
}

fs::path workspace::scratch_path(const std::string& task_id) const {
  return root_ / ".taskforce" / "merge-check" / run_id_ / task_id;
}

// One scratch worktree per task, detached at the merge result: reused (only
// the files that differ rewritten) while it is clean, made again when the
// last gate left something there.
void workspace::checkout_scratch(const std::string& task_id,
                                 const std::string& commit) {
  auto path = scratch_path(task_id);
  auto branch = "taskforce-check/" + run_id_ + "/" + task_id;
  if (is_worktree_at(path, nullptr)) {
    auto r = git::reuse_worktree(repo_, path, branch, commit);
    if (r.status == git::reuse_result::outcome::reused) {
      auto wt = git::open(path);
      git::point_head(wt, "", commit);
      git::delete_branch(repo_, branch);
      return;
    }
    git::remove_worktree(repo_, path.string(), true, true);
  }
  std::error_code ec;
  fs::remove_all(path, ec);
  git::prune_worktrees(repo_);
  if (git::branch_tip(repo_, branch))
    git::delete_branch(repo_, branch);
  fs::create_directories(path.parent_path());
  git::create_worktree(repo_, path, branch, commit);
  // Detached: no branch of the run points at a result that may fail.
  auto wt = git::open(path);
  git::point_head(wt, "", commit);
  git::delete_branch(repo_, branch);
}

void workspace::drop_scratch() {
  auto dir = root_ / ".taskforce" / "merge-check" / run_id_;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return;
  for (auto& wt : git::list_worktrees(repo_)) {
    auto rel = wt.path.lexically_relative(dir);
    if (rel.empty() || *rel.begin() == "..")
      continue;
    try {
      git::remove_worktree(repo_, wt.path.string(), true, true);
    } catch (const git::error& e) {
      spdlog::warn("cannot remove the scratch worktree {}: {}",
                   wt.path.string(), e.what());
    }
  }
  fs::remove_all(dir, ec);
  fs::remove(dir.parent_path(), ec); // merge-check, when empty
  try {
    git::prune_worktrees(repo_);
  } catch (const git::error& e) {
    spdlog::warn("cannot prune worktrees: {}", e.what());
  }
}

void workspace::finish() {
  spares_.clear();
  drop_scratch();
  remove_merged_leftovers(repo_, base_branch_, run_id_, leased_);
}

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
    if (wt.branch.rfind(prefix, 0) != 0 || leased.count(wt.path.string())
        || wt.kept)
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

} // namespace taskforce::git
