// The built-in `opencode` preset with the real OpenCode (`opencode run`, the
// version tests/harness pins) as the worker of a run, offline against the
// scripted model server through an OpenAI-compatible provider (Chat
// Completions): it edits its worktree through its own tool calls, fails the
// gate, is repaired in its session (`opencode run --continue` in the task's
// own worktree), passes and merges, and its reported usage is counted.
#define CAF_SUITE e2e.real_opencode
#include <caf/test/unit_test.hpp>

#include <string>

#include "e2e/harness.hpp"
#include "e2e/real_worker.hpp"

using namespace taskforce;
using namespace taskforce::test;

CAF_TEST(opencode edits its worktree is repaired in its session and merges) {
  auto clis = find_harness_clis();
  if (clis.dir.empty()) {
    say_skipped(clis.why_not);
    return;
  }
  real_worker_case c{clis};
  // OpenCode's own file tools: write makes the file, edit changes it.
  model_server model{
    c.s.dir,
    c.script(R"({"tool": "write", "input": {"filePath": "{cwd}/notes.txt",
                                            "content": "draft\n"}})",
             R"({"tool": "edit", "input": {"filePath": "{cwd}/notes.txt",
                                           "oldString": "draft",
                                           "newString": "fixed"}})")};
  auto home = c.s.dir.path() / "opencode-home";
  auto env = own_home(home, clis);
  c.s.dir.write("opencode-home/.config/opencode/opencode.json",
                opencode_config(model));
  env.emplace_back("OPENCODE_DISABLE_MODELS_FETCH", "1");
  c.run("opencode", env);
  c.check(model);
}
