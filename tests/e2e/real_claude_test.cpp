// The built-in `claude` preset with the real Claude Code (`claude -p`, the
// version tests/harness pins) as the worker of a run, offline against the
// scripted model server: it edits its worktree through its own tool calls,
// fails the gate, is repaired in the same session, passes and merges, and
// its reported usage is counted.
#define CAF_SUITE e2e.real_claude
#include <caf/test/unit_test.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "e2e/harness.hpp"
#include "e2e/real_worker.hpp"

using namespace taskforce;
using namespace taskforce::test;
using json = nlohmann::json;

CAF_TEST(claude edits its worktree is repaired in its session and merges) {
  auto clis = find_harness_clis();
  if (clis.dir.empty()) {
    say_skipped(clis.why_not);
    return;
  }
  real_worker_case c{clis};
  // Claude Code's own file tools: Write makes the file, Edit changes it.
  model_server model{
    c.s.dir, c.script(
               R"({"tool": "Write", "input": {"file_path": "{cwd}/notes.txt",
                                   "content": "draft\n"}})",
               R"({"tool": "Edit", "input": {"file_path": "{cwd}/notes.txt",
                                  "old_string": "draft",
                                  "new_string": "fixed"}})")};
  c.run("claude", claude_env(c.s.dir.path() / "claude-home", clis, model));
  c.check(model);
}
