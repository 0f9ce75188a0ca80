#define CAF_SUITE unit.git_crash
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <thread>

#include "git_fixture.hpp"
#include "src/run/base_record.hpp"
#include "src/store/ledger.hpp"

using namespace taskforce;
using namespace taskforce::test;
namespace fs = std::filesystem;

namespace {

constexpr const char* repo_env = "TASKFORCE_GIT_CRASH_REPO";
constexpr int task_count = 12;

std::string task_branch(int i) {
  return "taskforce/r1/crash/t" + std::to_string(i);
}

// Starts this test binary again running only the worker test `test`.
pid_t spawn_worker(const fs::path& repo,
                   const std::string& test
                   = "the worker merges every task branch") {
  std::vector<std::string> args{
    "/proc/self/exe", "-r", "60", "-s", "^unit\\.git_crash$", "-t",
    "^" + test + "$"};
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s{std::string{repo_env} + "=" + repo.string()};
  for (char** e = environ; *e != nullptr; ++e)
    env_s.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env_s)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  auto exe = fs::read_symlink("/proc/self/exe").string();
  if (posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(),
                  envp.data())
      != 0)
    pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

/// The ledger a run keeps its landings in, with the one run the workers
/// merge for.
store::ledger crash_ledger(const fs::path& repo) {
  auto db = store::ledger::open(repo / ".taskforce" / "ledger.sqlite");
  if (!db.find_run("r1")) {
    store::new_run nr;
    nr.id = "r1";
    nr.file = "TASKS.md";
    nr.file_hash = "-";
    nr.base_branch = "main";
    db.create_run(nr, store::wall_clock_ms());
  }
  return db;
}

} // namespace

// The worker: what a run does on start (clear locks, complete the one
// checkout update its ledger has unfinished) and then the merges, each
// written down in the ledger before the base moves. Without the
// environment variable it does nothing.
CAF_TEST(the worker merges every task branch) {
  const char* path = std::getenv(repo_env);
  if (path == nullptr)
    return;
  auto repo = git::open(path);
  git::clear_stale_locks(repo);
  auto db = crash_ledger(path);
  run::finish_landings(repo, db, "r1", "main");
  run::base_record record{db, "r1"};
  for (int i = 0; i < task_count; ++i) {
    auto r = git::merge_into_base(repo, task_branch(i), "main",
                                  "Merge t" + std::to_string(i),
                                  {"Test", "test@example.com"}, &record);
    if (r.status != git::merge_result::outcome::merged
        && r.status != git::merge_result::outcome::already_merged)
      CAF_FAIL("merge of t" << i << " ended in " << to_string(r.status));
  }
}

// The second worker: the whole cycle of each task in one reused worktree
// slot, as a run does it: keep the slot when it is already on the task's
// branch (an interrupted attempt), otherwise reuse it or create it; write,
// commit, merge. Every step is safe to repeat after a kill.
CAF_TEST(the worker runs every task cycle in one slot) {
  const char* path = std::getenv(repo_env);
  if (path == nullptr)
    return;
  git::signature who{"Test", "test@example.com"};
  auto repo = git::open(path);
  git::clear_stale_locks(repo);
  auto db = crash_ledger(path);
  run::finish_landings(repo, db, "r1", "main");
  run::base_record record{db, "r1"};
  git::prune_worktrees(repo);
  auto slot = fs::path{path} / ".taskforce" / "worktrees" / "slot";
  for (int i = 0; i < task_count; ++i) {
    auto branch = "taskforce/cycle/t" + std::to_string(i);
    std::string on_branch;
    for (auto& info : git::list_worktrees(repo))
      if (info.path == slot)
        on_branch = info.branch;
    // A branch still at the base looks merged while its work may sit
    // uncommitted in the slot, or not be done at all (a kill right after
    // the branch was made): a run knows from its ledger whether the branch
    // got the task's commit; here the task's file in the merged tree says
    // it.
    auto tip = git::branch_tip(repo, branch);
    auto file = "cycle/t" + std::to_string(i) + ".txt";
    if (on_branch != branch && tip && git::merged_commit(repo, *tip, "main")
        && fs::exists(fs::path{path} / file))
      continue;
    auto base = *git::branch_tip(repo, "main");
    if (on_branch != branch) {
      auto r = git::reuse_worktree(repo, slot, branch, base);
      if (r.status == git::reuse_result::outcome::not_a_worktree) {
        std::error_code ec;
        fs::remove_all(slot, ec); // never registered: no one's work
        git::create_worktree(repo, slot, branch, base);
      } else if (r.status != git::reuse_result::outcome::reused) {
        CAF_FAIL("slot refused for t" << i << ": "
                                      << static_cast<int>(r.status));
      }
    }
    git_fixture::write(slot, file, "task " + std::to_string(i) + "\n");
    auto wt = git::open(slot);
    git::commit_all(wt, "task t" + std::to_string(i), who);
    auto m = git::merge_into_base(repo, branch, "main",
                                  "Merge t" + std::to_string(i), who, &record);
    if (m.status != git::merge_result::outcome::merged
        && m.status != git::merge_result::outcome::already_merged)
      CAF_FAIL("merge of t" << i << " ended in " << to_string(m.status));
  }
}

CAF_TEST_FIXTURE_SCOPE(git_crash_tests, git_fixture)

CAF_TEST(merges killed at random instants recover with every task merged once) {
  // Twelve task branches from the same base, each changing its own files,
  // in a repository large enough that a merge takes a while.
  for (int f = 0; f < 300; ++f)
    write(root, "bulk/f" + std::to_string(f) + ".txt",
          std::string(2000, static_cast<char>('a' + f % 26)) + "\n");
  git_ok(root, {"add", "-A"});
  git_ok(root, {"commit", "-q", "-m", "bulk"});
  std::map<std::string, int> tips;
  for (int i = 0; i < task_count; ++i) {
    auto branch = task_branch(i);
    task_commit("crash/t" + std::to_string(i),
                {{"bulk/f" + std::to_string(i * 7) + ".txt",
                  "task " + std::to_string(i) + "\n"},
                 {"new/t" + std::to_string(i) + ".txt", "new\n"}});
    git::remove_worktree(repo, wt_path("crash/t" + std::to_string(i)).string());
    tips[tip_of(repo, branch)] = i;
  }
  std::mt19937 rng(4242);
  std::uniform_int_distribution<int> jitter_ms(0, 10);
  int kills = 0;
  bool finished = false;
  for (int round = 0; round < 100 && !finished; ++round) {
    auto pid = spawn_worker(root);
    CAF_REQUIRE(pid > 0);
    // Later rounds wait longer, so the kills sweep across start-up, the
    // merges and the checkout updates until one run gets to the end.
    std::this_thread::sleep_for(
      std::chrono::milliseconds(15 + 6 * round + jitter_ms(rng)));
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ++kills;
    }
    finished = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!WIFEXITED(status)
        && !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
      CAF_FAIL("the worker died in round " << round << " with status "
                                           << status);
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
      CAF_FAIL("the worker failed in round " << round);
  }
  if (!finished) {
    // A slow machine may never let a run end between kills: the last run
    // goes unkilled, still starting from what the kills left.
    int status = 0;
    ::waitpid(spawn_worker(root), &status, 0);
    finished = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  if (!finished) {
    // A slow machine may never let a run end between kills: the last run
    // goes unkilled, still starting from what the kills left.
    int status = 0;
    ::waitpid(
      spawn_worker(root, "the worker runs every task cycle in one slot"),
      &status, 0);
    finished = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  CAF_MESSAGE(kills << " kills before the worker finished");
  CAF_REQUIRE(finished);
  CAF_CHECK(kills > 0);
  // Every task is merged exactly once, as the second parent of a merge on
  // the first-parent line.
  auto parents = lines_of(
    git_ok(root, {"log", "--first-parent", "--merges", "--format=%P", "main"}));
  std::map<int, int> merged;
  for (auto& line : parents) {
    auto second = line.substr(41, 40);
    CAF_REQUIRE(tips.count(second) == 1);
    ++merged[tips[second]];
  }
  CAF_CHECK_EQUAL(merged.size(), static_cast<size_t>(task_count));
  for (auto& [task, count] : merged)
    CAF_CHECK_EQUAL(count, 1);
  // The checkout is whole and the repository sound.
  CAF_CHECK_EQUAL(porcelain(), "");
  CAF_CHECK_EQUAL(read_file(root / "bulk/f7.txt"), "task 1\n");
  CAF_CHECK(fs::exists(root / "new/t11.txt"));
  CAF_CHECK(fsck_clean());
  if (!fsck_output.empty())
    CAF_MESSAGE(fsck_output);
}

CAF_TEST(whole task cycles killed at random instants lose and repeat nothing) {
  for (int f = 0; f < 300; ++f)
    write(root, "bulk/f" + std::to_string(f) + ".txt",
          std::string(2000, static_cast<char>('a' + f % 26)) + "\n");
  git_ok(root, {"add", "-A"});
  git_ok(root, {"commit", "-q", "-m", "bulk"});
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> jitter_ms(0, 10);
  int kills = 0;
  bool finished = false;
  for (int round = 0; round < 150 && !finished; ++round) {
    auto pid
      = spawn_worker(root, "the worker runs every task cycle in one slot");
    CAF_REQUIRE(pid > 0);
    std::this_thread::sleep_for(
      std::chrono::milliseconds(15 + 5 * round + jitter_ms(rng)));
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ++kills;
    }
    finished = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!WIFEXITED(status)
        && !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
      CAF_FAIL("the worker died in round " << round << " with status "
                                           << status);
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
      CAF_FAIL("the worker failed in round " << round);
  }
  CAF_MESSAGE(kills << " kills before the worker finished");
  CAF_REQUIRE(finished);
  // Each task's branch is the second parent of exactly one merge.
  auto parents = lines_of(
    git_ok(root, {"log", "--first-parent", "--merges", "--format=%P", "main"}));
  std::map<std::string, int> seen;
  for (auto& line : parents)
    ++seen[line.substr(41, 40)];
  for (int i = 0; i < task_count; ++i) {
    auto tip = tip_of(repo, "taskforce/cycle/t" + std::to_string(i));
    CAF_CHECK_EQUAL(seen[tip], 1);
    CAF_CHECK_EQUAL(read_file(root / ("cycle/t" + std::to_string(i) + ".txt")),
                    "task " + std::to_string(i) + "\n");
  }
  CAF_CHECK_EQUAL(parents.size(), static_cast<size_t>(task_count));
  CAF_CHECK_EQUAL(porcelain(), "");
  auto slot = git::open(root / ".taskforce/worktrees/slot");
  CAF_CHECK(git::changed_paths(slot).empty());
  CAF_CHECK(fsck_clean());
  if (!fsck_output.empty())
    CAF_MESSAGE(fsck_output);
}

CAF_TEST_FIXTURE_SCOPE_END()
