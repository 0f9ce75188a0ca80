#include "src/git/base_guard.hpp"

#include <map>
#include <optional>

#include "src/git/handle.hpp"
#include "src/git/internal.hpp"
#include "src/git/worktree.hpp"
#include "src/text/join.hpp"

namespace fs = std::filesystem;

namespace taskforce::git {

namespace {

constexpr const char* tag_start = "taskforce task ";

std::string short_id(const std::string& commit) {
  return commit.substr(0, 12);
}

// The commits reachable from `push` but not from `hide`, newest first, at
// most `limit` of them.
std::vector<std::string> commits_between(repository& repo,
                                         const std::vector<std::string>& push,
                                         const std::vector<std::string>& hide,
                                         size_t limit) {
  auto what = std::string{"walk the history of the base"};
  git_revwalk* raw = nullptr;
  check(git_revwalk_new(&raw, repo.get()), what);
  revwalk_ptr walk{raw};
  git_revwalk_sorting(walk.get(), GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME);
  bool any = false;
  for (auto& p : push) {
    git_oid id;
    if (p.empty() || git_oid_fromstr(&id, p.c_str()) != 0)
      continue;
    if (git_revwalk_push(walk.get(), &id) == 0)
      any = true;
    else
      git_error_clear();
  }
  for (auto& h : hide) {
    git_oid id;
    if (h.empty() || git_oid_fromstr(&id, h.c_str()) != 0)
      continue;
    if (git_revwalk_hide(walk.get(), &id) != 0)
      git_error_clear();
  }
  std::vector<std::string> out;
  if (!any)
    return out;
  git_oid id;
  while (out.size() < limit && git_revwalk_next(&id, walk.get()) == 0)
    out.push_back(to_hex(id));
  git_error_clear();
  return out;
}

std::string subject_of(repository& repo, const std::string& commit) {
  try {
    auto c = detail::lookup_commit(repo, commit);
    auto* s = git_commit_summary(c.get());
    return s ? s : "";
  } catch (const error&) {
    return "";
  }
}

// The tip of every ref of the run that holds a task's work, with the task.
std::vector<std::pair<std::string, std::string>>
task_refs(repository& repo, const std::string& run_id) {
  std::vector<std::pair<std::string, std::string>> out;
  auto branches = "taskforce/" + run_id + "/";
  for (auto& b : list_branches(repo, branches))
    out.emplace_back(b.tip, b.name.substr(branches.size()));
  // Kept refs: refs/taskforce/kept/<run>/<task>/…; `base` holds moves of
  // the base nobody could be told for.
  auto kept = "refs/taskforce/kept/" + run_id + "/";
  git_reference_iterator* raw = nullptr;
  if (git_reference_iterator_glob_new(&raw, repo.get(), (kept + "*").c_str())
      == 0) {
    git_reference* ref = nullptr;
    while (git_reference_next(&ref, raw) == 0) {
      std::string name = git_reference_name(ref);
      const git_oid* id = git_reference_target(ref);
      if (id != nullptr) {
        auto rest = name.substr(kept.size());
        auto task = rest.substr(0, rest.find('/'));
        out.emplace_back(to_hex(*id), task == "base" ? "" : task);
      }
      git_reference_free(ref);
    }
    git_reference_iterator_free(raw);
  }
  git_error_clear();
  // The HEADs of the run's worktrees, merge-check and review checkouts (a
  // worker's commit on a detached HEAD is on no branch).
  auto top = repo.workdir() / ".taskforce";
  for (auto& wt : list_worktrees(repo)) {
    if (wt.head.empty())
      continue;
    for (auto* area : {"worktrees", "merge-check", "review"}) {
      auto rel = wt.path.lexically_relative(top / area / run_id);
      if (rel.empty() || *rel.begin() == ".." || *rel.begin() == ".")
        continue;
      out.emplace_back(wt.head, rel.begin()->string());
    }
  }
  return out;
}

// The reflog of the base since it left `vouched`, newest first; nullopt
// when the reflog does not lead back there.
std::optional<std::vector<std::string>>
entries_since(repository& repo, const std::string& base_branch,
              const std::string& vouched, const std::string& to) {
  git_reflog* raw = nullptr;
  if (git_reflog_read(&raw, repo.get(), ("refs/heads/" + base_branch).c_str())
      != 0) {
    git_error_clear();
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool found = false;
  auto n = git_reflog_entrycount(raw);
  for (size_t i = 0; i < n; ++i) {
    auto* e = git_reflog_entry_byindex(raw, i);
    if (i == 0 && to_hex(*git_reflog_entry_id_new(e)) != to)
      break; // the ref moved without a word in its reflog
    auto* msg = git_reflog_entry_message(e);
    out.emplace_back(msg ? msg : "");
    if (to_hex(*git_reflog_entry_id_old(e)) == vouched) {
      found = true;
      break;
    }
  }
  git_reflog_free(raw);
  if (!found)
    return std::nullopt;
  return out;
}

} // namespace

std::string reflog_tag(const std::string& run_id, const std::string& task_id) {
  return tag_start + run_id + "/" + task_id;
}

base_move look_at_base(repository& repo, const std::string& base_branch,
                       const std::string& vouched, const std::string& run_id) {
  base_move m;
  m.from = vouched;
  m.to = branch_tip(repo, base_branch).value_or("");
  if (m.to == vouched)
    return m;
  bool forward
    = !vouched.empty() && !m.to.empty() && is_ancestor(repo, vouched, m.to);
  m.what = forward ? base_move::kind::forward : base_move::kind::backward;
  auto listed = forward
                  ? commits_between(repo, {m.to}, {vouched}, counted_commits)
                  : commits_between(repo, {vouched}, {m.to}, counted_commits);
  m.count = listed.size();
  for (size_t i = 0; i < listed.size() && i < shown_commits; ++i)
    m.commits.push_back(short_id(listed[i]) + " "
                        + subject_of(repo, listed[i]));
  // The run's own work: what its task refs reach that the vouched tip does
  // not. A new commit among it (or, moved sideways, the new tip) is the
  // task's.
  auto refs = task_refs(repo, run_id);
  std::vector<std::string> tips;
  for (auto& [tip, task] : refs)
    tips.push_back(tip);
  auto theirs = commits_between(repo, tips, {vouched}, counted_commits * 10);
  std::set<std::string> run_commits(theirs.begin(), theirs.end());
  auto owner_of = [&](const std::string& commit) {
    for (auto& [tip, task] : refs)
      if (tip == commit || is_ancestor(repo, commit, tip))
        return std::optional<std::string>{task};
    return std::optional<std::string>{};
  };
  std::vector<std::string> suspects;
  if (forward)
    suspects = listed;
  else if (!m.to.empty())
    suspects = {m.to};
  // The base's own line of commits since the vouched tip: what came in
  // elsewhere came through a merge's second parent.
  std::set<std::string> line;
  if (forward)
    for (auto c = m.to;
         !c.empty() && c != vouched && line.size() < counted_commits;) {
      line.insert(c);
      auto commit = detail::lookup_commit(repo, c);
      if (git_commit_parentcount(commit.get()) == 0)
        break;
      c = to_hex(*git_commit_parent_id(commit.get(), 0));
      if (is_ancestor(repo, c, vouched))
        break;
    }
  for (auto& c : suspects) {
    if (run_commits.count(c) == 0)
      continue;
    auto task = owner_of(c);
    if (!task)
      continue;
    if (task->empty())
      m.unknown = true;
    else if (forward && line.count(c) == 0)
      m.merged.insert(*task);
    else
      m.tasks.insert(*task);
  }
  // What the reflog says about each move since the vouched tip.
  auto entries = entries_since(repo, base_branch, vouched, m.to);
  if (!entries) {
    m.unknown = true;
    return m;
  }
  m.entries = *entries;
  for (auto& e : m.entries) {
    if (e.rfind(tag_start, 0) == 0) {
      auto rest = e.substr(std::string{tag_start}.size());
      auto slash = rest.find('/');
      auto colon = rest.find_first_of(": ", slash);
      if (slash != std::string::npos && rest.substr(0, slash) == run_id)
        m.tasks.insert(rest.substr(slash + 1, colon == std::string::npos
                                                ? std::string::npos
                                                : colon - slash - 1));
      else
        m.unknown = true; // another run's tag: not a person
    } else if (e.empty() || e.rfind("taskforce", 0) == 0) {
      m.unknown = true;
    }
  }
  return m;
}

std::string describe(const base_move& m, const std::string& base_branch) {
  if (m.what == base_move::kind::none)
    return base_branch + " is where the run left it";
  auto plural = [](size_t n, const char* one) {
    return std::to_string(n) + " " + one + (n == 1 ? "" : "s");
  };
  std::string out = base_branch;
  if (m.what == base_move::kind::forward)
    out += " moved from " + short_id(m.from) + " to " + short_id(m.to) + ": "
           + plural(m.count, "new commit");
  else if (m.to.empty())
    out += " was deleted (it was at " + short_id(m.from) + "): it lost "
           + plural(m.count, "commit");
  else
    out += " moved back from " + short_id(m.from) + " to " + short_id(m.to)
           + ": it lost " + plural(m.count, "commit");
  if (m.count >= counted_commits)
    out += " or more";
  if (!m.commits.empty()) {
    out += " (" + join(m.commits, ", ");
    if (m.count > m.commits.size())
      out += ", …";
    out += ")";
  }
  if (!m.tasks.empty()) {
    std::vector<std::string> ids(m.tasks.begin(), m.tasks.end());
    out += ", made by " + join(ids) + " of this run";
  } else if (!m.merged.empty()) {
    std::vector<std::string> ids(m.merged.begin(), m.merged.end());
    out += ", merging the work of " + join(ids)
           + " while the run's workers and gates ran";
  } else if (m.unknown) {
    out += ", made by a command that leaves no name in the reflog (such as "
           "git update-ref)";
  } else {
    out += ", made by git commands of a person";
  }
  if (!m.entries.empty() && !m.entries.front().empty())
    out += " (reflog: " + m.entries.front()
           + (m.entries.size() > 1 ? ", …" : "") + ")";
  return out;
}

} // namespace taskforce::git
