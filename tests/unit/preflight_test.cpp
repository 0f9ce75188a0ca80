#define CAF_SUITE unit.preflight
#include <caf/test/unit_test.hpp>

#include <sys/stat.h>

#include <string>
#include <vector>

#include "src/proc/which.hpp"
#include "src/run/preflight.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::run;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

task_spec task(const std::string& id, size_t line) {
  task_spec t;
  t.id = id;
  t.line = line;
  t.title = "task " + id;
  t.files = {id + ".txt"};
  return t;
}

task_spec agent_task(const std::string& id, size_t line,
                     const std::string& agent) {
  auto t = task(id, line);
  t.agent = agent;
  t.agent_line = line + 1;
  return t;
}

/// A repository folder and a PATH folder, both empty.
struct fixture {
  test::temp_dir root;
  test::temp_dir bin;
  preflight_context ctx;

  fixture() {
    ctx.root = root.path().string();
    ctx.path_env = bin.path().string();
  }

  /// Puts an executable `name` on the PATH folder.
  void install(const std::string& name) {
    auto file = bin.write(name, "#!/bin/sh\nexit 0\n");
    ::chmod(file.c_str(), 0755);
  }

  std::vector<preflight_finding> check(const std::vector<task_spec>& tasks) {
    return preflight(tasks, ctx);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(preflight_tests, fixture)

CAF_TEST(a shell task without run is found at its line as a warning) {
  auto with_run = task("t1", 3);
  with_run.run = "echo hi";
  auto found = check({with_run, task("t2", 7)});
  CAF_REQUIRE_EQUAL(found.size(), 1u);
  CAF_CHECK_EQUAL(found[0].line, 7u);
  CAF_CHECK(!found[0].certain);
  CAF_CHECK(contains(found[0].message, "task t2 has no run: command"));
  CAF_CHECK(contains(found[0].message, "agent: NAME"));
}

CAF_TEST(done tasks are never checked) {
  auto done = task("t1", 3);
  done.done = true;
  CAF_CHECK(check({done}).empty());
}

CAF_TEST(an unknown preset is certain with a did you mean at the agent line) {
  install("claude");
  auto found
    = check({agent_task("t1", 3, "claud"), agent_task("t2", 9, "claude")});
  CAF_REQUIRE_EQUAL(found.size(), 1u);
  CAF_CHECK_EQUAL(found[0].line, 4u);
  CAF_CHECK(found[0].certain);
  CAF_CHECK(contains(found[0].message, "unknown agent preset \"claud\""));
  CAF_CHECK(contains(found[0].message, "did you mean \"claude\"?"));
}

CAF_TEST(a program not on PATH is named once with the tasks it would run) {
  ctx.cfg.worker = "agent";
  ctx.cfg.agent_preset = "codex";
  auto found
    = check({task("t1", 3), task("t2", 5), task("t3", 7), task("t4", 9)});
  CAF_REQUIRE_EQUAL(found.size(), 1u);
  CAF_CHECK_EQUAL(found[0].line, 3u);
  CAF_CHECK(!found[0].certain);
  CAF_CHECK_EQUAL(found[0].message,
                  "agent preset \"codex\": the program \"codex\" is not on "
                  "PATH (it would run t1, t2 and 2 more)");
  install("codex");
  CAF_CHECK(check({task("t1", 3)}).empty());
}

CAF_TEST(the run default preset is reported once when unknown) {
  ctx.cfg.worker = "agent";
  ctx.cfg.agent_preset = "opencod";
  auto found = check({task("t1", 3), task("t2", 5)});
  CAF_REQUIRE_EQUAL(found.size(), 1u);
  CAF_CHECK_EQUAL(found[0].line, 3u);
  CAF_CHECK(found[0].certain);
  CAF_CHECK(contains(found[0].message, "run.agentPreset: unknown agent "
                                       "preset \"opencod\""));
  CAF_CHECK(contains(found[0].message, "(it would run t1 and t2)"));
}

CAF_TEST(a repository preset with a missing program path is found) {
  root.write(".taskforce/agents/mine.json",
             R"({"argv": ["/nowhere/agent-cli", "{prompt}"]})");
  auto found = check({agent_task("t1", 2, "mine")});
  CAF_REQUIRE_EQUAL(found.size(), 1u);
  CAF_CHECK_EQUAL(found[0].line, 3u);
  CAF_CHECK(contains(found[0].message,
                     "the program \"/nowhere/agent-cli\" is not an "
                     "executable file"));
  // A broken preset file is certain.
  root.write(".taskforce/agents/broken.json", R"({"argv": 3})");
  auto broken = check({agent_task("t1", 2, "broken")});
  CAF_REQUIRE_EQUAL(broken.size(), 1u);
  CAF_CHECK(broken[0].certain);
}

CAF_TEST(the verifier preset is checked when the verifier is on) {
  auto t = task("t1", 3);
  t.run = "true";
  ctx.cfg.verifier_enabled = true;
  ctx.cfg.verifier_preset = "nope";
  auto found = check({t});
  CAF_REQUIRE_EQUAL(found.size(), 1u);
  CAF_CHECK_EQUAL(found[0].line, 0u);
  CAF_CHECK(found[0].certain);
  CAF_CHECK(contains(found[0].message, "run.verifierPreset: unknown agent"));
  ctx.cfg.verifier_preset = "aider";
  auto missing = check({t});
  CAF_REQUIRE_EQUAL(missing.size(), 1u);
  CAF_CHECK(!missing[0].certain);
  CAF_CHECK(contains(missing[0].message, "\"aider\" is not on PATH"));
  install("aider");
  CAF_CHECK(check({t}).empty());
  ctx.cfg.verifier_enabled = false;
  ctx.cfg.verifier_preset = "nope";
  CAF_CHECK(check({t}).empty());
}

CAF_TEST(scripted tasks and tasks that name the shell need only their run) {
  ctx.cfg.worker = "agent";
  auto shell = agent_task("t1", 3, "shell");
  shell.run = "true";
  auto scripted = agent_task("t2", 6, "scripted");
  CAF_CHECK(check({shell, scripted}).empty());
}

CAF_TEST(find program searches the PATH folders in order like execvp) {
  install("tool");
  test::temp_dir other;
  auto second = other.write("tool", "#!/bin/sh\n");
  ::chmod(second.c_str(), 0755);
  auto path = other.path().string() + ":" + bin.path().string();
  CAF_CHECK_EQUAL(proc::find_program("tool", path, "/").value_or(""),
                  second.string());
  // Not executable: skipped.
  ::chmod(second.c_str(), 0644);
  CAF_CHECK_EQUAL(proc::find_program("tool", path, "/").value_or(""),
                  (bin.path() / "tool").string());
  CAF_CHECK(!proc::find_program("nothing-like-it", path, "/"));
  // A folder of that name is not a program.
  bin.write("dir/x", "");
  CAF_CHECK(!proc::find_program("dir", bin.path().string(), "/"));
  // With a '/', the path itself (relative from the folder given).
  CAF_CHECK(proc::find_program("./tool", "", bin.path().string()));
}

CAF_TEST_FIXTURE_SCOPE_END()
