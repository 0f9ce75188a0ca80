// The checks before anything starts: `run` refuses a file whose mistakes
// would only surface mid-run (exit 2, FILE:LINE, nothing created), and
// `plan` shows the same places.
#define CAF_SUITE scenarios.preflight
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

/// Nothing of a run exists: no task branch, no extra worktree.
void check_no_run_traces(const scenario& s) {
  CAF_CHECK_EQUAL(git_ok(s.root, {"branch", "--list", "taskforce/*"}), "");
  CAF_CHECK_EQUAL(lines_of(git_ok(s.root, {"worktree", "list"})).size(), 1u);
}

} // namespace

CAF_TEST(an unknown preset stops the run before anything is created) {
  scenario s;
  s.tasks("- [ ] Cache\n"
          "  - files: cache.txt\n"
          "  - agent: claud\n"
          "- [ ] Docs\n"
          "  - files: docs.txt\n"
          "  - run: echo docs > docs.txt\n");
  auto head = git_ok(s.root, {"rev-parse", "main"});
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 2);
  CAF_CHECK(contains(r.output, "TASKS.md:3: agent: unknown agent preset "
                               "\"claud\" (did you mean \"claude\"?)"));
  CAF_CHECK(!fs::exists(s.root / ".taskforce"));
  CAF_CHECK(!fs::exists(s.root / "docs.txt"));
  CAF_CHECK_EQUAL(git_ok(s.root, {"rev-parse", "main"}), head);
  check_no_run_traces(s);
  // plan says the same, as an error.
  auto p = s.tf({"plan", "TASKS.md"});
  CAF_CHECK_EQUAL(p.code, 2);
  CAF_CHECK(contains(p.output, "TASKS.md:3: agent: unknown agent preset"));
}

CAF_TEST(a shell task without run stops the run but plan only warns) {
  scenario s;
  // A finished run first: the ledger exists, so refusing must add nothing
  // to it either.
  s.tasks("- [ ] Before\n  - files: before.txt\n"
          "  - run: echo before > before.txt\n",
          "BEFORE.md");
  CAF_REQUIRE_EQUAL(s.tf({"run", "BEFORE.md"}).code, 0);
  s.tasks("- [ ] Fine\n"
          "  - files: a.txt\n"
          "  - run: echo a > a.txt\n"
          "- [ ] Forgotten\n"
          "  - files: b.txt\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 2);
  CAF_CHECK(contains(r.output, "TASKS.md:4: task t2 has no run: command for "
                               "the shell worker"));
  CAF_CHECK_EQUAL(s.ledger().list_runs().size(), 1u);
  CAF_CHECK(!fs::exists(s.root / "a.txt"));
  check_no_run_traces(s);
  auto p = s.tf({"plan", "TASKS.md"});
  CAF_CHECK_EQUAL(p.code, 0);
  CAF_CHECK(contains(p.output, "TASKS.md:4: warning: task t2 has no run: "
                               "command"));
  // Given to an agent instead, the task needs no run: line.
  s.set_config(R"({"run": {"worker": "agent", "agentPreset": "codex"}})");
  auto agent = s.tf({"plan", "TASKS.md"});
  CAF_CHECK(!contains(agent.output, "has no run: command"));
}

CAF_TEST(an agent program that is not installed stops the run) {
  scenario s;
  auto preset = s.dir.write(
    "ghost.json", R"({"argv": ["taskforce-no-such-agent", "-p", "{prompt}"]})");
  s.tasks("- [ ] Ghost work\n"
          "  - files: g.txt\n"
          "  - agent: "
          + preset.string() + "\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 2);
  CAF_CHECK(contains(r.output, "TASKS.md:3: agent preset \"" + preset.string()
                                 + "\": the program "
                                   "\"taskforce-no-such-agent\" is not on "
                                   "PATH (it would run t1)"));
  CAF_CHECK(!fs::exists(s.root / ".taskforce"));
  check_no_run_traces(s);
  // The file may run on another machine: plan warns and exits 0.
  auto p = s.tf({"plan", "TASKS.md", "--json"});
  CAF_CHECK_EQUAL(p.code, 0);
  CAF_CHECK(contains(p.output, "TASKS.md:3: warning: agent preset"));
}

CAF_TEST(models not in provider form are refused from the file and config) {
  scenario s;
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: true\n  - model: gpt5\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 2);
  CAF_CHECK(contains(r.output, "TASKS.md:4: model: \"gpt5\" is not"));
  CAF_CHECK_EQUAL(s.tf({"plan", "TASKS.md"}).code, 2);
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: true\n");
  s.set_config(R"({"run": {"roleModels": {"claude": "sonnet"}}})");
  auto c = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(c.code, 2);
  CAF_CHECK(contains(c.output, "run.roleModels"));
  CAF_CHECK(!fs::exists(s.root / ".taskforce"));
}

CAF_TEST(a headings file run as a checklist runs none of its criteria) {
  scenario s;
  s.tasks("# Plan\n"
          "\n"
          "### 1. [ ] Add the cache\n"
          "**Files:** cache.txt\n"
          "**Run:** echo cache > cache.txt\n"
          "**Acceptance criteria:**\n"
          "- [ ] a hit avoids the slow path\n"
          "  - run: echo criterion > criterion.txt\n");
  auto p = s.tf({"plan", "TASKS.md"});
  CAF_CHECK(contains(p.output, "TASKS.md:3: warning: \"### 1. [ ] Add the "
                               "cache\" is a task of the headings format"));
  CAF_CHECK(contains(p.output, "--format headings"));
  CAF_CHECK(!contains(p.output, "a hit avoids"));
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 2);
  CAF_CHECK(contains(r.output, "--format headings"));
  CAF_CHECK(!fs::exists(s.root / "criterion.txt"));
  CAF_CHECK(!fs::exists(s.root / ".taskforce"));
  // Read as what it is, it plans and runs its one task.
  auto h = s.tf({"plan", "TASKS.md", "--format", "headings", "--json"});
  CAF_CHECK_EQUAL(h.code, 0);
  s.set_config(R"({"run": {"taskFormat": "headings"}})");
  CAF_CHECK_EQUAL(s.tf({"run", "TASKS.md"}).code, 0);
  CAF_CHECK_EQUAL(read_file(s.root / "cache.txt"), "cache\n");
}

CAF_TEST(resume refuses a run whose remaining tasks became unrunnable) {
  scenario s;
  s.tasks("- [ ] Fails\n"
          "  - files: f.txt\n"
          "  - run: exit 3\n");
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  auto first = s.tf({"run", "TASKS.md"});
  CAF_REQUIRE_EQUAL(first.code, 1);
  auto paused = s.run();
  // The file now hands the task to a preset that does not exist.
  s.tasks("- [ ] Fails\n"
          "  - files: f.txt\n"
          "  - agent: nosuchpreset\n");
  auto r = s.tf({"resume"});
  CAF_CHECK_EQUAL(r.code, 2);
  CAF_CHECK(contains(r.output, "TASKS.md:3: agent: unknown agent preset "
                               "\"nosuchpreset\""));
  auto after = s.run();
  CAF_CHECK_EQUAL(after.id, paused.id);
  CAF_CHECK(after.state == paused.state);
  CAF_CHECK_EQUAL(s.ledger().attempts(after.id, "t1").size(), 1u);
}

CAF_TEST(add refuses a file whose tasks the run could not start) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks("- [ ] Fails\n  - files: f.txt\n  - run: exit 3\n");
  CAF_REQUIRE_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  s.tasks("- [ ] Extra\n  - files: e.txt\n  - agent: claud\n", "EXTRA.md");
  auto r = s.tf({"add", "EXTRA.md"});
  CAF_CHECK_EQUAL(r.code, 2);
  CAF_CHECK(contains(r.output, "EXTRA.md:3: agent: unknown agent preset "
                               "\"claud\""));
  CAF_CHECK(s.ledger().added_files(s.run().id).empty());
  CAF_CHECK_EQUAL(s.task_rows().size(), 1u);
}

CAF_TEST(untracked files where tasks will write refuse the run named) {
  scenario s;
  s.tasks("- [ ] Notes\n  - files: notes/\n"
          "  - run: mkdir -p notes && echo task > notes/a.txt\n"
          "- [ ] Docs\n  - files: docs/*.md\n"
          "  - run: mkdir -p docs && echo d > docs/d.md\n"
          "- [ ] More docs\n  - files: docs/more.md\n"
          "  - run: mkdir -p docs && echo m > docs/more.md\n"
          "- [ ] Elsewhere\n  - files: e.txt\n  - run: echo e > e.txt\n");
  auto head = git_ok(s.root, {"rev-parse", "main"});
  // A file where a task needs a folder: its merge would have to replace
  // it, and a run used to complete with main checked out half.
  s.write("notes", "mine\n");
  s.write("docs/more.md", "draft\n");
  s.write("free.txt", "outside every scope\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_MESSAGE(r.output);
  CAF_CHECK_EQUAL(r.code, 2);
  CAF_CHECK(contains(r.output, "untracked or uncommitted files where the "
                               "tasks will write"));
  CAF_CHECK(contains(r.output, "docs/more.md (t2, t3); notes (t1)"));
  CAF_CHECK(!contains(r.output, "free.txt"));
  CAF_CHECK(!fs::exists(s.root / ".taskforce"));
  CAF_CHECK_EQUAL(read_file(s.root / "notes"), "mine\n");
  CAF_CHECK_EQUAL(read_file(s.root / "docs/more.md"), "draft\n");
  CAF_CHECK_EQUAL(git_ok(s.root, {"rev-parse", "main"}), head);
  check_no_run_traces(s);
  // Out of the way, the run goes through and the checkout is clean.
  fs::remove(s.root / "notes");
  fs::remove(s.root / "docs/more.md");
  auto ok = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(ok.code, 0);
  CAF_CHECK_EQUAL(read_file(s.root / "notes/a.txt"), "task\n");
  CAF_CHECK_EQUAL(lines_of(git_ok(s.root, {"status", "--porcelain"})),
                  std::vector<std::string>{"?? free.txt"});
}
