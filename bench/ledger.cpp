// How many task transitions per second the ledger commits, with
// synchronous=FULL (what taskforce uses: a transition survives power loss)
// against synchronous=NORMAL (survives a process crash only), in the same run
// on the same disk. Each transition is one BEGIN IMMEDIATE transaction: the
// task row, its attempt and its event. A third figure commits four
// transitions per transaction with transition_batch (group commit).
//
// Usage: bench_ledger [--tasks N] [--dir DIR]   (DIR: a folder on the disk to
// measure; default the system's temp folder)

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include <unistd.h>

#include "src/cli/run_view.hpp"
#include "src/store/ledger.hpp"

using namespace taskforce;
using namespace taskforce::store;

namespace {

struct figures {
  int transitions = 0;
  double seconds = 0;
  double status_ms = 0;
};

// `batch` > 1: the transitions of `batch` tasks at a time go in one
// transaction_batch (group commit), the way a ledger actor can commit what
// waits in its mailbox with one sync.
figures measure(const std::filesystem::path& dir, bool full, int tasks,
                int batch = 1) {
  auto file
    = dir / ((full ? "full-" : "normal-") + std::to_string(batch) + ".sqlite");
  ledger_options options;
  options.synchronous_full = full;
  auto db = ledger::open(file, options);
  new_run run;
  run.id = "bench";
  run.file = "TASKS.md";
  run.base_branch = "main";
  run.max_concurrency = 2;
  for (int i = 1; i <= tasks; ++i)
    run.tasks.push_back(new_task{"t" + std::to_string(i), i, "task",
                                 task_state::pending, std::nullopt});
  db.create_run(run, wall_clock_ms());
  // The main line of a task: five transitions, each committed on its own.
  const task_state line[]
    = {task_state::ready, task_state::running, task_state::verifying,
       task_state::merging, task_state::done};
  figures f;
  auto start = std::chrono::steady_clock::now();
  auto change = [](task_state s) {
    task_change c;
    c.to = s;
    if (s == task_state::done)
      c.fields.merge_commit = "0123456789abcdef0123456789abcdef01234567";
    return c;
  };
  if (batch <= 1) {
    for (int i = 1; i <= tasks; ++i)
      for (auto s : line) {
        db.transition("bench", "t" + std::to_string(i), change(s),
                      wall_clock_ms());
        ++f.transitions;
      }
  } else {
    // Tasks i..i+batch-1 advance together, one step of each per commit.
    for (int i = 1; i <= tasks; i += batch)
      for (auto s : line) {
        std::vector<task_change_request> group;
        for (int k = i; k < i + batch && k <= tasks; ++k)
          group.push_back({"bench", "t" + std::to_string(k), change(s)});
        for (auto& out : db.transition_batch(group, wall_clock_ms()))
          if (std::holds_alternative<ledger_error>(out))
            throw std::get<ledger_error>(out);
        f.transitions += static_cast<int>(group.size());
      }
  }
  auto end = std::chrono::steady_clock::now();
  f.seconds = std::chrono::duration<double>(end - start).count();
  auto s0 = std::chrono::steady_clock::now();
  auto json = cli::to_status_json(*db.status("bench"));
  auto s1 = std::chrono::steady_clock::now();
  f.status_ms = std::chrono::duration<double, std::milli>(s1 - s0).count();
  if (json.empty())
    std::abort();
  return f;
}

} // namespace

int main(int argc, char** argv) {
  int tasks = 300;
  std::filesystem::path base = std::filesystem::temp_directory_path();
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--tasks" && i + 1 < argc)
      tasks = std::atoi(argv[++i]);
    else if (arg == "--dir" && i + 1 < argc)
      base = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--tasks N] [--dir DIR]\n", argv[0]);
      return 2;
    }
  }
  if (tasks < 1) {
    std::fprintf(stderr, "--tasks must be at least 1\n");
    return 2;
  }
  auto dir = base / ("taskforce-bench-ledger-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  figures full;
  figures normal;
  figures grouped;
  try {
    // NORMAL first, so FULL cannot profit from a warmed-up file system.
    normal = measure(dir, false, tasks);
    full = measure(dir, true, tasks);
    grouped = measure(dir, true, tasks, 4);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench ledger: %s\n", e.what());
    std::filesystem::remove_all(dir);
    return 1;
  }
  std::filesystem::remove_all(dir);
  auto per_s = [](const figures& f) {
    return f.transitions / f.seconds;
  };
  std::printf("synchronous=FULL:   %d transitions in %.3f s = %.0f/s "
              "(%.3f ms each); status of %d tasks in %.2f ms\n",
              full.transitions, full.seconds, per_s(full),
              1000 * full.seconds / full.transitions, tasks, full.status_ms);
  std::printf("synchronous=NORMAL: %d transitions in %.3f s = %.0f/s "
              "(%.3f ms each); status of %d tasks in %.2f ms\n",
              normal.transitions, normal.seconds, per_s(normal),
              1000 * normal.seconds / normal.transitions, tasks,
              normal.status_ms);
  std::printf("synchronous=FULL, batches of 4: %d transitions in %.3f s = "
              "%.0f/s (%.3f ms each)\n",
              grouped.transitions, grouped.seconds, per_s(grouped),
              1000 * grouped.seconds / grouped.transitions);
  std::printf("bench ledger: tasks=%d transitions=%d full_per_s=%.0f "
              "normal_per_s=%.0f full_batch4_per_s=%.0f full_ms=%.3f "
              "normal_ms=%.3f normal_over_full=%.1f batch4_over_full=%.1f "
              "status_ms=%.2f\n",
              tasks, full.transitions, per_s(full), per_s(normal),
              per_s(grouped), 1000 * full.seconds / full.transitions,
              1000 * normal.seconds / normal.transitions,
              per_s(normal) / per_s(full), per_s(grouped) / per_s(full),
              full.status_ms);
  return 0;
}
