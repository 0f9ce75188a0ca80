// Running a task file again, and what runs teach the next ones: tasks an
// earlier run merged are not paid for twice, and files that changed
// together become conflicts.
#define CAF_SUITE scenarios.rerun
#include <caf/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "scenarios/scenario.hpp"

using namespace taskforce;
using namespace taskforce::test;
using json = nlohmann::json;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const char* two_tasks = "- [ ] One\n"
                        "  - files: one.txt\n"
                        "  - run: echo one >> one.txt\n"
                        "- [ ] Two\n"
                        "  - files: two.txt\n"
                        "  - run: echo two >> two.txt\n";

} // namespace

CAF_TEST(a completed file run again runs nothing and says so) {
  scenario s;
  s.tasks(two_tasks);
  CAF_REQUIRE_EQUAL(s.tf({"run", "TASKS.md"}).code, 0);
  auto first = s.run();
  auto head = git_ok(s.root, {"rev-parse", "main"});
  auto again = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(again.code, 0);
  CAF_CHECK(contains(again.output, "TASKS.md: already merged, unchanged "
                                   "since: t1, t2 (run "
                                     + first.id + "); nothing left to run"));
  CAF_CHECK_EQUAL(s.ledger().list_runs().size(), 1u);
  CAF_CHECK_EQUAL(git_ok(s.root, {"rev-parse", "main"}), head);
  CAF_CHECK_EQUAL(read_file(s.root / "one.txt"), "one\n");
}

CAF_TEST(a changed or new task runs again and the others are carried) {
  scenario s;
  s.tasks(two_tasks);
  CAF_REQUIRE_EQUAL(s.tf({"run", "TASKS.md"}).code, 0);
  auto first = s.run();
  auto t1_merge = s.task("t1").merge_commit.value_or("");
  // t2's command changes and a third task joins; t1 stays as it was
  // (moving it in the file changes nothing).
  s.tasks("# Tasks, reworded intro\n"
          "\n"
          "- [ ] One\n"
          "  - files: one.txt\n"
          "  - run: echo one >> one.txt\n"
          "- [ ] Two\n"
          "  - files: two.txt\n"
          "  - run: echo TWO >> two.txt\n"
          "- [ ] Three\n"
          "  - files: three.txt\n"
          "  - run: echo three > three.txt\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK(contains(r.output, "already merged, unchanged since: t1 (run "
                                 + first.id + "); the other tasks run now"));
  auto second = s.run();
  CAF_CHECK_NOT_EQUAL(second.id, first.id);
  auto t1 = s.task("t1");
  CAF_CHECK_EQUAL(std::string{to_string(t1.state)}, "done");
  CAF_CHECK_EQUAL(t1.reason.value_or(""), "already merged in run " + first.id);
  CAF_CHECK_EQUAL(t1.merge_commit.value_or(""), t1_merge);
  CAF_CHECK_EQUAL(t1.attempts, 0);
  CAF_CHECK_EQUAL(s.task("t2").attempts, 1);
  CAF_CHECK_EQUAL(s.task("t3").attempts, 1);
  CAF_CHECK_EQUAL(read_file(s.root / "one.txt"), "one\n");
  CAF_CHECK_EQUAL(read_file(s.root / "two.txt"), "two\nTWO\n");
  // status shows the carried task as done, with the run that merged it.
  auto st = s.tf({"status", "--json"});
  auto j = json::parse(st.output);
  CAF_CHECK_EQUAL(j["tasks"][0]["state"], "done");
  CAF_CHECK_EQUAL(j["tasks"][0]["reason"], "already merged in run " + first.id);
  CAF_CHECK_EQUAL(j["tasks"][0]["merge_commit"], t1_merge);
  // A third time: every task is known, from the run that merged it.
  auto third = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(third.code, 0);
  CAF_CHECK(contains(third.output, "t1 (run " + first.id + "); t2, t3 (run "
                                     + second.id + "); nothing left to run"));
  CAF_CHECK_EQUAL(s.ledger().list_runs().size(), 2u);
}

CAF_TEST(a task whose merge the base lost runs again) {
  scenario s;
  s.tasks(two_tasks);
  auto before = git_ok(s.root, {"rev-parse", "main"});
  CAF_REQUIRE_EQUAL(s.tf({"run", "TASKS.md"}).code, 0);
  // Someone resets main to before the run: the work is gone from it.
  git_ok(s.root, {"reset", "-q", "--hard", lines_of(before).at(0)});
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK(!contains(r.output, "already merged"));
  CAF_CHECK_EQUAL(s.task("t1").attempts, 1);
  CAF_CHECK_EQUAL(read_file(s.root / "one.txt"), "one\n");
}

CAF_TEST(files that changed together become a conflict in plan and run) {
  scenario s;
  s.set_config(R"({"run": {"coChangeLearning": true, "coChangeMinCount": 1}})");
  s.tasks("- [ ] Pair\n"
          "  - files: x.txt, y.txt\n"
          "  - run: echo x > x.txt && echo y > y.txt\n",
          "LEARN.md");
  CAF_REQUIRE_EQUAL(s.tf({"run", "LEARN.md"}).code, 0);
  using pairs = std::vector<std::pair<std::string, std::string>>;
  CAF_CHECK_EQUAL(s.ledger().co_change_pairs(1), (pairs{{"x.txt", "y.txt"}}));
  s.tasks("- [ ] P\n"
          "  - files: x.txt\n"
          "  - run: sleep 0.4 && echo p >> x.txt\n"
          "- [ ] Q\n"
          "  - files: y.txt\n"
          "  - run: sleep 0.4 && echo q >> y.txt\n");
  auto p = s.tf({"plan", "TASKS.md", "--json"});
  CAF_CHECK_EQUAL(p.code, 0);
  auto plan = json::parse(p.output.substr(p.output.find('{')));
  CAF_CHECK_EQUAL(plan["conflicts"], json::parse(R"([["t1", "t2"]])"));
  auto human = s.tf({"plan", "TASKS.md"});
  CAF_CHECK(contains(human.output, "conflicts (never at the same time):\n"
                                   "  none\n"));
  CAF_CHECK(contains(human.output, "learned conflicts (their files changed "
                                   "together in earlier tasks):\n  t1: t2\n"));
  // The count is a threshold; learning off adds nothing.
  s.set_config(R"({"run": {"coChangeLearning": true}})");
  auto two = json::parse(s.tf({"plan", "TASKS.md", "--json"}).output);
  CAF_CHECK(two["conflicts"].empty());
  s.set_config(
    R"({"run": {"coChangeLearning": false, "coChangeMinCount": 1}})");
  auto off = json::parse(s.tf({"plan", "TASKS.md", "--json"}).output);
  CAF_CHECK(off["conflicts"].empty());
  // The run keeps them apart.
  s.set_config(R"({"run": {"coChangeLearning": true, "coChangeMinCount": 1}})");
  CAF_REQUIRE_EQUAL(s.tf({"run", "TASKS.md", "--max-concurrency", "2"}).code,
                    0);
  auto db = s.ledger();
  auto run = db.latest_run();
  auto a1 = db.attempts(run->id, "t1").at(0);
  auto a2 = db.attempts(run->id, "t2").at(0);
  bool apart = a2.started_ms >= a1.ended_ms.value_or(INT64_MAX)
               || a1.started_ms >= a2.ended_ms.value_or(INT64_MAX);
  CAF_CHECK(apart);
  // P and Q each changed one file: the pair was counted once, by Pair.
  CAF_CHECK_EQUAL(db.co_change_pairs(2), pairs{});
}

CAF_TEST(a task that changed nothing learns nothing from the base it found) {
  scenario s;
  s.set_config(R"({"run": {"coChangeLearning": true}})");
  // Check follows Pair and changes nothing: its recorded commit is Pair's
  // merge, which must not count the pair a second time.
  s.tasks("- [ ] Pair\n"
          "  - files: x.txt, y.txt\n"
          "  - run: echo x > x.txt && echo y > y.txt\n"
          "- [ ] Check\n"
          "  - files: z.txt\n"
          "  - deps: 1\n"
          "  - run: true\n");
  CAF_REQUIRE_EQUAL(s.tf({"run", "TASKS.md"}).code, 0);
  CAF_REQUIRE_EQUAL(s.task("t2").reason.value_or(""), "no changes");
  // Learning happens when the next run opens.
  s.tasks("- [ ] Other\n  - files: w.txt\n  - run: echo w > w.txt\n",
          "OTHER.md");
  CAF_REQUIRE_EQUAL(s.tf({"run", "OTHER.md"}).code, 0);
  using pairs = std::vector<std::pair<std::string, std::string>>;
  CAF_CHECK_EQUAL(s.ledger().co_change_pairs(1), (pairs{{"x.txt", "y.txt"}}));
  CAF_CHECK(s.ledger().co_change_pairs(2).empty());
}

CAF_TEST(learning counts a task once even when runs open again) {
  scenario s;
  s.set_config(R"({"run": {"coChangeLearning": true}})");
  s.tasks("- [ ] Pair\n"
          "  - files: x.txt, y.txt\n"
          "  - run: echo x >> x.txt && echo y >> y.txt\n",
          "LEARN.md");
  CAF_REQUIRE_EQUAL(s.tf({"run", "LEARN.md"}).code, 0);
  // Opening runs again (a rerun with nothing left, another file) counts
  // nothing twice.
  CAF_REQUIRE_EQUAL(s.tf({"run", "LEARN.md"}).code, 0);
  s.tasks("- [ ] Other\n  - files: z.txt\n  - run: echo z > z.txt\n");
  CAF_REQUIRE_EQUAL(s.tf({"run", "TASKS.md"}).code, 0);
  using pairs = std::vector<std::pair<std::string, std::string>>;
  CAF_CHECK_EQUAL(s.ledger().co_change_pairs(1), (pairs{{"x.txt", "y.txt"}}));
  CAF_CHECK(s.ledger().co_change_pairs(2).empty());
  // A changed Pair runs again: now seen twice, the default count.
  s.tasks("- [ ] Pair\n"
          "  - files: x.txt, y.txt\n"
          "  - run: echo x2 >> x.txt && echo y2 >> y.txt\n",
          "LEARN.md");
  CAF_REQUIRE_EQUAL(s.tf({"run", "LEARN.md"}).code, 0);
  CAF_CHECK_EQUAL(s.ledger().co_change_pairs(2), (pairs{{"x.txt", "y.txt"}}));
}
