// Only a task's own merge moves the base branch, and recovery never
// destroys a person's edits. Each test is a reproduction run with the real
// binary in a temporary repository: a person's staged revert or restored
// file survives `resume` and the next run; a merge a kill cut short between
// the base's move and the checkout update is still completed; a worker or a
// gate that moves the base (git update-ref, a commit in the main checkout)
// fails, the base goes back, the run pauses naming the commits, and no task
// is done with a merge that is not its own; a person's commits meanwhile
// stay; a write into the main checkout through $TASKFORCE_REPO fails the
// attempt; `status` flags a merge the base no longer has.
#define CAF_SUITE scenarios.base
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

std::string rev(const scenario& s, const std::string& what) {
  return lines_of(git_ok(s.root, {"rev-parse", what})).at(0);
}

std::string porcelain(const scenario& s) {
  return git_ok(s.root, {"status", "--porcelain"});
}

std::string on_main(const scenario& s, const std::string& path) {
  return run_git(s.root, {"show", "main:" + path}).output;
}

/// `taskforce status --json` as JSON.
nlohmann::json status_json(scenario& s) {
  auto r = s.tf({"status", "--json"});
  auto start = r.output.find('{');
  if (start == std::string::npos)
    return nlohmann::json::object();
  return nlohmann::json::parse(r.output.substr(start), nullptr, false);
}

nlohmann::json task_json(scenario& s, const std::string& id) {
  auto j = status_json(s);
  if (j.is_object() && j.contains("tasks"))
    for (auto& t : j["tasks"])
      if (t.value("id", "") == id)
        return t;
  return nlohmann::json::object();
}

std::string reason_of(scenario& s, const std::string& id) {
  auto t = task_json(s, id);
  return t.contains("reason") && t["reason"].is_string()
           ? t["reason"].get<std::string>()
           : "";
}

/// A shell loop that waits (at most ~30 s, then fails) until `test` holds.
std::string until(const std::string& test) {
  return "n=0; until " + test
         + "; do n=$((n+1)); [ $n -lt 600 ] || exit 9; sleep 0.05; done";
}

} // namespace

// -- recovery never rewrites a person's edits ---------------------------------

CAF_TEST(a staged revert after a run survives resume and the next run) {
  scenario s;
  s.tasks("- [ ] w\n  - id: w1\n  - files: README.md\n"
          "  - run: echo 'task rewrote readme' > README.md\n");
  CAF_REQUIRE_EQUAL(s.tf({"run", "TASKS.md", "--plain"}).code, 0);
  // The last commit is taskforce's merge; the person undoes what it did.
  git_ok(s.root, {"checkout", "HEAD~1", "--", "README.md"});
  CAF_REQUIRE_EQUAL(porcelain(s), "M  README.md\n");
  auto r = s.tf({"resume"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK(contains(r.output, "nothing to resume"));
  CAF_CHECK_EQUAL(read_file(s.root / "README.md"), "# project\n");
  CAF_CHECK_EQUAL(porcelain(s), "M  README.md\n");
  // The next run (assist mode: a dirty file outside its scope is fine).
  s.write("MORE.md", "- [ ] m\n  - id: m1\n  - files: more.txt\n"
                     "  - run: echo more > more.txt\n");
  auto next = s.tf({"run", "MORE.md", "--mode", "assist", "--plain"});
  CAF_CHECK_EQUAL(next.code, 0);
  CAF_CHECK_EQUAL(read_file(s.root / "README.md"), "# project\n");
  CAF_CHECK(contains(porcelain(s), "M  README.md\n"));
  CAF_CHECK_EQUAL(read_file(s.root / "more.txt"), "more\n");
}

CAF_TEST(edits after a person s own merge survive resume and the next run) {
  scenario s;
  s.tasks("- [ ] w\n  - files: w.txt\n  - run: echo w > w.txt\n");
  CAF_REQUIRE_EQUAL(s.tf({"run", "TASKS.md", "--plain"}).code, 0);
  // The person's own branch: it changes shared.txt, adds added.txt and
  // removes README.md; merged with git merge --no-ff.
  git_ok(s.root, {"checkout", "-q", "-b", "feature"});
  s.write("shared.txt", "feature\n");
  s.write("added.txt", "added\n");
  git_ok(s.root, {"rm", "-q", "README.md"});
  git_ok(s.root, {"add", "-A"});
  git_ok(s.root, {"commit", "-q", "-m", "feature"});
  git_ok(s.root, {"checkout", "-q", "main"});
  git_ok(s.root, {"merge", "-q", "--no-ff", "-m", "merge feature", "feature"});
  // Then undoes parts of it: a staged revert, a removed addition, a
  // restored removal.
  git_ok(s.root, {"checkout", "HEAD~1", "--", "shared.txt"});
  git_ok(s.root, {"rm", "-q", "added.txt"});
  git_ok(s.root, {"checkout", "HEAD~1", "--", "README.md"});
  auto before = porcelain(s);
  CAF_REQUIRE_EQUAL(before, "A  README.md\nD  added.txt\nM  shared.txt\n");
  CAF_CHECK_EQUAL(s.tf({"resume"}).code, 0);
  CAF_CHECK_EQUAL(porcelain(s), before);
  s.write("MORE.md", "- [ ] m\n  - id: m1\n  - files: more.txt\n"
                     "  - run: echo more > more.txt\n");
  CAF_CHECK_EQUAL(s.tf({"run", "MORE.md", "--mode", "assist"}).code, 0);
  CAF_CHECK_EQUAL(read_file(s.root / "shared.txt"), "base\n");
  CAF_CHECK(!fs::exists(s.root / "added.txt"));
  CAF_CHECK_EQUAL(read_file(s.root / "README.md"), "# project\n");
  auto after = porcelain(s);
  CAF_CHECK(contains(after, "A  README.md\n"));
  CAF_CHECK(contains(after, "D  added.txt\n"));
  CAF_CHECK(contains(after, "M  shared.txt\n"));
  // And an integrate run refuses the dirty checkout, touching nothing.
  s.write("THIRD.md", "- [ ] t\n  - id: x1\n  - files: x.txt\n"
                      "  - run: echo x > x.txt\n");
  after = porcelain(s);
  auto third = s.tf({"run", "THIRD.md"});
  CAF_CHECK_EQUAL(third.code, 2);
  CAF_CHECK_EQUAL(porcelain(s), after);
}

CAF_TEST(
  a merge cut short between the move of the base and the checkout is done) {
  scenario s;
  s.set_config(R"({"run": {"autoMerge": false}})");
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt\n");
  CAF_REQUIRE_EQUAL(s.tf({"run", "TASKS.md", "--plain"}).code, 1);
  auto t = s.task("t1");
  CAF_REQUIRE_EQUAL(to_string(t.state), std::string{"review"});
  auto wt = t.worktree.value_or("/none");
  git_ok(wt, {"add", "-A"});
  git_ok(wt, {"commit", "-q", "-m", "a"});
  auto base = rev(s, "main");
  auto tip = rev(s, t.branch.value_or("none"));
  // The merge as the run lands it: written down in the ledger, then the
  // base moves, and the kill comes before the checkout follows.
  auto tree = lines_of(git_ok(s.root, {"rev-parse", tip + "^{tree}"})).at(0);
  auto merge = lines_of(git_ok(s.root, {"commit-tree", tree, "-p", base, "-p",
                                        tip, "-m", "Merge t1"}))
                 .at(0);
  {
    auto db = store::ledger::open(s.root / ".taskforce" / "ledger.sqlite");
    nlohmann::json data{
      {"commit", merge}, {"base", base}, {"paths", {"a.txt"}}};
    db.append_event(s.run().id, std::string{"t1"}, "base.landing", data.dump(),
                    store::wall_clock_ms());
  }
  git_ok(s.root, {"update-ref", "-m", "taskforce: merge " + merge,
                  "refs/heads/main", merge, base});
  CAF_REQUIRE(!fs::exists(s.root / "a.txt"));
  CAF_REQUIRE_EQUAL(porcelain(s), "D  a.txt\n");
  auto r = s.tf({"resume", "--plain"});
  CAF_CHECK_EQUAL(r.code, 0);
  if (r.code != 0)
    CAF_MESSAGE(r.output);
  CAF_CHECK_EQUAL(read_file(s.root / "a.txt"), "a\n");
  CAF_CHECK_EQUAL(porcelain(s), "");
  CAF_CHECK_EQUAL(rev(s, "main"), merge);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
}

// -- only a task's own merge moves the base -----------------------------------

CAF_TEST(a worker that moves main to its own commit is undone and pauses) {
  scenario s;
  s.set_config(R"({"run": {"continueOnError": true, "maxAttempts": 1}})");
  s.tasks("- [ ] update-ref with a passing gate, out of scope\n"
          "  - files: src/u1.txt\n"
          "  - run: echo EVIL > README.md && git commit -qam sneaky1"
          " && git update-ref refs/heads/main HEAD\n"
          "  - verify: true\n"
          "- [ ] another\n  - files: src/o.txt\n  - deps: 1\n"
          "  - run: mkdir -p src && echo o > src/o.txt\n");
  auto before = rev(s, "main");
  auto r = s.tf({"run", "TASKS.md", "--plain"});
  CAF_CHECK_EQUAL(r.code, 1);
  // main never has it, and the main checkout is as main has it.
  CAF_CHECK_EQUAL(rev(s, "main"), before);
  CAF_CHECK_EQUAL(on_main(s, "README.md"), "# project\n");
  CAF_CHECK_EQUAL(read_file(s.root / "README.md"), "# project\n");
  CAF_CHECK_EQUAL(porcelain(s), "");
  // The task failed and is not done with the worker's commit; the run
  // paused, continueOnError notwithstanding, naming the commit.
  auto t = s.task("t1");
  CAF_CHECK_EQUAL(to_string(t.state), std::string{"failed"});
  CAF_CHECK(!t.merge_commit);
  CAF_CHECK_EQUAL(to_string(s.run().state), std::string{"paused"});
  auto reason = reason_of(s, "t1");
  CAF_CHECK(contains(reason, "sneaky1"));
  CAF_CHECK(contains(reason, "t1"));
  CAF_CHECK(contains(reason, "back at"));
  CAF_CHECK_EQUAL(to_string(s.task("t2").state), std::string{"pending"});
  // The worker's commit is kept.
  auto sneaky = commit_with_subject(s, "sneaky1");
  CAF_REQUIRE(!sneaky.empty());
  CAF_CHECK(reachable(s, sneaky));
}

CAF_TEST(a worker that moves main backwards loses no commit) {
  scenario s;
  auto first = rev(s, "main");
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks("- [ ] one\n  - files: src/t1.txt\n"
          "  - run: mkdir -p src && echo one > src/t1.txt\n"
          "- [ ] two\n  - files: src/t2.txt\n  - deps: 1\n"
          "  - run: git update-ref refs/heads/main "
          + first + " && mkdir -p src && echo two > src/t2.txt\n");
  auto r = s.tf({"run", "TASKS.md", "--plain"});
  CAF_CHECK_EQUAL(r.code, 1);
  // t1's merge and the person's "tasks" commit are still on main.
  auto subjects = s.first_parent_subjects();
  CAF_CHECK(std::find(subjects.begin(), subjects.end(), "tasks")
            != subjects.end());
  auto t1 = s.task("t1");
  CAF_CHECK_EQUAL(to_string(t1.state), std::string{"done"});
  CAF_REQUIRE(t1.merge_commit);
  CAF_CHECK_EQUAL(rev(s, "main"), *t1.merge_commit);
  CAF_CHECK_EQUAL(on_main(s, "src/t1.txt"), "one\n");
  CAF_CHECK_EQUAL(porcelain(s), "");
  CAF_CHECK_EQUAL(to_string(s.task("t2").state), std::string{"failed"});
  CAF_CHECK_EQUAL(to_string(s.run().state), std::string{"paused"});
  auto reason = reason_of(s, "t2");
  CAF_CHECK(contains(reason, "lost 3 commits"));
  if (!contains(reason, "lost 3 commits"))
    CAF_MESSAGE(reason);
  CAF_CHECK(contains(reason, "tasks"));
}

CAF_TEST(a worker that commits in the main checkout is undone and pauses) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks("- [ ] direct\n  - files: src/t4.txt\n"
          "  - run: cd \"$TASKFORCE_REPO\" && echo EVIL >> README.md"
          " && git commit -qam 'direct evil'; cd - >/dev/null;"
          " mkdir -p src && echo four > src/t4.txt\n");
  auto before = rev(s, "main");
  auto r = s.tf({"run", "TASKS.md", "--plain"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(rev(s, "main"), before);
  CAF_CHECK_EQUAL(on_main(s, "README.md"), "# project\n");
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"failed"});
  CAF_CHECK_EQUAL(to_string(s.run().state), std::string{"paused"});
  CAF_CHECK(contains(reason_of(s, "t1"), "direct evil"));
  // What the commit changed is left in the checkout to look at.
  CAF_CHECK(contains(read_file(s.root / "README.md"), "EVIL"));
  auto evil = commit_with_subject(s, "direct evil");
  CAF_REQUIRE(!evil.empty());
  CAF_CHECK(reachable(s, evil));
}

CAF_TEST(a person s commit on main while a task works is kept) {
  scenario s;
  auto started = s.dir.path() / "started";
  auto go = s.dir.path() / "go";
  s.tasks("- [ ] waits\n  - files: w.txt\n  - run: touch " + started.string()
          + " && " + until("[ -f " + go.string() + " ]")
          + " && echo w > w.txt\n");
  auto driver = start_taskforce(s, {"run", "TASKS.md", "--plain"});
  CAF_REQUIRE(eventually([&] {
    return fs::exists(started);
  }));
  // The person commits on main in another terminal meanwhile.
  s.write("mine.txt", "mine\n");
  git_ok(s.root, {"add", "mine.txt"});
  git_ok(s.root, {"commit", "-q", "-m", "person's own"});
  auto mine = rev(s, "main");
  std::ofstream{go};
  auto st = proc::wait_for(driver.pid);
  CAF_CHECK_EQUAL(st.code, 0);
  if (st.code != 0)
    CAF_MESSAGE(read_file(s.dir.path() / "background.log"));
  CAF_CHECK_EQUAL(
    run_git(s.root, {"merge-base", "--is-ancestor", mine, "main"}).status, 0);
  CAF_CHECK_EQUAL(on_main(s, "mine.txt"), "mine\n");
  CAF_CHECK_EQUAL(on_main(s, "w.txt"), "w\n");
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
}

CAF_TEST(status flags a merge the base no longer has) {
  scenario s;
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt\n");
  CAF_REQUIRE_EQUAL(s.tf({"run", "TASKS.md"}).code, 0);
  auto merge = s.task("t1").merge_commit.value_or("");
  CAF_REQUIRE(!merge.empty());
  CAF_CHECK_EQUAL(task_json(s, "t1").value("merge_on_base", false), true);
  // The person drops the merge.
  git_ok(s.root, {"reset", "-q", "--hard", "HEAD~1"});
  auto human = s.tf({"status"});
  CAF_CHECK(contains(human.output,
                     "merged " + merge.substr(0, 10) + " (no longer on main)"));
  auto t = task_json(s, "t1");
  CAF_CHECK_EQUAL(t.value("merge_on_base", true), false);
  auto logs = s.tf({"logs", "t1"});
  CAF_CHECK(contains(logs.output, "(no longer on main)"));
  auto list = s.tf({"list"});
  CAF_CHECK(contains(list.output, "1 merge no longer on main"));
}

// -- nothing changes in the main checkout while a task works elsewhere --------

CAF_TEST(a gate that writes into the main checkout fails the attempt) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt\n"
          "  - verify: echo EVIL >> \"$TASKFORCE_REPO/README.md\";"
          " mkdir -p \"$TASKFORCE_REPO/src\";"
          " echo new > \"$TASKFORCE_REPO/src/planted.txt\"\n");
  auto before = rev(s, "main");
  auto r = s.tf({"run", "TASKS.md", "--plain"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(rev(s, "main"), before);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"failed"});
  auto reason = reason_of(s, "t1");
  CAF_CHECK(contains(reason, "main checkout"));
  CAF_CHECK(contains(reason, "README.md"));
  CAF_CHECK(contains(reason, "src/planted.txt"));
  // Nothing is removed: the files are there to look at.
  CAF_CHECK(fs::exists(s.root / "src/planted.txt"));
}

CAF_TEST(a worker that writes into the main checkout fails the attempt) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks(
    "- [ ] A\n  - files: a.txt\n"
    "  - run: echo a > a.txt && echo stray > \"$TASKFORCE_REPO/stray.txt\"\n");
  auto r = s.tf({"run", "TASKS.md", "--plain"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"failed"});
  CAF_CHECK(contains(reason_of(s, "t1"), "stray.txt"));
  CAF_CHECK(run_git(s.root, {"cat-file", "-e", "main:a.txt"}).status != 0);
}

CAF_TEST(a worker that switches the main checkout to a branch fails) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks("- [ ] A\n  - files: a.txt\n"
          "  - run: git -C \"$TASKFORCE_REPO\" checkout -q -b elsewhere"
          " && echo a > a.txt\n");
  auto before = rev(s, "main");
  auto r = s.tf({"run", "TASKS.md", "--plain"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(rev(s, "main"), before);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"failed"});
  CAF_CHECK(contains(reason_of(s, "t1"),
                     "HEAD of the main checkout left branch main for branch "
                     "elsewhere"));
}

CAF_TEST(a person s edit while no task works is not held against one) {
  scenario s;
  s.set_config(R"({"run": {"askUserOnBlocked": true}})");
  auto go = s.dir.path() / "go";
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: if [ -f " + go.string()
          + " ]; then echo a > a.txt; else echo '[task:blocked] may I?'; fi\n");
  auto driver = start_taskforce(s, {"run", "TASKS.md", "--plain"});
  CAF_REQUIRE(eventually([&] {
    return fs::exists(s.root / ".taskforce" / "ledger.sqlite")
           && to_string(s.task("t1").state) == std::string{"blocked"};
  }));
  // Nothing of the run works now: the person writes in the main checkout.
  s.write("notes.txt", "mine\n");
  std::ofstream{go};
  auto answer = s.tf({"answer", "t1", "yes"});
  CAF_CHECK_EQUAL(answer.code, 0);
  auto st = proc::wait_for(driver.pid);
  CAF_CHECK_EQUAL(st.code, 0);
  if (st.code != 0)
    CAF_MESSAGE(read_file(s.dir.path() / "background.log"));
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
  CAF_CHECK_EQUAL(read_file(s.root / "notes.txt"), "mine\n");
  CAF_CHECK_EQUAL(on_main(s, "a.txt"), "a\n");
}
