// What reaches the base branch is checked: a worker's own commits, what the
// gate leaves behind, a worker that moves HEAD, tasks run in place or in
// assist mode, scopes reached through symlinks, and ids git cannot use.
// Each test is a reproduction run with the real binary in a temporary
// repository; each asserts what the user cares about (README still on
// main, the base branch unchanged, the exit code, the reason shown by
// `status --json`, the worker's commit still reachable).
#define CAF_SUITE scenarios.integrity
#include <caf/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "scenarios/scenario.hpp"

using namespace taskforce;
using namespace taskforce::test;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// `git rev-parse main`.
std::string main_tip(const scenario& s) {
  return lines_of(git_ok(s.root, {"rev-parse", "main"})).at(0);
}

/// README.md as committed on main.
std::string readme_on_main(const scenario& s) {
  return run_git(s.root, {"show", "main:README.md"}).output;
}

/// A task's reason as `taskforce status --json` shows it.
std::string status_reason(scenario& s, const std::string& id) {
  auto r = s.tf({"status", "--json"});
  auto start = r.output.find('{');
  if (start == std::string::npos)
    return "(no JSON: " + r.output + ")";
  auto j = nlohmann::json::parse(r.output.substr(start), nullptr, false);
  if (!j.is_object() || !j.contains("tasks"))
    return "(bad JSON: " + r.output + ")";
  for (auto& t : j["tasks"])
    if (t.value("id", "") == id)
      return t["reason"].is_string() ? t["reason"].get<std::string>() : "";
  return "(no task " + id + ")";
}

} // namespace

// -- a worker's own commits ---------------------------------------------------

CAF_TEST(a worker that commits outside its scope fails and main keeps README) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks("- [ ] Sneaky commit\n  - files: src/a.txt\n"
          "  - run: mkdir -p src && echo a > src/a.txt && git rm -q README.md"
          " && git commit -qm sneaky\n");
  auto before = main_tip(s);
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"failed"});
  CAF_CHECK_EQUAL(main_tip(s), before);
  CAF_CHECK_EQUAL(readme_on_main(s), "# project\n");
  CAF_CHECK(fs::exists(s.root / "README.md"));
  auto reason = status_reason(s, "t1");
  CAF_CHECK(contains(reason, "outside its scope"));
  CAF_CHECK(contains(reason, "README.md"));
  CAF_CHECK(!contains(reason, "src/a.txt"));
  // The worker's commit is kept on its branch.
  auto sneaky = commit_with_subject(s, "sneaky");
  CAF_REQUIRE(!sneaky.empty());
  CAF_CHECK(reachable(s, sneaky));
}

CAF_TEST(a worker that commits inside its scope is merged) {
  scenario s;
  s.tasks("- [ ] Own commit\n  - files: a.txt\n"
          "  - run: echo a > a.txt && git add a.txt && git commit -qm mine\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(read_file(s.root / "a.txt"), "a\n");
  CAF_CHECK_EQUAL(readme_on_main(s), "# project\n");
}

// -- what the gate leaves behind ----------------------------------------------

CAF_TEST(a gate that deletes README and writes coverage fails the attempt) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks("- [ ] Gated\n  - files: a.txt\n  - run: echo a > a.txt\n"
          "  - verify: echo generated > coverage.txt; rm -f README.md; true\n");
  auto before = main_tip(s);
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"failed"});
  CAF_CHECK_EQUAL(main_tip(s), before);
  CAF_CHECK_EQUAL(readme_on_main(s), "# project\n");
  CAF_CHECK(!fs::exists(s.root / "coverage.txt"));
  auto reason = status_reason(s, "t1");
  CAF_CHECK(contains(reason, "gate"));
  CAF_CHECK(contains(reason, "coverage.txt"));
  CAF_CHECK(contains(reason, "README.md"));
}

CAF_TEST(
  what the gate writes into ignored files is neither checked nor merged) {
  scenario s;
  s.write(".gitignore", "coverage.txt\n");
  git_ok(s.root, {"add", ".gitignore"});
  s.tasks("- [ ] Gated\n  - files: a.txt\n  - run: echo a > a.txt\n"
          "  - verify: echo generated > coverage.txt\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(read_file(s.root / "a.txt"), "a\n");
  CAF_CHECK(run_git(s.root, {"cat-file", "-e", "main:coverage.txt"}).status
            != 0);
}

// -- a worker that moves HEAD -------------------------------------------------

CAF_TEST(a worker that checks out another branch fails and its work is kept) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks("- [ ] Wanderer\n  - files: a.txt\n"
          "  - run: git checkout -q -b other && echo a > a.txt"
          " && git add a.txt && git commit -qm wandered\n");
  auto before = main_tip(s);
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"failed"});
  CAF_CHECK_EQUAL(main_tip(s), before);
  auto reason = status_reason(s, "t1");
  CAF_CHECK(contains(reason, "HEAD"));
  CAF_CHECK(contains(reason, "other"));
  auto work = commit_with_subject(s, "wandered");
  CAF_REQUIRE(!work.empty());
  CAF_CHECK(reachable(s, work));
  // The worktree it left is still there, as it was.
  auto wt = s.task("t1").worktree.value_or("/none");
  CAF_CHECK(fs::exists(fs::path{wt} / "a.txt"));
}

CAF_TEST(a worker that detaches HEAD fails and its commit stays reachable) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks("- [ ] Detacher\n  - files: a.txt\n"
          "  - run: git checkout -q --detach && echo a > a.txt"
          " && git add a.txt && git commit -qm detached-work\n");
  auto before = main_tip(s);
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"failed"});
  CAF_CHECK_EQUAL(main_tip(s), before);
  auto reason = status_reason(s, "t1");
  CAF_CHECK(contains(reason, "HEAD"));
  CAF_CHECK(contains(reason, "refs/taskforce/kept/"));
  auto work = commit_with_subject(s, "detached-work");
  CAF_REQUIRE(!work.empty());
  CAF_CHECK(reachable(s, work));
  // Once the user deletes that worktree, a ref still holds the commit.
  fs::remove_all(s.task("t1").worktree.value_or("/none"));
  git_ok(s.root, {"worktree", "prune"});
  git_ok(s.root, {"gc", "-q", "--prune=now"});
  CAF_CHECK(run_git(s.root, {"cat-file", "-e", work}).status == 0);
}

CAF_TEST(a worker that resets its branch backwards fails and loses nothing) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks("- [ ] Resetter\n  - files: a.txt\n"
          "  - run: git reset -q --hard HEAD~ && echo a > a.txt\n");
  auto before = main_tip(s);
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"failed"});
  CAF_CHECK_EQUAL(main_tip(s), before);
  CAF_CHECK(contains(status_reason(s, "t1"), "HEAD"));
}

CAF_TEST(a worker that switches to an existing branch fails) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  git_ok(s.root, {"branch", "elsewhere", "HEAD"});
  s.tasks("- [ ] Switcher\n  - files: a.txt\n"
          "  - run: git checkout -q elsewhere && echo a > a.txt\n");
  auto before = main_tip(s);
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(main_tip(s), before);
  CAF_CHECK(contains(status_reason(s, "t1"), "elsewhere"));
}

CAF_TEST(after a moved HEAD the retry starts again from the task branch) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 2}})");
  s.tasks("- [ ] Once astray\n  - files: a.txt\n"
          "  - run: if [ \"$TASKFORCE_ATTEMPT\" = 1 ]; then git checkout -q"
          " -b astray; echo astray > a.txt; else echo a > a.txt; fi\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
  CAF_CHECK_EQUAL(read_file(s.root / "a.txt"), "a\n");
  // The first attempt's worktree, on its own branch, is left as it was.
  bool kept = false;
  for (auto& line : lines_of(git_ok(s.root, {"worktree", "list"})))
    kept |= contains(line, "[astray]");
  CAF_CHECK(kept);
}

// -- in place and assist ------------------------------------------------------

CAF_TEST(assist mode fails a task that writes outside its scope) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks("- [ ] Sneak\n  - files: a.txt\n"
          "  - run: echo a > a.txt && echo sneak >> README.md\n");
  auto before = main_tip(s);
  auto r = s.tf({"run", "TASKS.md", "--mode", "assist"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"failed"});
  CAF_CHECK_EQUAL(main_tip(s), before);
  auto reason = status_reason(s, "t1");
  CAF_CHECK(contains(reason, "outside its scope"));
  CAF_CHECK(contains(reason, "README.md"));
  CAF_CHECK(!contains(reason, "a.txt,"));
}

CAF_TEST(in place a task that writes outside its scope fails) {
  scenario s;
  s.set_config(R"({"run": {"useWorktrees": false, "maxAttempts": 1}})");
  s.tasks("- [ ] Sneak\n  - files: a.txt\n"
          "  - run: echo a > a.txt && echo sneak >> README.md\n");
  auto before = main_tip(s);
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"failed"});
  CAF_CHECK_EQUAL(main_tip(s), before);
  CAF_CHECK_EQUAL(readme_on_main(s), "# project\n");
  CAF_CHECK(contains(status_reason(s, "t1"), "README.md"));
}

CAF_TEST(in place a worker that commits on the base branch is undone) {
  scenario s;
  s.set_config(R"({"run": {"useWorktrees": false, "maxAttempts": 1}})");
  s.tasks("- [ ] Committer\n  - files: a.txt\n"
          "  - run: echo a > a.txt && git rm -q README.md"
          " && git commit -qm inplace-sneak\n");
  auto before = main_tip(s);
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"failed"});
  CAF_CHECK_EQUAL(main_tip(s), before);
  CAF_CHECK_EQUAL(readme_on_main(s), "# project\n");
  auto head = git_ok(s.root, {"symbolic-ref", "HEAD"});
  CAF_CHECK_EQUAL(head, "refs/heads/main\n");
  auto reason = status_reason(s, "t1");
  CAF_CHECK(contains(reason, "HEAD"));
  auto work = commit_with_subject(s, "inplace-sneak");
  CAF_REQUIRE(!work.empty());
  CAF_CHECK(reachable(s, work));
}

namespace {

/// A shell loop that waits (at most ~20 s, then fails) until `test` holds:
/// tasks meet each other this way, with no timing assumed.
std::string until(const std::string& test) {
  return "n=0; until " + test
         + "; do n=$((n+1)); [ $n -lt 400 ] || exit 9; sleep 0.05; done";
}

/// The paths the commit with `subject` changed, sorted.
std::vector<std::string> paths_of(const scenario& s,
                                  const std::string& subject) {
  auto commit = commit_with_subject(s, subject);
  if (commit.empty())
    return {"(no commit " + subject + ")"};
  return lines_of(git_ok(
    s.root, {"diff-tree", "--no-commit-id", "--name-only", "-r", commit}));
}

} // namespace

CAF_TEST(in place tasks with disjoint scopes run together and both pass) {
  scenario s;
  s.set_config(R"({"run": {"useWorktrees": false, "maxConcurrency": 2}})");
  // Each writes its file, then waits for the other's: they can only both
  // finish by running at the same time.
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt && "
          + until("[ -f b.txt ]")
          + "\n"
            "- [ ] B\n  - files: b.txt\n  - run: echo b > b.txt && "
          + until("[ -f a.txt ]") + "\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
  CAF_CHECK_EQUAL(to_string(s.task("t2").state), std::string{"done"});
  CAF_CHECK_EQUAL(paths_of(s, "taskforce: t1: A"),
                  std::vector<std::string>{"a.txt"});
  CAF_CHECK_EQUAL(paths_of(s, "taskforce: t2: B"),
                  std::vector<std::string>{"b.txt"});
  CAF_CHECK_EQUAL(run_git(s.root, {"show", "main:b.txt"}).output, "b\n");
  CAF_CHECK_EQUAL(git_ok(s.root, {"status", "--porcelain"}), "");
}

CAF_TEST(in place tasks whose scopes meet never run at the same time) {
  scenario s;
  s.set_config(R"({"run": {"useWorktrees": false, "maxConcurrency": 3}})");
  s.tasks("- [ ] A\n  - files: shared/\n"
          "  - run: sleep 0.3 && mkdir -p shared && echo a > shared/a.txt\n"
          "- [ ] B\n  - files: shared/b.txt\n"
          "  - run: sleep 0.3 && mkdir -p shared && echo b > shared/b.txt\n"
          "- [ ] C\n  - run: sleep 0.3 && echo c > c.txt\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  auto db = s.ledger();
  auto run = db.latest_run();
  std::vector<store::attempt_row> all;
  for (auto id : {"t1", "t2", "t3"})
    all.push_back(db.attempts(run->id, id).at(0));
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = i + 1; j < all.size(); ++j)
      CAF_CHECK(all[j].started_ms >= all[i].ended_ms.value_or(INT64_MAX)
                || all[i].started_ms >= all[j].ended_ms.value_or(INT64_MAX));
}

CAF_TEST(in place a task that writes outside its scope fails alone) {
  scenario s;
  s.set_config(R"({"run": {"useWorktrees": false, "maxConcurrency": 2,)"
               R"( "maxAttempts": 1}})");
  // B writes out of its scope once A is merged: A cannot have made it.
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt\n"
          "- [ ] B\n  - files: b.txt\n  - run: "
          + until("git log --format=%s main | grep -q 'taskforce: t1'")
          + " && echo b > b.txt && echo stray > stray.txt\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
  CAF_CHECK_EQUAL(to_string(s.task("t2").state), std::string{"failed"});
  CAF_CHECK(contains(status_reason(s, "t2"), "stray.txt"));
  CAF_CHECK_EQUAL(paths_of(s, "taskforce: t1: A"),
                  std::vector<std::string>{"a.txt"});
  CAF_CHECK_NOT_EQUAL(run_git(s.root, {"show", "main:stray.txt"}).status, 0);
  CAF_CHECK_NOT_EQUAL(run_git(s.root, {"show", "main:b.txt"}).status, 0);
}

CAF_TEST(in place a stray change fails every task that could have made it) {
  scenario s;
  s.set_config(R"({"run": {"useWorktrees": false, "maxConcurrency": 2,)"
               R"( "maxAttempts": 1}})");
  // stray.txt, in nobody's scope, appears while both run.
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt && "
          + until("[ -f stray.txt ]")
          + "\n"
            "- [ ] B\n  - files: b.txt\n  - run: "
          + until("[ -f a.txt ]")
          + " && echo b > b.txt && echo s > stray.txt\n");
  auto before = main_tip(s);
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"failed"});
  CAF_CHECK_EQUAL(to_string(s.task("t2").state), std::string{"failed"});
  CAF_CHECK(contains(status_reason(s, "t1"), "stray.txt"));
  CAF_CHECK(contains(status_reason(s, "t2"), "stray.txt"));
  CAF_CHECK_EQUAL(main_tip(s), before);
}

CAF_TEST(assist mode refuses a user edit inside a task scope) {
  scenario s;
  s.tasks("- [ ] Shared\n  - files: shared.txt\n"
          "  - run: echo task > shared.txt\n");
  s.write("shared.txt", "user edit\n");
  auto r = s.tf({"run", "TASKS.md", "--mode", "assist"});
  CAF_CHECK_EQUAL(r.code, 2);
  CAF_CHECK(contains(r.output, "shared.txt"));
  CAF_CHECK_EQUAL(read_file(s.root / "shared.txt"), "user edit\n");
  CAF_CHECK(!fs::exists(s.root / ".taskforce"));
}

CAF_TEST(assist mode refuses an untracked file inside a task scope) {
  scenario s;
  s.tasks("- [ ] Notes\n  - files: notes/\n"
          "  - run: mkdir -p notes && echo task > notes/n.txt\n");
  s.write("notes/n.txt", "mine\n");
  auto r = s.tf({"run", "TASKS.md", "--mode", "assist"});
  CAF_CHECK_EQUAL(r.code, 2);
  CAF_CHECK(contains(r.output, "notes/n.txt"));
  CAF_CHECK_EQUAL(read_file(s.root / "notes/n.txt"), "mine\n");
}

CAF_TEST(assist mode runs beside a user edit outside every scope) {
  scenario s;
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt\n");
  s.write("README.md", "user edit\n");
  auto r = s.tf({"run", "TASKS.md", "--mode", "assist"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(read_file(s.root / "README.md"), "user edit\n");
  CAF_CHECK_EQUAL(read_file(s.root / "a.txt"), "a\n");
}

CAF_TEST(in place a user file outside every scope is not committed) {
  scenario s;
  s.set_config(R"({"run": {"useWorktrees": false}})");
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt\n");
  // Integrate mode refuses dirty tracked files, so the user's work is an
  // untracked file outside every scope.
  s.write("mine.txt", "mine\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK(run_git(s.root, {"cat-file", "-e", "main:mine.txt"}).status != 0);
  CAF_CHECK_EQUAL(read_file(s.root / "mine.txt"), "mine\n");
  CAF_CHECK(run_git(s.root, {"cat-file", "-e", "main:a.txt"}).status == 0);
}

// -- scopes through symlinks --------------------------------------------------

CAF_TEST(a scope through a symlink out of the repository is refused) {
  scenario s;
  auto outside = s.dir.path() / "outside";
  fs::create_directories(outside);
  fs::create_symlink(outside, s.root / "out");
  git_ok(s.root, {"add", "out"});
  git_ok(s.root, {"commit", "-q", "-m", "link"});
  s.tasks("- [ ] Escape\n  - files: out/pwn.txt\n"
          "  - run: echo pwn > out/pwn.txt\n");
  auto plan = s.tf({"plan", "TASKS.md"});
  CAF_CHECK_EQUAL(plan.code, 2);
  CAF_CHECK(contains(plan.output, "TASKS.md:2: "));
  CAF_CHECK(contains(plan.output, "out/pwn.txt"));
  CAF_CHECK(contains(plan.output, "outside the repository"));
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 2);
  CAF_CHECK(contains(r.output, "TASKS.md:2: "));
  CAF_CHECK(!fs::exists(outside / "pwn.txt"));
}

CAF_TEST(a scope through a symlink to.git is refused) {
  scenario s;
  s.set_config(R"({"run": {"useWorktrees": false}})");
  fs::create_symlink(".git", s.root / "g");
  git_ok(s.root, {"add", "g"});
  git_ok(s.root, {"commit", "-q", "-m", "alias"});
  s.tasks("- [ ] Hook\n  - files: g/hooks/post-checkout\n"
          "  - run: printf '#!/bin/sh\\necho hooked\\n' >"
          " g/hooks/post-checkout\n");
  auto plan = s.tf({"plan", "TASKS.md"});
  CAF_CHECK_EQUAL(plan.code, 2);
  CAF_CHECK(contains(plan.output, "TASKS.md:2: "));
  CAF_CHECK(contains(plan.output, ".git"));
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 2);
  CAF_CHECK(!fs::exists(s.root / ".git" / "hooks" / "post-checkout"));
}

CAF_TEST(plan sees the conflict of two spellings of one file) {
  scenario s;
  s.write("src/a.txt", "a\n");
  fs::create_symlink("src", s.root / "inlink");
  git_ok(s.root, {"add", "-A"});
  git_ok(s.root, {"commit", "-q", "-m", "inlink"});
  s.tasks("- [ ] Direct\n  - files: src/a.txt\n  - run: echo 1 > src/a.txt\n"
          "- [ ] Through the link\n  - files: inlink/a.txt\n"
          "  - run: echo 2 > inlink/a.txt\n");
  auto plan = s.tf({"plan", "TASKS.md", "--json"});
  CAF_CHECK_EQUAL(plan.code, 0);
  auto j = nlohmann::json::parse(plan.output, nullptr, false);
  CAF_REQUIRE(j.is_object());
  CAF_CHECK_EQUAL(j["conflicts"].dump(), R"([["t1","t2"]])");
  CAF_CHECK_EQUAL(j["waves"].size(), 2u);
}

CAF_TEST(a worker that adds a symlink out of the repository fails) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  auto outside = s.dir.path() / "outside";
  fs::create_directories(outside);
  s.tasks("- [ ] Link\n  - files: link\n  - run: ln -s " + outside.string()
          + " link\n");
  auto before = main_tip(s);
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(main_tip(s), before);
  auto reason = status_reason(s, "t1");
  CAF_CHECK(contains(reason, "link"));
  CAF_CHECK(contains(reason, "outside the repository"));
}

// -- ids ----------------------------------------------------------------------

CAF_TEST(ids git cannot use in a branch name are refused by plan) {
  scenario s;
  s.tasks("- [ ] One\n  - id: a..b\n  - files: a.txt\n"
          "- [ ] Two\n  - id: x.lock\n  - files: b.txt\n"
          "- [ ] Three\n  - id: c.\n  - files: c.txt\n"
          "- [ ] Four\n  - id: fine.id\n  - files: d.txt\n");
  auto plan = s.tf({"plan", "TASKS.md"});
  CAF_CHECK_EQUAL(plan.code, 2);
  CAF_CHECK(contains(plan.output, "TASKS.md:2: "));
  CAF_CHECK(contains(plan.output, "TASKS.md:5: "));
  CAF_CHECK(contains(plan.output, "TASKS.md:8: "));
  CAF_CHECK(!contains(plan.output, "TASKS.md:11: "));
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 2);
  CAF_CHECK(!fs::exists(s.root / ".taskforce"));
}

CAF_TEST(resume never reuses the worktree an attempt moved HEAD in) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  auto flag = (s.dir.path() / "once.flag").string();
  s.tasks("- [ ] Once astray\n  - files: a.txt\n"
          "  - run: if [ ! -f "
          + flag + " ]; then touch " + flag
          + "; git checkout -q -b astray; echo astray > a.txt;"
            " else echo a > a.txt; fi\n");
  CAF_CHECK_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  auto kept = s.task("t1").worktree.value_or("/none");
  CAF_REQUIRE(fs::exists(fs::path{kept} / "a.txt"));
  auto again = s.tf({"resume"});
  CAF_CHECK_EQUAL(again.code, 0);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
  CAF_CHECK_EQUAL(read_file(s.root / "a.txt"), "a\n");
  CAF_CHECK(s.task("t1").worktree.value_or("") != kept);
  // The kept worktree, its branch and its uncommitted file are untouched.
  CAF_CHECK_EQUAL(read_file(fs::path{kept} / "a.txt"), "astray\n");
  auto head = git_ok(kept, {"symbolic-ref", "HEAD"});
  CAF_CHECK_EQUAL(head, "refs/heads/astray\n");
}

CAF_TEST(a worker that takes the branch of another task does not block it) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1, "continueOnError": true}})");
  // A shared lock makes t2 start once t1 is over; the worker knows the
  // run id from its environment.
  s.tasks(
    "- [ ] Thief\n  - files: a.txt\n  - locks: one\n"
    "  - run: git branch taskforce/$TASKFORCE_RUN_ID/t2 && git checkout -q"
    " taskforce/$TASKFORCE_RUN_ID/t2 && echo a > a.txt\n"
    "- [ ] Victim\n  - files: b.txt\n  - locks: one\n"
    "  - run: echo b > b.txt\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"failed"});
  CAF_CHECK(contains(status_reason(s, "t1"), "/t2"));
  CAF_CHECK_EQUAL(to_string(s.task("t2").state), std::string{"done"});
  CAF_CHECK_EQUAL(read_file(s.root / "b.txt"), "b\n");
}

CAF_TEST(a task that falls back to in place keeps the merges made meanwhile) {
  scenario s;
  // A branch named `taskforce` leaves no room for taskforce/<run>/<task>:
  // no worktree can be made, and requireWorktrees: false runs both tasks
  // in place, side by side.
  git_ok(s.root, {"branch", "taskforce"});
  s.set_config(R"({"run": {"requireWorktrees": false, "maxConcurrency": 2}})");
  s.tasks("- [ ] Quick\n  - files: a.txt\n  - run: sleep 1 && echo a > a.txt\n"
          "- [ ] Slow\n  - files: b.txt\n  - run: sleep 3 && echo b > b.txt\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
  CAF_CHECK_EQUAL(to_string(s.task("t2").state), std::string{"done"});
  // The quick task's commit, made while the slow one ran, stays on main.
  CAF_CHECK_EQUAL(run_git(s.root, {"show", "main:a.txt"}).output, "a\n");
  CAF_CHECK_EQUAL(run_git(s.root, {"show", "main:b.txt"}).output, "b\n");
}
