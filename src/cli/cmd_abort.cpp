// `taskforce abort` and `taskforce discard TASK`: stop a run; throw away a
// task's worktree and branch.
#include <iostream>
#include <set>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/run_driver.hpp"
#include "src/cli/steer.hpp"
#include "src/git/git.hpp"
#include "src/store/run_lock.hpp"
#include "src/text/join.hpp"

namespace taskforce::cli {

const char* abort_help
  = "usage: taskforce abort [--run ID]\n\n"
    "Stops the latest unfinished run for good. A process driving it notices\n"
    "within a second, kills its workers' process groups and exits 1.\n"
    "Worktrees and branches are kept (see taskforce discard).\n";

const char* discard_help
  = "usage: taskforce discard TASK [--run ID]\n\n"
    "Removes a task's worktree and branch, whatever they hold, and puts the\n"
    "task back to pending so a resume runs it from scratch. Refused while\n"
    "a process drives the run.\n";

int run_abort_command(const std::vector<std::string>& argv,
                      const global_options& opts) {
  args parsed(argv, {"--run"}, {});
  if (!parsed.positionals().empty())
    throw usage_error("abort takes no arguments");
  auto root = repository_of(opts);
  auto db = open_ledger(root, true);
  auto run = pick_run(db, parsed.value("--run"));
  if (is_finished(run.state))
    throw usage_error("run " + run.id + " is already " + to_string(run.state));
  db.set_run_state(run.id, run_state::aborted,
                   std::string{"aborted by the user"}, store::wall_clock_ms());
  std::cout << "run " << run.id << " aborted";
  if (auto who = driver_of(root))
    std::cout << " (" << *who << "; it stops within a second)";
  std::cout << '\n';
  return exit_ok;
}

int run_discard_command(const std::vector<std::string>& argv,
                        const global_options& opts) {
  args parsed(argv, {"--run"}, {});
  if (parsed.positionals().size() != 1)
    throw usage_error("discard needs exactly one TASK id");
  auto task_id = parsed.positionals()[0];
  auto root = repository_of(opts);
  open_ledger(root, false); // no run yet: refused before anything is made
  // Nobody may drive the run while its worktrees and branches go: a driver
  // could be leasing, checking or merging the very ones.
  auto got
    = store::run_lock::try_acquire(state_dir(root) / store::run_lock_file_name);
  if (auto* holder = std::get_if<store::run_lock_holder>(&got))
    throw usage_error(store::describe(*holder)
                      + "; discard works on a paused run (Ctrl-C or "
                        "taskforce abort stops the driver first)");
  auto lock = std::move(std::get<store::run_lock>(got));
  auto db = open_ledger(root, true);
  auto run = pick_run(db, parsed.value("--run"));
  lock.set_run(run.id);
  auto t = db.find_task(run.id, task_id);
  if (!t)
    throw usage_error("run " + run.id + " has no task " + task_id);
  git::library lib;
  auto repo = git::open(root);
  std::string branch
    = t->branch.value_or("taskforce/" + run.id + "/" + task_id);
  bool removed = false;
  for (auto& wt : git::list_worktrees(repo))
    if (wt.branch == branch
        || (t->worktree && wt.path == std::filesystem::path{*t->worktree}))
      removed |= git::remove_worktree(repo, wt.path.string(), true);
  removed |= git::delete_branch(repo, branch);
  if (t->state != task_state::done && t->state != task_state::pending
      && allowed(t->state, task_state::pending)) {
    store::task_change c;
    c.to = task_state::pending;
    c.reason = "discarded";
    c.fields.conflict_paths = std::vector<std::string>{};
    c.fields.clear_branch_and_worktree = true;
    db.transition(run.id, task_id, c, store::wall_clock_ms());
  } else if (removed && t->state != task_state::done) {
    store::task_fields f;
    f.clear_branch_and_worktree = true;
    db.update_task(run.id, task_id, f, store::wall_clock_ms());
  }
  if (removed) {
    std::cout << "discarded the worktree and branch of " << task_id << '\n';
    return exit_ok;
  }
  // Nothing of this run: an older run may still hold the task's worktree
  // or branch, which is not "nothing".
  std::vector<std::string> older;
  std::set<std::string> runs;
  auto suffix = "/" + task_id;
  auto of_task = [&](const std::string& b) {
    return b.rfind("taskforce/", 0) == 0 && b != branch
           && b.size() > suffix.size()
           && b.compare(b.size() - suffix.size(), suffix.size(), suffix) == 0
           && b.find('/', 10) == b.size() - suffix.size();
  };
  std::set<std::string> seen;
  for (auto& wt : git::list_worktrees(repo))
    if (of_task(wt.branch)) {
      seen.insert(wt.branch);
      older.push_back("worktree " + wt.path.string() + " (" + wt.branch + ")");
      runs.insert(wt.branch.substr(10, wt.branch.size() - suffix.size() - 10));
    }
  for (auto& b : git::list_branches(repo, "taskforce/"))
    if (of_task(b.name) && seen.count(b.name) == 0) {
      older.push_back("branch " + b.name);
      runs.insert(b.name.substr(10, b.name.size() - suffix.size() - 10));
    }
  if (older.empty()) {
    std::cout << "nothing to discard for " << task_id << '\n';
    return exit_ok;
  }
  std::cout << "run " << run.id << " holds nothing of " << task_id
            << "; older runs still do: " << join(older) << '\n';
  for (auto& r : runs)
    std::cout << "  taskforce discard " << task_id << " --run " << r << '\n';
  std::cout << "  (or taskforce clean to see everything runs left behind)\n";
  return exit_ok;
}

} // namespace taskforce::cli
