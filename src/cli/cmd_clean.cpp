// `taskforce clean`: list, and with --yes remove, what runs that are over
// left behind.
#include <iostream>
#include <map>
#include <optional>

#include "src/cli/args.hpp"
#include "src/cli/clean.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/run_driver.hpp"
#include "src/cli/steer.hpp"
#include "src/git/git.hpp"
#include "src/git/leftovers.hpp"
#include "src/store/run_lock.hpp"

namespace fs = std::filesystem;

namespace taskforce::cli {

const char* clean_help
  = "usage: taskforce clean [--yes] [--force]\n\n"
    "Lists what runs that are over (completed or aborted) left behind: task\n"
    "worktrees under .taskforce/worktrees/, task branches\n"
    "taskforce/<run>/<task> checked out nowhere, folders there that no\n"
    "worktree uses, and records of worktrees whose folder is gone. Each\n"
    "line says whether it holds work: uncommitted or untracked files,\n"
    "commits its run's base branch does not have, a worktree set aside\n"
    "after an attempt moved its HEAD, files in a folder that is no\n"
    "worktree. Like `git clean -n`, listing is all it does by default.\n"
    "The worktrees and branches of an unfinished (running or paused) run\n"
    "are that run's: clean never lists or removes them; nor a branch under\n"
    "taskforce/ whose run the ledger does not know and that is not shaped\n"
    "like a run id (taskforce/fix/parser is yours).\n\n"
    "  --yes     remove the leftovers that hold no work\n"
    "  --force   remove every leftover, work included (implies --yes)\n\n"
    "Exit status: 0, also when --yes kept work (each kept one is named);\n"
    "2 bad usage, or --yes/--force while a process drives a run.\n";

std::vector<git::leftover> leftovers_of(const fs::path& root) {
  std::map<std::string, git::run_facts> runs;
  std::error_code ec;
  if (fs::exists(state_dir(root) / store::ledger_file_name, ec)) {
    auto db = open_ledger(root, false);
    for (auto& r : db.list_runs())
      runs[r.run.id]
        = git::run_facts{r.run.base_branch, !is_finished(r.run.state)};
  }
  git::library lib;
  auto repo = git::open(root);
  return git::find_leftovers(repo, root, runs);
}

namespace {

std::string plural(size_t n, const std::string& word) {
  return std::to_string(n) + " " + word
         + (n == 1               ? ""
            : word.back() == 'h' ? "es"
                                 : "s");
}

/// How a leftover is named on its line: its kind, where it is (relative to
/// the repository), its branch and run.
std::string describe(const git::leftover& l, const fs::path& root) {
  std::string where;
  if (!l.path.empty()) {
    auto rel = l.path.lexically_relative(root);
    where = rel.empty() || rel.begin()->string() == ".." ? l.path.string()
                                                         : rel.string();
  }
  std::string text = git::to_string(l.what);
  text.resize(9, ' ');
  switch (l.what) {
    case git::leftover::kind::branch: text += l.branch; break;
    case git::leftover::kind::record:
      text += l.name + " (folder " + l.path.string() + " is gone";
      text += l.branch.empty() ? ")" : ", branch " + l.branch + ")";
      break;
    default:
      text += where;
      if (!l.branch.empty())
        text += " (" + l.branch + ")";
  }
  if (!l.run_id.empty())
    text += "  run " + l.run_id;
  return text;
}

} // namespace

std::string leftovers_line(const std::vector<git::leftover>& found) {
  if (found.empty())
    return {};
  std::map<git::leftover::kind, size_t> by_kind;
  size_t with_work = 0;
  for (auto& l : found) {
    ++by_kind[l.what];
    with_work += l.work.empty() ? 0 : 1;
  }
  std::string text = "leftovers of runs that are over:";
  bool first = true;
  for (auto& [kind, n] : by_kind) {
    text += first ? " " : ", ";
    first = false;
    text += plural(n, git::to_string(kind));
  }
  if (with_work > 0)
    text += " (" + std::to_string(with_work)
            + (with_work == 1 ? " holds" : " hold") + " work)";
  return text + "; taskforce clean lists them";
}

int run_clean_command(const std::vector<std::string>& argv,
                      const global_options& opts) {
  args parsed(argv, {}, {"--yes", "--force"});
  if (!parsed.positionals().empty())
    throw usage_error("clean takes no arguments (see taskforce clean --help)");
  bool force = parsed.flag("--force");
  bool remove = force || parsed.flag("--yes");
  fs::path root = repository_of(opts);
  // Nobody may drive a run while its neighbours' worktrees go: git's
  // worktree records are shared.
  std::optional<store::run_lock> lock;
  std::error_code ec;
  if (remove && fs::exists(state_dir(root), ec)) {
    auto got = store::run_lock::try_acquire(state_dir(root)
                                            / store::run_lock_file_name);
    if (auto* holder = std::get_if<store::run_lock_holder>(&got))
      throw usage_error(store::describe(*holder)
                        + "; clean removes nothing while a run is driven "
                          "(taskforce clean without --yes lists)");
    lock.emplace(std::move(std::get<store::run_lock>(got)));
  }
  auto found = leftovers_of(root);
  if (found.empty()) {
    std::cout << "nothing to clean\n";
    return exit_ok;
  }
  if (!remove) {
    size_t with_work = 0;
    for (auto& l : found) {
      std::cout << describe(l, root);
      if (!l.work.empty()) {
        std::cout << "  holds work: " << l.work;
        ++with_work;
      }
      std::cout << '\n';
    }
    auto free = found.size() - with_work;
    std::cout << plural(found.size(), "leftover");
    if (with_work > 0)
      std::cout << ", " << with_work << " holding work";
    std::cout << ". ";
    if (free > 0)
      std::cout << "taskforce clean --yes removes "
                << (with_work > 0
                      ? "the " + std::to_string(free) + " that hold none"
                      : std::string{"them"})
                << (with_work > 0 ? "; --force removes all, work included" : "")
                << '\n';
    else
      std::cout << "taskforce clean --force removes them, work included\n";
    return exit_ok;
  }
  git::library lib;
  auto repo = git::open(root);
  size_t removed = 0;
  size_t kept = 0;
  for (auto& l : found) {
    if (git::remove_leftover(repo, l, force)) {
      std::cout << "removed " << describe(l, root) << '\n';
      ++removed;
    } else {
      std::cout << "kept    " << describe(l, root) << "  holds work: " << l.work
                << '\n';
      ++kept;
    }
  }
  git::prune_worktrees(repo);
  git::empty_trash(repo);
  std::cout << "removed " << removed;
  if (kept > 0)
    std::cout << ", kept " << kept
              << " holding work (taskforce clean --force removes them)";
  std::cout << '\n';
  return exit_ok;
}

} // namespace taskforce::cli
