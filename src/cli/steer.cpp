#include "src/cli/steer.hpp"

#include <cerrno>
#include <cstdlib>

#include "src/cli/cli.hpp"
#include "src/cli/run_driver.hpp"
#include "src/git/git.hpp"
#include "src/store/run_lock.hpp"

namespace fs = std::filesystem;

namespace taskforce::cli {

store::ledger open_ledger(const fs::path& root, bool write) {
  auto path = state_dir(root) / store::ledger_file_name;
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw usage_error("no run in " + root.string()
                      + " yet (start one with taskforce run FILE)");
  store::ledger_options o;
  o.read_only = !write;
  return store::ledger::open(path, o);
}

std::optional<store::ledger> open_ledger_if_any(const fs::path& root) {
  std::error_code ec;
  if (!fs::exists(state_dir(root) / store::ledger_file_name, ec))
    return std::nullopt;
  return open_ledger(root, false);
}

store::run_row pick_run(const store::ledger& db, const std::string& run_id) {
  if (!run_id.empty()) {
    auto row = db.find_run(run_id);
    if (!row)
      throw usage_error("no run " + run_id);
    return *row;
  }
  if (auto row = db.latest_unfinished_run())
    return *row;
  if (auto row = db.latest_run())
    return *row;
  throw usage_error("no run yet (start one with taskforce run FILE)");
}

std::optional<task_worktree> worktree_of(const store::task_row& t) {
  if (!t.worktree)
    return std::nullopt;
  task_worktree out;
  std::error_code ec;
  if (!fs::is_directory(*t.worktree, ec))
    return out;
  try {
    auto tree = git::open(*t.worktree);
    auto head = git::head_of(tree).ref;
    const std::string heads = "refs/heads/";
    if (head.rfind(heads + "taskforce/", 0) == 0
        && (!t.branch || head != heads + *t.branch)) {
      out.reused_for = head.substr(heads.size());
      return out;
    }
  } catch (const std::exception&) {
    return out; // not a repository any more
  }
  out.here = true;
  return out;
}

std::optional<std::string> driver_of(const fs::path& root) {
  auto holder
    = store::run_lock::holder(state_dir(root) / store::run_lock_file_name);
  if (!holder)
    return std::nullopt;
  return store::describe(*holder);
}

worker_env worker_environment(const std::string& command) {
  auto need = [&](const char* name) {
    auto* v = std::getenv(name);
    if (v == nullptr || *v == '\0')
      throw usage_error(
        command + " runs inside a worker: " + name
        + " is not set (taskforce sets TASKFORCE_RUN_ID, TASKFORCE_TASK_ID "
          "and TASKFORCE_REPO for every worker and gate process it starts)");
    return std::string{v};
  };
  worker_env w;
  w.run_id = need("TASKFORCE_RUN_ID");
  w.task_id = need("TASKFORCE_TASK_ID");
  w.repo = need("TASKFORCE_REPO");
  if (auto* v = std::getenv("TASKFORCE_ATTEMPT"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    errno = 0;
    auto n = std::strtol(v, &end, 10);
    if (*end != '\0' || errno != 0 || n < 1 || n > 1000000000)
      throw usage_error(command + ": TASKFORCE_ATTEMPT is \"" + std::string{v}
                        + "\", not an attempt number");
    w.attempt = static_cast<int>(n);
  }
  return w;
}

store::ledger open_worker_ledger(const worker_env& w,
                                 const std::string& command) {
  std::error_code ec;
  if (!fs::is_directory(w.repo, ec))
    throw usage_error(command + ": TASKFORCE_REPO is " + w.repo.string()
                      + ", which is not a folder");
  if (!fs::exists(state_dir(w.repo) / store::ledger_file_name, ec))
    throw usage_error(command + ": TASKFORCE_REPO is " + w.repo.string()
                      + ", which has no taskforce ledger");
  auto db = open_ledger(w.repo, true);
  if (!db.find_run(w.run_id))
    throw usage_error(command + ": TASKFORCE_RUN_ID names run " + w.run_id
                      + ", which the ledger of " + w.repo.string()
                      + " does not have");
  if (!db.find_task(w.run_id, w.task_id))
    throw usage_error(command + ": run " + w.run_id + " has no task "
                      + w.task_id + " (TASKFORCE_TASK_ID)");
  return db;
}

} // namespace taskforce::cli
