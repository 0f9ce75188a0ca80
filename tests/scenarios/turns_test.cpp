// A worker's turns as a user's workers see them, with the real binary in a
// temporary repository: the environment every worker and gate process gets,
// the text of a repair on standard input, and an agent that continues its
// own session (or starts a fresh one when it cannot).
#define CAF_SUITE scenarios.turns
#include <caf/test/unit_test.hpp>

#include "scenarios/scenario.hpp"

using namespace taskforce;
using namespace taskforce::test;

namespace {

std::string state_of(scenario& s, const std::string& id) {
  return to_string(s.task(id).state);
}

/// A stand-in agent CLI: `sh agent.sh MODE SESSION PROMPT_FILE`. It notes
/// each call in LOG (outside the repository), writes out/a.txt in its
/// worktree, and reports done; MODE "broken" fails the way a CLI does that
/// cannot find the session to continue.
std::string agent_script(const std::filesystem::path& log) {
  return "mode=$1; session=$2; prompt=$(cat \"$3\")\n"
         "echo \"$mode $session $TASKFORCE_TURN\" >> '"
         + log.string()
         + "'\n"
           "if [ \"$mode\" = broken ]; then\n"
           "  echo \"No conversation found with session ID: $session\"; "
           "exit 1\n"
           "fi\n"
           "case \"$prompt\" in *'# Task t1'*) echo whole-prompt >> '"
         + log.string()
         + "';; esac\n"
           "case \"$prompt\" in *'## Repair (round 1)'*) echo repair-text >> '"
         + log.string()
         + "';; esac\n"
           "mkdir -p out && echo \"$mode\" >> out/a.txt\n"
           "echo '[task:done] did '\"$mode\"\n";
}

/// The agent preset for agent_script: the first turn names the session,
/// a later one runs `continue_mode` on it.
std::string agent_preset(const std::string& script,
                         const std::string& continue_mode) {
  return R"({"argv": ["sh", ")" + script
         + R"(", "start", "{session}", "{prompt_file}"],
  "continue": ["sh", ")"
         + script + R"(", ")" + continue_mode
         + R"(", "{session}", "{prompt_file}"],
  "session": "uuid"})";
}

} // namespace

CAF_TEST(a shell worker learns its turn and reads the failed gate on stdin) {
  scenario s;
  s.tasks("- [ ] Turns\n  - files: out/**\n"
          "  - run: mkdir -p out && echo \"$TASKFORCE_TURN $TASKFORCE_RUN_ID "
          "$TASKFORCE_TASK_ID $TASKFORCE_ATTEMPT $TASKFORCE_REPO\" >> "
          "out/turns.txt && cat >> out/stdin.txt\n"
          "  - verify: echo \"$TASKFORCE_TURN $TASKFORCE_TASK_ID\" > "
          "out/gate.txt && grep -q repair out/turns.txt || "
          "{ echo 'no repair yet'; exit 1; }\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "done");
  auto run_id = s.run().id;
  auto repo = s.root.string();
  CAF_CHECK_EQUAL(read_file(s.root / "out/turns.txt"),
                  "start " + run_id + " t1 1 " + repo + "\nrepair " + run_id
                    + " t1 1 " + repo + "\n");
  // The first turn read nothing; the repair read the gate's failure.
  CAF_CHECK_EQUAL(read_file(s.root / "out/stdin.txt"),
                  "the gate failed (exit 1)\nno repair yet\n");
  // The gate that passed checked the repair turn.
  CAF_CHECK_EQUAL(read_file(s.root / "out/gate.txt"), "repair t1\n");
}

CAF_TEST(an agent continues its own session in a repair turn) {
  scenario s;
  auto log = s.dir.path() / "agent.log";
  auto script = s.dir.write("agent.sh", agent_script(log));
  auto preset
    = s.dir.write("agent.json", agent_preset(script.string(), "resume"));
  s.set_config(R"({"run": {"worker": "agent", "agentPreset": ")"
               + preset.string() + R"("}})");
  s.tasks("- [ ] Cache\n  - files: out/**\n"
          "  - verify: grep -q resume out/a.txt || "
          "{ echo 'not resumed'; exit 1; }\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "done");
  auto lines = lines_of(read_file(log));
  CAF_REQUIRE_EQUAL(lines.size(), 4u);
  // start SESSION start / whole-prompt / resume SESSION repair / repair-text
  auto session = lines[0].substr(6, 36);
  CAF_CHECK_EQUAL(lines[0], "start " + session + " start");
  CAF_CHECK_EQUAL(lines[1], "whole-prompt");
  CAF_CHECK_EQUAL(lines[2], "resume " + session + " repair");
  // The continued session gets the turn's text alone.
  CAF_CHECK_EQUAL(lines[3], "repair-text");
}

CAF_TEST(a turn that cannot continue its session runs fresh with it all) {
  scenario s;
  auto log = s.dir.path() / "agent.log";
  auto script = s.dir.write("agent.sh", agent_script(log));
  auto preset
    = s.dir.write("agent.json", agent_preset(script.string(), "broken"));
  s.set_config(R"({"run": {"worker": "agent", "agentPreset": ")"
               + preset.string() + R"("}})");
  s.tasks("- [ ] Cache\n  - files: out/**\n"
          "  - verify: test $(grep -c start out/a.txt) -ge 2 || "
          "{ echo 'one start only'; exit 1; }\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "done");
  auto lines = lines_of(read_file(log));
  CAF_REQUIRE_EQUAL(lines.size(), 6u);
  auto first = lines[0].substr(6, 36);
  CAF_CHECK_EQUAL(lines[2], "broken " + first + " repair");
  // A new session, the whole prompt and the repair's text.
  CAF_CHECK(lines[3].rfind("start ", 0) == 0);
  CAF_CHECK_NOT_EQUAL(lines[3].substr(6, 36), first);
  CAF_CHECK_EQUAL(lines[3].substr(42), " repair");
  CAF_CHECK_EQUAL(lines[4], "whole-prompt");
  CAF_CHECK_EQUAL(lines[5], "repair-text");
}
