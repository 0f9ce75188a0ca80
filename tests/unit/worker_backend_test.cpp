#define CAF_SUITE unit.worker_backend
#include <caf/test/unit_test.hpp>

#include <string>
#include <vector>

#include "src/worker/backend.hpp"

using namespace taskforce;

namespace {

using strings = std::vector<std::string>;

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
  auto cmd = prepare_worker_command(worker_backend::shell, {}, task(), round);
  CAF_CHECK_EQUAL(cmd.argv, (strings{"sh", "-c", "make docs"}));
  CAF_CHECK(cmd.prompt.empty());
  CAF_REQUIRE_EQUAL(cmd.env.size(), 1u);
  CAF_CHECK_EQUAL(cmd.env[0].first, "TASKFORCE_TASK_ID");
  CAF_CHECK_EQUAL(cmd.env[0].second, "t4");
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
  s.model = "run/model";
  s.instructions = "Be brief.";
  worker_round round;
  round.worktree = "/wt/t4";
  round.prompt_file = "/logs/t4/attempt-1/prompt.md";
  round.repair_round = 1;
  round.gate_result = "exit 1";
  round.gate_tail = "docs/cache.md is empty\n";
  auto cmd = prepare_worker_command(worker_backend::agent, s, task(), round);
  CAF_CHECK_EQUAL(cmd.argv[0], "aider");
  CAF_CHECK_EQUAL(cmd.argv[2], "/logs/t4/attempt-1/prompt.md");
  CAF_CHECK_EQUAL(cmd.argv[4], "run/model");
  CAF_CHECK_EQUAL(cmd.argv.back(), "docs/cache.md");
  CAF_CHECK(cmd.prompt.find("# Task t4: Write docs") == 0);
  CAF_CHECK(cmd.prompt.find("docs/cache.md is empty") != std::string::npos);
  CAF_CHECK(cmd.prompt.find("Be brief.") != std::string::npos);
  auto t = task();
  t.model = "task/model";
  cmd = prepare_worker_command(worker_backend::agent, s, t, round);
  CAF_CHECK_EQUAL(cmd.argv[4], "task/model");
  s.preset.reset();
  CAF_CHECK(throws_invalid_argument([&] {
    prepare_worker_command(worker_backend::agent, s, task(), round);
  }));
}
