// `taskforce diff TASK`: what a task changed.
#include <iostream>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/steer.hpp"
#include "src/git/git.hpp"
#include "src/run/outcome.hpp"

namespace fs = std::filesystem;

namespace taskforce::cli {

const char* diff_help
  = "usage: taskforce diff TASK [--run ID]\n\n"
    "Prints a task's changes as a patch: for a merged task, what its merge\n"
    "commit brought into the base; otherwise its branch and worktree\n"
    "(uncommitted and untracked files included) against the point where it\n"
    "left the base.\n";

namespace {

/// Whether `t`, done, changed nothing: its recorded merge commit is then
/// the base as it found it, somebody else's work. A task carried over from
/// an earlier run is as it was there.
bool changed_nothing(const store::ledger& db, const store::task_row& t) {
  const std::string carried = run::carried_over_reason;
  auto reason = t.reason.value_or("");
  if (reason.rfind(carried, 0) == 0)
    if (auto then = db.find_task(reason.substr(carried.size()), t.id))
      reason = then->reason.value_or("");
  return reason == run::no_changes_reason;
}

} // namespace

int run_diff_command(const std::vector<std::string>& argv,
                     const global_options& opts) {
  args parsed(argv, {"--run"}, {});
  if (parsed.positionals().size() != 1)
    throw usage_error("diff needs exactly one TASK id");
  auto task_id = parsed.positionals()[0];
  auto root = repository_of(opts);
  auto db = open_ledger(root, false);
  auto run = pick_run(db, parsed.value("--run"));
  auto t = db.find_task(run.id, task_id);
  if (!t)
    throw usage_error("run " + run.id + " has no task " + task_id);
  git::library lib;
  auto repo = git::open(root);
  if (t->merge_commit && t->state == task_state::done) {
    if (changed_nothing(db, *t)) {
      std::cerr << "taskforce: task " << task_id << " changed nothing\n";
      return exit_ok;
    }
    auto parent = git::resolve(repo, *t->merge_commit + "^1");
    std::cout << git::diff_text(repo, parent, *t->merge_commit);
    return exit_ok;
  }
  auto base_tip = git::branch_tip(repo, run.base_branch);
  std::optional<std::string> tip;
  if (t->branch)
    tip = git::branch_tip(repo, *t->branch);
  // A worktree handed on to another task shows that task's work, not this
  // one's: then the branch tells.
  if (auto where = worktree_of(*t); where && where->here) {
    auto wt = git::open(*t->worktree);
    auto head = git::head_commit(wt);
    auto from
      = head && base_tip ? git::merge_base(repo, *head, *base_tip) : head;
    if (from) {
      std::cout << git::diff_text(wt, *from);
      return exit_ok;
    }
  }
  if (tip && base_tip) {
    auto from = git::merge_base(repo, *tip, *base_tip);
    if (from) {
      std::cout << git::diff_text(repo, *from, *tip);
      return exit_ok;
    }
  }
  std::cerr << "taskforce: task " << task_id << " has no worktree or branch "
            << "to show\n";
  return exit_ok;
}

} // namespace taskforce::cli
