// run.verifyMerged: before the base branch moves, the gate runs on the merge
// result (the base as it is now, with the task merged). Two tasks that each
// pass alone but break together: the second one's merge result fails its
// gate, never reaches main, and its worker repairs it from that result.
#define CAF_SUITE scenarios.verify_merged
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <thread>

#include "scenarios/scenario.hpp"
#include "src/proc/spawn.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Two tasks, fine alone, broken together: t1 renames the greeting in
/// api.txt; t2 copies the greeting it sees into use.txt only after t1 is on
/// main, and its gate wants use.txt to match api.txt. `fix` is what t2
/// writes (the greeting its checkout has, or always the old one). Each
/// worker turn notes its TASKFORCE_TURN in `turns`.
std::string two_tasks(const std::string& turns, const std::string& fix) {
  return "- [ ] Rename the greeting\n  - files: api.txt\n"
         "  - run: echo hello2 > api.txt\n"
         "  - verify: grep -q hello2 api.txt\n"
         "- [ ] Use the greeting\n  - files: use.txt\n"
         "  - run: echo $TASKFORCE_TURN >> "
         + turns
         + " && until grep -q hello2 \"$TASKFORCE_REPO/api.txt\"; do sleep "
           "0.05; done && "
         + fix
         + " > use.txt\n"
           "  - verify: test \"$(cat use.txt)\" = \"$(cat api.txt)\"\n";
}

/// Whether every commit on main's first-parent line that has use.txt has
/// it equal to api.txt (the gate holds on every state main ever had).
bool main_always_green(const scenario& s) {
  for (auto& c : lines_of(
         git_ok(s.root, {"log", "--first-parent", "--format=%H", "main"}))) {
    auto use = run_git(s.root, {"show", c + ":use.txt"});
    if (use.status != 0)
      continue;
    auto api = run_git(s.root, {"show", c + ":api.txt"});
    if (use.output != api.output)
      return false;
  }
  return true;
}

} // namespace

CAF_TEST(a merge result that fails its gate is repaired before main moves) {
  scenario s;
  s.write("api.txt", "hello\n");
  git_ok(s.root, {"add", "api.txt"});
  auto turns = (s.dir.path() / "turns.log").string();
  s.tasks(two_tasks(turns, "cat api.txt"));
  auto r = s.tf({"run", "TASKS.md", "--max-concurrency", "2"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
  CAF_CHECK_EQUAL(to_string(s.task("t2").state), std::string{"done"});
  // main never held the broken combination, and ends green.
  CAF_CHECK(main_always_green(s));
  CAF_CHECK_EQUAL(read_file(s.root / "use.txt"), "hello2\n");
  CAF_CHECK_EQUAL(read_file(s.root / "api.txt"), "hello2\n");
  // t2 worked twice: its start, then the repair of the merge result.
  CAF_CHECK_EQUAL(read_file(turns), "start\nrepair\n");
  // The repair ran in a checkout holding t1's change, and t2 landed once.
  auto merges = lines_of(git_ok(
    s.root, {"log", "--first-parent", "--merges", "--format=%s", "main"}));
  CAF_CHECK_EQUAL(merges.size(), 2u);
  // The merge result's gate log is kept with the attempt.
  auto db = s.ledger();
  auto run = db.latest_run();
  auto attempts = db.attempts(run->id, "t2");
  CAF_REQUIRE_EQUAL(attempts.size(), 2u);
  auto first_log = s.root / ".taskforce"
                   / store::attempt_log_dir(run->id, "t2", 1)
                   / "verify-merged.log";
  CAF_CHECK(std::filesystem::exists(first_log));
  // The scratch worktree is gone with the run, and main is clean.
  CAF_CHECK(
    !std::filesystem::exists(s.root / ".taskforce" / "merge-check" / run->id));
  CAF_CHECK_EQUAL(git_ok(s.root, {"status", "--porcelain"}), "");
}

CAF_TEST(without verifyMerged the same two tasks break main) {
  scenario s;
  s.write("api.txt", "hello\n");
  git_ok(s.root, {"add", "api.txt"});
  auto turns = (s.dir.path() / "turns.log").string();
  s.tasks(two_tasks(turns, "cat api.txt"));
  s.set_config(R"({"run": {"verifyMerged": false}})");
  auto r = s.tf({"run", "TASKS.md", "--max-concurrency", "2"});
  CAF_CHECK_EQUAL(r.code, 0);
  // Each branch passed alone, so both merged: main holds the broken pair.
  CAF_CHECK(!main_always_green(s));
  CAF_CHECK_EQUAL(read_file(turns), "start\n");
}

CAF_TEST(a merge result that stays red never reaches main) {
  scenario s;
  s.write("api.txt", "hello\n");
  git_ok(s.root, {"add", "api.txt"});
  auto turns = (s.dir.path() / "turns.log").string();
  s.tasks(two_tasks(turns, "echo hello"));
  s.set_config(R"({"run": {"maxAttempts": 1, "maxRepairs": 1}})");
  auto r = s.tf({"run", "TASKS.md", "--max-concurrency", "2"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
  auto t2 = s.task("t2");
  CAF_CHECK_EQUAL(to_string(t2.state), std::string{"failed"});
  // Its repair started from the merge result, where its gate fails on the
  // branch too: it failed there, with no repair left.
  CAF_CHECK(contains(t2.reason.value_or(""), "gate failed"));
  CAF_CHECK(!t2.merge_commit);
  CAF_CHECK(main_always_green(s));
  CAF_CHECK(!std::filesystem::exists(s.root / "use.txt"));
  // One repair, then it failed for good.
  CAF_CHECK_EQUAL(read_file(turns), "start\nrepair\n");
  CAF_CHECK_EQUAL(git_ok(s.root, {"status", "--porcelain"}), "");
}

CAF_TEST(
  a driver killed while the merge result is checked leaves main as it was) {
  scenario s;
  auto flag = (s.dir.path() / "checking").string();
  // The gate hangs the first time it runs on a merge result.
  s.tasks("- [ ] One\n  - files: one.txt\n  - run: echo one > one.txt\n"
          "  - verify: if [ -n \"$TASKFORCE_MERGE_RESULT\" ] && [ ! -e "
          + flag + " ]; then touch " + flag
          + "; sleep 1000; fi; grep -q one one.txt\n");
  auto before = git_ok(s.root, {"rev-parse", "main"});
  s.set_config("{}");
  auto driver
    = start_taskforce(s, {"run", "TASKS.md", "--plain"}, "killed.log");
  eventually([&] {
    return std::filesystem::exists(flag);
  });
  CAF_REQUIRE(std::filesystem::exists(flag));
  ::kill(driver.pid, SIGKILL);
  CAF_CHECK_EQUAL(proc::wait_for(driver.pid).signal, SIGKILL);
  // The base has not moved; the task is still merging.
  CAF_CHECK_EQUAL(git_ok(s.root, {"rev-parse", "main"}), before);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"merging"});
  CAF_CHECK(!std::filesystem::exists(s.root / "one.txt"));
  // resume kills the hanging gate, checks the merge result again, lands it.
  auto r = s.tf({"resume"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
  CAF_CHECK_EQUAL(read_file(s.root / "one.txt"), "one\n");
  CAF_CHECK(scenario::processes_mentioning(flag).empty());
  auto merges = lines_of(git_ok(
    s.root, {"log", "--first-parent", "--merges", "--format=%s", "main"}));
  CAF_CHECK_EQUAL(merges.size(), 1u);
  CAF_CHECK_EQUAL(git_ok(s.root, {"status", "--porcelain"}), "");
}
