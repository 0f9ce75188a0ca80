// The built-in `codex` preset with the real Codex (`codex exec`, the
// version tests/harness pins) as the worker of a run, offline against the
// scripted model server through the Responses API: it edits its worktree
// through its own shell tool, fails the gate, is repaired in the session it
// named in its banner (`codex exec resume`), passes and merges, and its
// reported usage is counted.
#define CAF_SUITE e2e.real_codex
#include <caf/test/unit_test.hpp>

#include <string>

#include "e2e/harness.hpp"
#include "e2e/real_worker.hpp"

using namespace taskforce;
using namespace taskforce::test;

CAF_TEST(codex edits its worktree is repaired in its session and merges) {
  auto clis = find_harness_clis();
  if (clis.dir.empty()) {
    say_skipped(clis.why_not);
    return;
  }
  real_worker_case c{clis};
  // Codex edits through its shell tool, sandboxed to the worktree.
  model_server model{
    c.s.dir,
    c.script(
      R"({"tool": "exec_command", "input": {"cmd": "printf 'draft\\n' > notes.txt"}})",
      R"({"tool": "exec_command", "input": {"cmd": "printf 'fixed\\n' > notes.txt"}})")};
  auto home = c.s.dir.path() / "codex-home";
  auto env = own_home(home, clis);
  // The provider speaks the Responses API (codex refuses "chat"); no
  // approvals in exec; the plugin sync would wait on the network.
  c.s.dir.write("codex-home/.codex/config.toml",
                "model = \"scripted\"\n"
                "model_provider = \"scripted\"\n"
                "approval_policy = \"never\"\n\n"
                "[model_providers.scripted]\n"
                "name = \"Scripted\"\n"
                "base_url = \""
                  + model.url()
                  + "/v1\"\n"
                    "env_key = \"SCRIPTED_API_KEY\"\n"
                    "wire_api = \"responses\"\n\n"
                    "[features]\n"
                    "plugins = false\n");
  env.emplace_back("CODEX_HOME", (home / ".codex").string());
  env.emplace_back("SCRIPTED_API_KEY", "scripted-key");
  c.run("codex", env);
  c.check(model);
}
