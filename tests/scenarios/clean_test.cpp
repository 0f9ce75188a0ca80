// What runs that are over leave behind: `clean` lists it, removes what
// holds no work with --yes and work only with --force, never touches an
// unfinished run's; `status` counts it; `discard` points at an older run's.
#define CAF_SUITE scenarios.clean
#include <caf/test/unit_test.hpp>

#include "scenarios/scenario.hpp"
#include "src/store/run_lock.hpp"

using namespace taskforce;
using namespace taskforce::test;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<std::string> task_branches(const scenario& s) {
  return lines_of(git_ok(
    s.root, {"branch", "--format=%(refname:short)", "--list", "taskforce/*"}));
}

/// A run of TASKS.md whose t1 fails with its work left in its worktree
/// and whose t2 is merged; then aborted. Returns the run id.
std::string aborted_run(scenario& s) {
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks("- [ ] Half done\n  - files: a.txt\n"
          "  - run: echo half > a.txt; exit 1\n"
          "- [ ] Fine\n  - files: b.txt\n  - run: echo b > b.txt\n");
  CAF_REQUIRE_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  CAF_REQUIRE_EQUAL(s.tf({"abort"}).code, 0);
  return s.run().id;
}

} // namespace

CAF_TEST(clean lists leftovers and removes work only with force) {
  scenario s;
  auto run = aborted_run(s);
  auto wt = s.root / ".taskforce" / "worktrees" / run / "t1";
  CAF_REQUIRE(fs::exists(wt / "a.txt"));
  // What else a run can leave: a merged task branch checked out nowhere,
  // and a folder no worktree uses.
  git_ok(s.root, {"branch", "taskforce/" + run + "/t9", "main"});
  auto junk = s.root / ".taskforce" / "worktrees" / run / "t7";
  fs::create_directories(junk);

  auto list = s.tf({"clean"});
  CAF_MESSAGE(list.output);
  CAF_CHECK_EQUAL(list.code, 0);
  CAF_CHECK(contains(list.output, "worktree .taskforce/worktrees/" + run
                                    + "/t1 (taskforce/" + run + "/t1)"));
  CAF_CHECK(contains(list.output, "holds work: uncommitted changes: a.txt"));
  CAF_CHECK(contains(list.output, "branch   taskforce/" + run + "/t9"));
  CAF_CHECK(
    contains(list.output, "folder   .taskforce/worktrees/" + run + "/t7"));
  CAF_CHECK(contains(list.output, "3 leftovers, 1 holding work"));
  // Listing removes nothing.
  CAF_CHECK(fs::exists(junk));
  CAF_CHECK_EQUAL(task_branches(s).size(), 2u);

  auto status = s.tf({"status"});
  CAF_CHECK_EQUAL(status.code, 0);
  CAF_CHECK(contains(status.output,
                     "leftovers of runs that are over: 1 worktree, 1 branch, "
                     "1 folder (1 holds work); taskforce clean lists them"));

  auto yes = s.tf({"clean", "--yes"});
  CAF_MESSAGE(yes.output);
  CAF_CHECK_EQUAL(yes.code, 0);
  CAF_CHECK(contains(yes.output, "removed 2, kept 1 holding work"));
  CAF_CHECK(!fs::exists(junk));
  CAF_CHECK_EQUAL(read_file(wt / "a.txt"), "half\n");
  CAF_CHECK_EQUAL(task_branches(s),
                  std::vector<std::string>{"taskforce/" + run + "/t1"});

  auto force = s.tf({"clean", "--force"});
  CAF_CHECK_EQUAL(force.code, 0);
  CAF_CHECK(!fs::exists(wt));
  CAF_CHECK(task_branches(s).empty());
  CAF_CHECK_EQUAL(lines_of(git_ok(s.root, {"worktree", "list"})).size(), 1u);
  // What the run merged stays merged.
  CAF_CHECK_EQUAL(read_file(s.root / "b.txt"), "b\n");
  CAF_CHECK_EQUAL(read_file(s.root / "README.md"), "# project\n");

  auto after = s.tf({"clean"});
  CAF_CHECK_EQUAL(after.output, "nothing to clean\n");
  CAF_CHECK(!contains(s.tf({"status"}).output, "leftovers"));
}

CAF_TEST(unmerged commits on a task branch are work) {
  scenario s;
  auto run = aborted_run(s);
  CAF_REQUIRE_EQUAL(s.tf({"clean", "--force"}).code, 0);
  // A branch holding a commit main does not have.
  git_ok(s.root, {"checkout", "-q", "-b", "taskforce/" + run + "/t5"});
  s.write("c.txt", "c\n");
  git_ok(s.root, {"add", "c.txt"});
  git_ok(s.root, {"commit", "-q", "-m", "c"});
  git_ok(s.root, {"checkout", "-q", "main"});
  auto list = s.tf({"clean"});
  CAF_CHECK(contains(list.output, "branch   taskforce/" + run + "/t5  run "
                                    + run
                                    + "  holds work: commits not merged into "
                                      "main"));
  CAF_CHECK(contains(list.output, "taskforce clean --force removes them"));
  // A branch of the user's under taskforce/ is no run's, merged or not.
  git_ok(s.root, {"branch", "taskforce/fix/parser", "main"});
  CAF_CHECK(!contains(s.tf({"clean"}).output, "fix/parser"));
  s.tf({"clean", "--yes"});
  CAF_CHECK_EQUAL(task_branches(s).size(), 2u);
  s.tf({"clean", "--force"});
  CAF_CHECK_EQUAL(task_branches(s),
                  std::vector<std::string>{"taskforce/fix/parser"});
}

CAF_TEST(an unfinished run keeps its worktrees from clean) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks("- [ ] Half done\n  - files: a.txt\n"
          "  - run: echo half > a.txt; exit 1\n");
  CAF_REQUIRE_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  auto run = s.run().id;
  auto wt = s.root / ".taskforce" / "worktrees" / run / "t1";
  CAF_REQUIRE(fs::exists(wt / "a.txt"));
  CAF_CHECK_EQUAL(s.tf({"clean"}).output, "nothing to clean\n");
  CAF_CHECK_EQUAL(s.tf({"clean", "--force"}).code, 0);
  CAF_CHECK_EQUAL(read_file(wt / "a.txt"), "half\n");
  CAF_CHECK_EQUAL(task_branches(s).size(), 1u);
  CAF_CHECK(!contains(s.tf({"status"}).output, "leftovers"));
}

CAF_TEST(clean removes nothing while a run is driven) {
  scenario s;
  auto run = aborted_run(s);
  auto wt = s.root / ".taskforce" / "worktrees" / run / "t1";
  auto got = store::run_lock::try_acquire(s.root / ".taskforce"
                                          / store::run_lock_file_name);
  CAF_REQUIRE(std::holds_alternative<store::run_lock>(got));
  auto r = s.tf({"clean", "--force"});
  CAF_CHECK_EQUAL(r.code, 2);
  CAF_CHECK(contains(r.output, "clean removes nothing while a run is driven"));
  CAF_CHECK(fs::exists(wt / "a.txt"));
  // Listing still works.
  CAF_CHECK_EQUAL(s.tf({"clean"}).code, 0);
}

CAF_TEST(discard points at an older run that still holds the task) {
  scenario s;
  auto old = aborted_run(s);
  auto wt = s.root / ".taskforce" / "worktrees" / old / "t1";
  // A new run of another file whose t1 is merged: it holds nothing of t1.
  s.set_config("{}");
  s.tasks("- [ ] Other\n  - files: o.txt\n  - run: echo o > o.txt\n",
          "OTHER.md");
  CAF_REQUIRE_EQUAL(s.tf({"run", "OTHER.md"}).code, 0);
  auto r = s.tf({"discard", "t1"});
  CAF_MESSAGE(r.output);
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK(!contains(r.output, "nothing to discard"));
  CAF_CHECK(contains(r.output, "older runs still do: worktree "));
  CAF_CHECK(contains(r.output, "taskforce discard t1 --run " + old));
  CAF_CHECK(fs::exists(wt / "a.txt"));
  // Following the advice removes it.
  CAF_CHECK_EQUAL(s.tf({"discard", "t1", "--run", old}).code, 0);
  CAF_CHECK(!fs::exists(wt));
  CAF_CHECK_EQUAL(s.tf({"discard", "t1"}).output,
                  "nothing to discard for t1\n");
}
