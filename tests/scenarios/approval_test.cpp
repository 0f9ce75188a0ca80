// Work that waits for a person: a risky task is never merged before it is
// approved, and work kept for review that a person merged by hand is
// recognised at the next resume. Real binary, real repositories.
#define CAF_SUITE scenarios.approval
#include <caf/test/unit_test.hpp>

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

CAF_TEST(a risky task waits for approval and its work never reaches main) {
  scenario s;
  s.set_config(R"({"run": {"approvalRisks": ["high"]}})");
  s.tasks(
    "- [ ] Risky\n  - files: risky.txt\n  - risk: high\n"
    "  - run: echo risky > risky.txt\n"
    "- [ ] Plain\n  - files: plain.txt\n  - run: echo plain > plain.txt\n");
  auto before = s.first_parent_subjects().size();
  auto r = s.tf({"run", "TASKS.md", "--plain"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK(contains(r.output, "awaiting approval: t1"));
  CAF_CHECK_EQUAL(state_of(s, "t1"), "review");
  CAF_CHECK_EQUAL(state_of(s, "t2"), "done");
  CAF_CHECK(!std::filesystem::exists(s.root / "risky.txt"));
  CAF_CHECK(std::filesystem::exists(s.root / "plain.txt"));
  // Only the plain task's merge reached main.
  CAF_CHECK_EQUAL(s.first_parent_subjects().size(), before + 1);
  CAF_CHECK_EQUAL(to_string(s.run().state), std::string{"paused"});
  CAF_CHECK(contains(s.run().reason.value_or(""), "awaiting approval: t1"));
  // A resume without an approval does not merge it either.
  auto again = s.tf({"resume", "--plain"});
  CAF_CHECK_EQUAL(again.code, 1);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "review");
  CAF_CHECK(!std::filesystem::exists(s.root / "risky.txt"));
}

CAF_TEST(work kept for review and merged by hand is done at the next resume) {
  scenario s;
  s.set_config(R"({"run": {"autoMerge": false}})");
  s.tasks(
    "- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt\n"
    "- [ ] B\n  - files: b.txt\n  - deps: 1\n  - run: cat a.txt > b.txt\n");
  CAF_CHECK_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  CAF_REQUIRE_EQUAL(state_of(s, "t1"), "review");
  auto t = s.task("t1");
  auto wt = t.worktree.value_or("/none");
  auto branch = t.branch.value_or("none");
  // A resume before anyone merged keeps it waiting.
  CAF_CHECK_EQUAL(s.tf({"resume"}).code, 1);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "review");
  // The person reviews, commits and merges the branch by hand.
  git_ok(wt, {"add", "-A"});
  git_ok(wt, {"commit", "-q", "-m", "reviewed a"});
  git_ok(s.root, {"merge", "-q", "--no-ff", "-m", "merge a", branch});
  auto r = s.tf({"resume", "--plain"});
  CAF_CHECK_EQUAL(r.code, 1); // b is kept for review in its turn
  CAF_CHECK_EQUAL(state_of(s, "t1"), "done");
  CAF_CHECK_EQUAL(s.task("t1").reason.value_or(""), "merged by hand");
  CAF_CHECK_EQUAL(state_of(s, "t2"), "review");
  // b started from the base with a's work in it.
  auto b = s.task("t2");
  CAF_CHECK_EQUAL(
    read_file(std::filesystem::path{b.worktree.value_or("/none")} / "b.txt"),
    "a\n");
}
