#define CAF_SUITE unit.worker_backend
#include <caf/test/unit_test.hpp>

#include <string>
#include <vector>

#include "src/worker/backend.hpp"

using namespace taskforce;

namespace {

using strings = std::vector<std::string>;
using env_list = std::vector<std::pair<std::string, std::string>>;

worker_task task() {
  worker_task t;
  t.id = "t4";
  t.title = "Write docs";
  t.body = "Explain the cache.";
  t.files = {"docs/cache.md"};
  t.run = "make docs";
  t.verify = "test -s docs/cache.md";
  return t;
}

template<class F>
bool throws_invalid_argument(F f) {
  try {
    f();
  } catch (const std::invalid_argument&) {
    return true;
  }
  return false;
}

} // namespace

CAF_TEST(the agent key of a task picks the backend or a preset) {
  auto c = choose_backend("", "shell", "claude");
  CAF_CHECK(c.backend == worker_backend::shell);
  c = choose_backend("", "agent", "claude");
  CAF_CHECK(c.backend == worker_backend::agent);
  CAF_CHECK_EQUAL(c.preset, "claude");
  c = choose_backend("scripted", "agent", "claude");
  CAF_CHECK(c.backend == worker_backend::scripted);
  c = choose_backend("codex", "shell", "claude");
  CAF_CHECK(c.backend == worker_backend::agent);
  CAF_CHECK_EQUAL(c.preset, "codex");
  CAF_CHECK(throws_invalid_argument([&] {
    choose_backend("", "robot", "claude");
  }));
}

CAF_TEST(the shell backend runs the run command with sh) {
  worker_round round;
  round.context = {"r7", "t4", 2, turn_kind::start, "/repo"};
  auto cmd = prepare_worker_command(worker_backend::shell, {}, task(), round);
  CAF_CHECK_EQUAL(cmd.argv, (strings{"/bin/sh", "-c", "make docs"}));
  CAF_CHECK(cmd.inputs.empty());
  CAF_CHECK(cmd.stdin_file.empty());
  CAF_CHECK_EQUAL(cmd.env,
                  (env_list{{"TASKFORCE_RUN_ID", "r7"},
                            {"TASKFORCE_TASK_ID", "t4"},
                            {"TASKFORCE_ATTEMPT", "2"},
                            {"TASKFORCE_TURN", "start"},
                            {"TASKFORCE_REPO", "/repo"},
                            {"GIT_REFLOG_ACTION", "taskforce task r7/t4"}}));
  auto t = task();
  t.run.clear();
  try {
    prepare_worker_command(worker_backend::shell, {}, t, round);
    CAF_FAIL("expected an error");
  } catch (const std::invalid_argument& e) {
    CAF_CHECK_EQUAL(std::string{e.what()},
                    "task t4 has no run: command for the shell worker");
  }
}

CAF_TEST(a later turn gives a shell worker its text on standard input) {
  worker_round round;
  round.context = {"r7", "t4", 1, turn_kind::repair, "/repo"};
  round.turn_file = "/logs/t4/attempt-1/turn-2.txt";
  round.turn.kind = turn_kind::repair;
  round.turn.repair_round = 1;
  round.turn.gate_result = "exit 1";
  round.turn.gate_tail = "docs/cache.md is empty\n";
  auto cmd = prepare_worker_command(worker_backend::shell, {}, task(), round);
  CAF_CHECK_EQUAL(cmd.stdin_file, round.turn_file);
  CAF_REQUIRE_EQUAL(cmd.inputs.size(), 1u);
  CAF_CHECK_EQUAL(cmd.inputs[0].first, round.turn_file);
  CAF_CHECK_EQUAL(cmd.inputs[0].second,
                  "the gate failed (exit 1)\ndocs/cache.md is empty\n");
  CAF_CHECK_EQUAL(cmd.env[3].second, "repair");
  round.turn = {};
  round.turn.kind = turn_kind::answer;
  round.turn.answers = {"Use LRU."};
  round.turn.messages = {"Also update the README."};
  cmd = prepare_worker_command(worker_backend::shell, {}, task(), round);
  CAF_REQUIRE_EQUAL(cmd.inputs.size(), 1u);
  CAF_CHECK_EQUAL(cmd.inputs[0].second,
                  "Use LRU.\n\nAlso update the README.\n");
}

CAF_TEST(the scripted backend runs the hidden command with the invocation) {
  worker_settings s;
  s.taskforce_binary = "/usr/bin/taskforce";
  s.script_file = "/repo/script.json";
  worker_round round;
  round.invocation = 3;
  auto cmd = prepare_worker_command(worker_backend::scripted, s, task(), round);
  CAF_CHECK_EQUAL(cmd.argv, (strings{"/usr/bin/taskforce", "scripted-worker",
                                     "--script", "/repo/script.json", "--task",
                                     "t4", "--invocation", "3"}));
  s.script_file.clear();
  CAF_CHECK(throws_invalid_argument([&] {
    prepare_worker_command(worker_backend::scripted, s, task(), round);
  }));
}

CAF_TEST(the agent backend composes the prompt and expands the preset) {
  worker_settings s;
  s.preset = load_agent_preset("aider", "");
  s.instructions = "Be brief.";
  worker_round round;
  round.worktree = "/wt/t4";
  round.prompt_file = "/logs/t4/attempt-1/prompt.md";
  round.turn.kind = turn_kind::repair;
  round.turn.repair_round = 1;
  round.turn.gate_result = "exit 1";
  round.turn.gate_tail = "docs/cache.md is empty\n";
  round.session = "/wt/t4";
  auto cmd = prepare_worker_command(worker_backend::agent, s, task(), round);
  CAF_CHECK_EQUAL(cmd.argv[0], "aider");
  CAF_CHECK_EQUAL(cmd.argv[2], "/logs/t4/attempt-1/prompt.md");
  // No model routed: the optional --model group is left out.
  CAF_CHECK_EQUAL(cmd.argv[3], "--yes-always");
  CAF_CHECK_EQUAL(cmd.argv.back(), "docs/cache.md");
  // aider cannot continue: a fresh run with the whole prompt.
  CAF_CHECK(!cmd.continues);
  CAF_REQUIRE_EQUAL(cmd.inputs.size(), 1u);
  auto& prompt = cmd.inputs[0].second;
  CAF_CHECK_EQUAL(cmd.inputs[0].first, round.prompt_file);
  CAF_CHECK(prompt.find("# Task t4: Write docs") == 0);
  CAF_CHECK(prompt.find("docs/cache.md is empty") != std::string::npos);
  CAF_CHECK(prompt.find("Be brief.") != std::string::npos);
  auto t = task();
  t.model = "task/model";
  cmd = prepare_worker_command(worker_backend::agent, s, t, round);
  CAF_CHECK_EQUAL(cmd.argv[4], "task/model");
  s.preset.reset();
  CAF_CHECK(throws_invalid_argument([&] {
    prepare_worker_command(worker_backend::agent, s, task(), round);
  }));
}

CAF_TEST(claude names its session and resumes it with only the turn text) {
  worker_settings s;
  s.preset = load_agent_preset("claude", "");
  worker_round round;
  round.worktree = "/wt/t4";
  round.prompt_file = "/logs/prompt-1.md";
  round.new_session = "0f8e4a1c-0000-4000-8000-000000000001";
  auto first = prepare_worker_command(worker_backend::agent, s, task(), round);
  CAF_CHECK(!first.continues);
  CAF_CHECK_EQUAL(first.session, round.new_session);
  CAF_CHECK_EQUAL(first.argv[3], "--session-id");
  CAF_CHECK_EQUAL(first.argv[4], round.new_session);
  // The answer turn continues that session with the answer alone.
  round.session = first.session;
  round.new_session = "0f8e4a1c-0000-4000-8000-000000000002";
  round.turn.kind = turn_kind::answer;
  round.turn.answers = {"Use LRU."};
  auto next = prepare_worker_command(worker_backend::agent, s, task(), round);
  CAF_CHECK(next.continues);
  CAF_CHECK_EQUAL(next.session, first.session);
  CAF_CHECK_EQUAL(
    next.argv,
    (strings{"claude", "-p", next.argv[2], "--resume", first.session,
             "--permission-mode", "acceptEdits", "--output-format", "text"}));
  CAF_CHECK(next.argv[2].find("Use LRU.") != std::string::npos);
  CAF_CHECK(next.argv[2].find("# Task t4") == std::string::npos);
  // When continuing failed, the same turn runs fresh: a new session, the
  // whole prompt plus the answer.
  round.fresh_session = true;
  auto fresh = prepare_worker_command(worker_backend::agent, s, task(), round);
  CAF_CHECK(!fresh.continues);
  CAF_CHECK_EQUAL(fresh.session, round.new_session);
  CAF_CHECK(fresh.argv[2].find("# Task t4") == 0);
  CAF_CHECK(fresh.argv[2].find("Use LRU.") != std::string::npos);
}

CAF_TEST(opencode continues only the last session of its own worktree) {
  worker_settings s;
  s.preset = load_agent_preset("opencode", "");
  worker_round round;
  round.worktree = "/wt/t4";
  auto first = prepare_worker_command(worker_backend::agent, s, task(), round);
  CAF_CHECK_EQUAL(first.session, "/wt/t4");
  round.session = first.session;
  round.turn.kind = turn_kind::message;
  round.turn.messages = {"Rename it."};
  auto next = prepare_worker_command(worker_backend::agent, s, task(), round);
  CAF_CHECK(next.continues);
  CAF_CHECK_EQUAL(next.argv[2], "--dir");
  CAF_CHECK_EQUAL(next.argv[3], "/wt/t4");
  CAF_CHECK_EQUAL(next.argv[4], "--continue");
  // In place the directory's last session may be another task's.
  round.own_directory = false;
  round.worktree = "/repo";
  round.session = "/repo";
  auto in_place
    = prepare_worker_command(worker_backend::agent, s, task(), round);
  CAF_CHECK(!in_place.continues);
  CAF_CHECK(in_place.session.empty());
  // A session of another directory is not continued either.
  round.own_directory = true;
  round.worktree = "/wt/t4-2";
  round.session = "/wt/t4";
  CAF_CHECK(
    !prepare_worker_command(worker_backend::agent, s, task(), round).continues);
}

CAF_TEST(codex resumes the session named in its banner) {
  worker_settings s;
  s.preset = load_agent_preset("codex", "");
  worker_round round;
  round.worktree = "/wt/t4";
  auto first = prepare_worker_command(worker_backend::agent, s, task(), round);
  CAF_CHECK(first.session.empty()); // read from the output afterwards
  auto banner = "OpenAI Codex v0.171.0\n--------\nworkdir: /wt/t4\n"
                "session id: 01a232de-04ac-7d61-89a3-f9d6644b03ab\n--------\n";
  round.session = find_session(*s.preset, banner);
  CAF_CHECK_EQUAL(round.session, "01a232de-04ac-7d61-89a3-f9d6644b03ab");
  round.turn.kind = turn_kind::repair;
  round.turn.repair_round = 1;
  round.turn.gate_result = "exit 1";
  auto next = prepare_worker_command(worker_backend::agent, s, task(), round);
  CAF_CHECK(next.continues);
  CAF_CHECK_EQUAL(next.argv, (strings{"codex", "exec", "resume", "-c",
                                      "sandbox_mode=\"workspace-write\"",
                                      round.session, next.argv.back()}));
  CAF_CHECK(next.argv.back().find("Repair (round 1)") != std::string::npos);
}
