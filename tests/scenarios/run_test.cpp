// `taskforce run` in temporary git repositories: real libgit2 worktrees,
// real worker and gate processes, the real ledger. One test per rule.
#define CAF_SUITE scenarios.run
#include <caf/test/unit_test.hpp>

#include <thread>

#include "scenarios/scenario.hpp"

using namespace taskforce;
using namespace taskforce::test;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string state_of(const scenario& s, const std::string& id) {
  return to_string(s.task(id).state);
}

} // namespace

CAF_TEST(a diamond of dependencies merges in order) {
  scenario s;
  s.tasks("- [ ] Base\n  - files: base.txt\n  - run: echo base > base.txt\n"
          "- [ ] Left\n  - files: left.txt\n  - deps: 1\n"
          "  - run: cat base.txt > left.txt && echo left >> left.txt\n"
          "- [ ] Right\n  - files: right.txt\n  - deps: 1\n"
          "  - run: cat base.txt > right.txt && echo right >> right.txt\n"
          "- [ ] Join\n  - files: join.txt\n  - deps: 2, 3\n"
          "  - run: cat left.txt right.txt > join.txt\n"
          "  - verify: grep -q left join.txt && grep -q right join.txt\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  for (auto id : {"t1", "t2", "t3", "t4"})
    CAF_CHECK_EQUAL(state_of(s, id), "done");
  auto m1 = s.task("t1").merge_commit.value_or("");
  auto m2 = s.task("t2").merge_commit.value_or("");
  auto m3 = s.task("t3").merge_commit.value_or("");
  auto m4 = s.task("t4").merge_commit.value_or("");
  auto ancestor = [&](const std::string& a, const std::string& b) {
    return run_git(s.root, {"merge-base", "--is-ancestor", a, b}).status == 0;
  };
  CAF_CHECK(ancestor(m1, m2) && ancestor(m1, m3));
  CAF_CHECK(ancestor(m2, m4) && ancestor(m3, m4));
  CAF_CHECK(m4 != m2 && m4 != m3);
  // Every task came in as a merge commit on the first-parent line.
  auto merges = lines_of(git_ok(
    s.root, {"log", "--first-parent", "--merges", "--format=%H", "main"}));
  CAF_CHECK_EQUAL(merges.size(), 4u);
  CAF_CHECK_EQUAL(read_file(s.root / "join.txt"), "base\nleft\nbase\nright\n");
  // Merged worktrees and branches are gone.
  CAF_CHECK_EQUAL(lines_of(git_ok(s.root, {"worktree", "list"})).size(), 1u);
  CAF_CHECK_EQUAL(git_ok(s.root, {"branch", "--list", "taskforce/*"}), "");
  CAF_CHECK_EQUAL(git_ok(s.root, {"status", "--porcelain"}), "");
}

CAF_TEST(a command written as a block runs whole) {
  scenario s;
  s.tasks("- [ ] Script\n  - files: out/\n"
          "  - run: |\n"
          "      mkdir -p out\n"
          "      for n in 1 2 3; do\n"
          "        echo \"line $n\" >> out/lines.txt\n"
          "      done\n"
          "  - verify: |\n"
          "      test \"$(wc -l < out/lines.txt)\" -eq 3\n"
          "      grep -q 'line 3' out/lines.txt\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "done");
  CAF_CHECK_EQUAL(read_file(s.root / "out/lines.txt"),
                  "line 1\nline 2\nline 3\n");
}

CAF_TEST(two tasks sharing a file never overlap) {
  scenario s;
  s.tasks("- [ ] One\n  - files: shared.txt, one.txt\n"
          "  - run: sleep 0.4 && echo one > one.txt && echo 1 >> shared.txt\n"
          "- [ ] Two\n  - files: shared.txt, two.txt\n"
          "  - run: sleep 0.4 && echo two > two.txt && echo 2 >> shared.txt\n"
          "- [ ] Free\n  - files: free.txt\n"
          "  - run: sleep 0.4 && echo free > free.txt\n");
  auto r = s.tf({"run", "TASKS.md", "--max-concurrency", "3"});
  CAF_REQUIRE_EQUAL(r.code, 0);
  auto db = s.ledger();
  auto run = db.latest_run();
  auto a1 = db.attempts(run->id, "t1").at(0);
  auto a2 = db.attempts(run->id, "t2").at(0);
  auto a3 = db.attempts(run->id, "t3").at(0);
  // t2 starts only after t1's attempt ended (and t1 merged).
  bool apart = a2.started_ms >= a1.ended_ms.value_or(INT64_MAX)
               || a1.started_ms >= a2.ended_ms.value_or(INT64_MAX);
  CAF_CHECK(apart);
  // The free task ran beside the first one.
  CAF_CHECK(a3.started_ms < a1.ended_ms.value_or(0));
  CAF_CHECK_EQUAL(read_file(s.root / "shared.txt"), "base\n1\n2\n");
}

CAF_TEST(a failing gate pauses the run and resume after fixing finishes it) {
  scenario s;
  auto flag = (s.dir.path() / "fixed.flag").string();
  s.tasks("- [ ] Gated\n  - files: g.txt\n  - run: echo g > g.txt\n"
          "  - verify: test -f "
          + flag
          + "\n"
            "- [ ] After\n  - files: after.txt\n  - deps: 1\n"
            "  - run: echo after > after.txt\n");
  s.set_config(R"({"run": {"maxAttempts": 1, "maxRepairs": 1}})");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK(contains(r.output, "taskforce resume"));
  CAF_CHECK_EQUAL(to_string(s.run().state), std::string{"paused"});
  CAF_CHECK_EQUAL(state_of(s, "t1"), "failed");
  CAF_CHECK_EQUAL(state_of(s, "t2"), "pending");
  // The failed task's worktree is kept.
  CAF_CHECK(std::filesystem::exists(s.task("t1").worktree.value_or("/none")));
  { std::ofstream{flag} << "ok\n"; }
  auto again = s.tf({"resume"});
  CAF_CHECK_EQUAL(again.code, 0);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "done");
  CAF_CHECK_EQUAL(state_of(s, "t2"), "done");
  CAF_CHECK_EQUAL(to_string(s.run().state), std::string{"completed"});
  CAF_CHECK_EQUAL(s.tf({"resume"}).code, 0);
}

CAF_TEST(repair does not count an attempt) {
  scenario s;
  auto script = s.script(R"({"tasks": {"t1": [
      {"write": {"f.txt": "bad\n"}, "marker": "done"},
      {"write": {"f.txt": "good\n"}, "marker": "done"}]}})");
  s.set_config(R"({"run": {"worker": "scripted", "maxAttempts": 1,
                  "scriptFile": ")"
               + script + R"("}})");
  s.tasks("- [ ] Fix me\n  - files: f.txt\n  - verify: grep -q good f.txt\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  auto t = s.task("t1");
  CAF_CHECK_EQUAL(to_string(t.state), std::string{"done"});
  CAF_CHECK_EQUAL(t.attempts, 1);
  auto db = s.ledger();
  auto attempts = db.attempts(s.run().id, "t1");
  CAF_REQUIRE_EQUAL(attempts.size(), 1u);
  CAF_CHECK_EQUAL(attempts[0].repairs, 1);
  CAF_CHECK_EQUAL(read_file(s.root / "f.txt"), "good\n");
}

CAF_TEST(a timeout kills a worker that ignores SIGTERM and its children) {
  scenario s;
  auto script = s.script(R"({"tasks": {"t1": [
      {"hang": true, "hang_children": 2}]}})");
  s.set_config(R"({"run": {"worker": "scripted", "maxAttempts": 1,
                  "scriptFile": ")"
               + script + R"("}})");
  s.tasks("- [ ] Hang\n  - files: h.txt\n  - timeout: 1s\n");
  auto start = std::chrono::steady_clock::now();
  auto r = s.tf({"run", "TASKS.md"});
  auto took = std::chrono::steady_clock::now() - start;
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "failed");
  CAF_CHECK(contains(s.task("t1").reason.value_or(""), "timed out"));
  // SIGKILL at most 5 s after SIGTERM.
  CAF_CHECK(took < std::chrono::seconds(9));
  CAF_CHECK(scenario::processes_mentioning(script).empty());
}

CAF_TEST(an out of scope write fails the attempt) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks("- [ ] Sneaky\n  - files: src/*.txt\n"
          "  - run: mkdir -p src && echo a > src/a.txt && echo x > extra.txt"
          " && echo y > shared.txt\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  auto t = s.task("t1");
  CAF_CHECK_EQUAL(to_string(t.state), std::string{"failed"});
  auto reason = t.reason.value_or("");
  CAF_CHECK(contains(reason, "extra.txt"));
  CAF_CHECK(contains(reason, "shared.txt"));
  CAF_CHECK(!contains(reason, "src/a.txt"));
  CAF_CHECK(!std::filesystem::exists(s.root / "extra.txt"));
}

CAF_TEST(a merge conflict pauses the run with the branch kept) {
  scenario s;
  // The worker edits shared.txt; meanwhile a person commits another edit
  // of it on main.
  auto started = s.dir.path() / "started";
  auto go = s.dir.path() / "go";
  s.tasks("- [ ] Edit shared\n  - files: shared.txt\n"
          "  - run: echo task > shared.txt && touch "
          + started.string() + " && n=0; until [ -f " + go.string()
          + " ]; do n=$((n+1)); [ $n -lt 600 ] || exit 9; sleep 0.05; done\n");
  auto driver = start_taskforce(s, {"run", "TASKS.md"});
  CAF_REQUIRE(eventually([&] {
    return std::filesystem::exists(started);
  }));
  s.write("shared.txt", "main\n");
  git_ok(s.root, {"commit", "-qam", "edit on main"});
  std::ofstream{go};
  CAF_CHECK_EQUAL(proc::wait_for(driver.pid).code, 1);
  auto t = s.task("t1");
  CAF_CHECK_EQUAL(to_string(t.state), std::string{"conflict"});
  CAF_CHECK_EQUAL(t.conflict_paths, std::vector<std::string>{"shared.txt"});
  auto branch = t.branch.value_or("");
  CAF_CHECK(!git_ok(s.root, {"branch", "--list", branch}).empty());
  CAF_CHECK(std::filesystem::exists(t.worktree.value_or("/none")));
  CAF_CHECK_EQUAL(to_string(s.run().state), std::string{"paused"});
  auto logs = s.tf({"logs", "t1"});
  CAF_CHECK_EQUAL(logs.code, 0);
  CAF_CHECK(contains(logs.output, "shared.txt"));
  CAF_CHECK(contains(logs.output, branch));
  // The main checkout is untouched by the failed merge.
  CAF_CHECK_EQUAL(read_file(s.root / "shared.txt"), "main\n");
  CAF_CHECK_EQUAL(git_ok(s.root, {"status", "--porcelain"}), "");
  // Resolved by hand: resume notices the merge and finishes.
  run_git(s.root, {"merge", "--no-ff", "-q", "-X", "theirs", branch, "-m",
                   "merge by hand"});
  auto again = s.tf({"resume"});
  CAF_CHECK_EQUAL(again.code, 0);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "done");
}

CAF_TEST(continueOnError skips dependents and finishes independent work) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1, "continueOnError": true}})");
  s.tasks("- [ ] Broken\n  - files: b.txt\n  - run: exit 3\n"
          "- [ ] Needs broken\n  - files: n.txt\n  - deps: 1\n"
          "  - run: echo n > n.txt\n"
          "- [ ] Needs needs\n  - files: m.txt\n  - deps: 2\n"
          "  - run: echo m > m.txt\n"
          "- [ ] Independent\n  - files: i.txt\n  - run: echo i > i.txt\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "failed");
  CAF_CHECK_EQUAL(state_of(s, "t2"), "skipped");
  CAF_CHECK_EQUAL(state_of(s, "t3"), "skipped");
  CAF_CHECK_EQUAL(state_of(s, "t4"), "done");
  CAF_CHECK_EQUAL(to_string(s.run().state), std::string{"completed"});
}

CAF_TEST(a dirty main checkout is refused and nothing is created) {
  scenario s;
  s.tasks("- [ ] Any\n  - files: a.txt\n  - run: echo a > a.txt\n");
  s.write("README.md", "edited\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 2);
  CAF_CHECK(contains(r.output, "README.md"));
  CAF_CHECK(!std::filesystem::exists(s.root / ".taskforce"));
  CAF_CHECK_EQUAL(read_file(s.root / "README.md"), "edited\n");
}

CAF_TEST(run of another file is refused while a run is unfinished) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks("- [ ] Fails\n  - files: a.txt\n  - run: exit 1\n");
  s.tasks("- [ ] Other\n  - files: o.txt\n  - run: echo o > o.txt\n",
          "OTHER.md");
  CAF_CHECK_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  auto r = s.tf({"run", "OTHER.md"});
  CAF_CHECK_EQUAL(r.code, 2);
  CAF_CHECK(contains(r.output, "TASKS.md"));
  CAF_CHECK_EQUAL(s.tf({"abort"}).code, 0);
  CAF_CHECK_EQUAL(s.tf({"run", "OTHER.md"}).code, 0);
}

CAF_TEST(resume without any run exits 2) {
  scenario s;
  CAF_CHECK_EQUAL(s.tf({"resume"}).code, 2);
}

CAF_TEST(the agent backend runs a preset with the composed prompt) {
  scenario s;
  auto fake = std::string{TASKFORCE_SOURCE_DIR} + "/tests/data/fake-agent.sh";
  auto preset = s.dir.write("fake.json", R"({"argv": ["sh", ")" + fake
                                           + R"(", "-p", "{prompt}"]})");
  s.set_config(R"({"run": {"worker": "agent", "agentPreset": ")"
               + preset.string() + R"("}})");
  s.tasks("- [ ] Write the docs\n  - files: docs/a.md\n"
          "  Explain the cache.\n"
          "- [ ] Block me\n  - files: b.md\n  FAKE-BLOCK please\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "done");
  CAF_CHECK(std::filesystem::exists(s.root / "docs/a.md"));
  CAF_CHECK_EQUAL(state_of(s, "t2"), "blocked");
  CAF_CHECK(contains(s.task("t2").reason.value_or(""), "block"));
}
