// Steering a run: Ctrl-C, a second driver, abort from another process,
// the events file, and the modes that do not merge.
#define CAF_SUITE scenarios.steer
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "scenarios/scenario.hpp"
#include "src/proc/spawn.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// `taskforce run TASKS.md` started in the background, its own group.
proc::child start_run(scenario& s, const std::string& log) {
  s.set_config(s.config_text);
  proc::spawn_options o;
  o.argv = {TASKFORCE_BINARY,  "--repo", s.root.string(), "--config",
            s.config.string(), "run",    "TASKS.md",      "--plain"};
  o.cwd = s.root.string();
  o.out = proc::stdio::file((s.dir.path() / log).string());
  o.err = proc::stdio::to_stdout();
  o.in = proc::stdio::null();
  return proc::spawn(o);
}

/// Waits until the ledger shows task `id` running (at most 20 s).
bool wait_running(const scenario& s, const std::string& id) {
  for (int i = 0; i < 200; ++i) {
    std::this_thread::sleep_for(100ms);
    try {
      if (std::filesystem::exists(s.root / ".taskforce" / "ledger.sqlite")
          && s.task(id).state == task_state::running)
        return true;
    } catch (const std::exception&) {
    }
  }
  return false;
}

std::string sleeper(const std::string& flag, const std::string& marker,
                    const std::string& file) {
  return "test -f " + flag + " || sleep 30; echo x > " + file + " # " + marker;
}

} // namespace

CAF_TEST(ctrl c pauses gracefully and resume finishes the run) {
  scenario s;
  auto marker = "tfint" + std::to_string(::getpid());
  auto flag = (s.dir.path() / "go.flag").string();
  s.tasks("- [ ] Slow\n  - files: a.txt\n  - run: "
          + sleeper(flag, marker, "a.txt")
          + "\n- [ ] Slow too\n  - files: b.txt\n  - run: "
          + sleeper(flag, marker, "b.txt") + "\n");
  auto child = start_run(s, "int.log");
  CAF_REQUIRE(wait_running(s, "t1"));
  ::kill(child.pid, SIGINT);
  auto st = proc::wait_for(child.pid);
  auto out = read_file(s.dir.path() / "int.log");
  CAF_CHECK_EQUAL(st.code, 1);
  CAF_CHECK(contains(out, "taskforce resume"));
  CAF_CHECK_EQUAL(to_string(s.run().state), std::string{"paused"});
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"interrupted"});
  CAF_CHECK_EQUAL(s.task("t1").attempts, 0);
  CAF_CHECK(scenario::processes_mentioning(marker).empty());
  { std::ofstream{flag} << "go\n"; }
  auto r = s.tf({"resume"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
  CAF_CHECK_EQUAL(s.task("t1").attempts, 1);
}

CAF_TEST(
  a second driver is refused and abort from another process stops the run) {
  scenario s;
  auto marker = "tfabort" + std::to_string(::getpid());
  auto flag = (s.dir.path() / "never.flag").string();
  s.tasks("- [ ] Slow\n  - files: a.txt\n  - run: "
          + sleeper(flag, marker, "a.txt") + "\n");
  auto child = start_run(s, "first.log");
  CAF_REQUIRE(wait_running(s, "t1"));
  auto second = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(second.code, 2);
  CAF_CHECK(contains(second.output, "process"));
  CAF_CHECK_EQUAL(s.tf({"resume"}).code, 2);
  // Reading works while the run is driven elsewhere.
  auto status = s.tf({"status", "--json"});
  CAF_CHECK_EQUAL(status.code, 0);
  auto j = nlohmann::json::parse(status.output, nullptr, false);
  CAF_REQUIRE(j.is_object());
  CAF_CHECK_EQUAL(j["run"]["state"], "running");
  CAF_CHECK_EQUAL(j["tasks"][0]["state"], "running");
  CAF_CHECK_EQUAL(s.tf({"list"}).code, 0);
  CAF_CHECK_EQUAL(s.tf({"logs", "t1"}).code, 0);
  CAF_CHECK_EQUAL(s.tf({"abort"}).code, 0);
  auto st = proc::wait_for(child.pid);
  CAF_CHECK_EQUAL(st.code, 1);
  CAF_CHECK_EQUAL(to_string(s.run().state), std::string{"aborted"});
  CAF_CHECK(scenario::processes_mentioning(marker).empty());
}

CAF_TEST(the events file holds every transition as a JSON line) {
  scenario s;
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt\n"
          "- [ ] B\n  - files: b.txt\n  - deps: 1\n  - run: echo b > b.txt\n");
  auto events = (s.dir.path() / "events.jsonl").string();
  auto r = s.tf({"run", "TASKS.md", "--events", events});
  CAF_CHECK_EQUAL(r.code, 0);
  auto lines = lines_of(read_file(events));
  CAF_CHECK(lines.size() >= 10u);
  int done = 0;
  bool completed = false;
  for (auto& line : lines) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    CAF_REQUIRE(j.is_object());
    if (j["state"] == "done")
      ++done;
    if (j["task"].is_null() && j["state"] == "completed")
      completed = true;
  }
  CAF_CHECK_EQUAL(done, 2);
  CAF_CHECK(completed);
}

CAF_TEST(without worktrees tasks run in place and are committed there) {
  scenario s;
  s.set_config(R"({"run": {"useWorktrees": false, "maxConcurrency": 2}})");
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt\n"
          "- [ ] B\n  - files: b.txt\n  - run: echo b > b.txt\n"
          "- [ ] C\n  - files: c.txt\n  - run: true\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(git_ok(s.root, {"status", "--porcelain"}), "");
  auto subjects = s.first_parent_subjects();
  // Two commits (C changed nothing), on top of "tasks" and "first".
  CAF_CHECK_EQUAL(subjects.size(), 4u);
  CAF_CHECK_EQUAL(lines_of(git_ok(s.root, {"worktree", "list"})).size(), 1u);
  CAF_CHECK_EQUAL(to_string(s.task("t3").state), std::string{"done"});
}

CAF_TEST(autoMerge false keeps finished worktrees for review) {
  scenario s;
  s.set_config(R"({"run": {"autoMerge": false}})");
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  auto t = s.task("t1");
  CAF_CHECK_EQUAL(to_string(t.state), std::string{"review"});
  CAF_CHECK(std::filesystem::exists(
    std::filesystem::path{t.worktree.value_or("/none")} / "a.txt"));
  CAF_CHECK(!std::filesystem::exists(s.root / "a.txt"));
  auto diff = s.tf({"diff", "t1"});
  CAF_CHECK(contains(diff.output, "+a"));
}

CAF_TEST(assist mode leaves the changes uncommitted in the main checkout) {
  scenario s;
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt\n"
          "- [ ] B\n  - files: README.md\n  - run: echo more >> README.md\n");
  auto before = s.first_parent_subjects().size();
  auto r = s.tf({"run", "TASKS.md", "--mode", "assist"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(s.first_parent_subjects().size(), before);
  auto status = git_ok(s.root, {"status", "--porcelain"});
  CAF_CHECK(contains(status, "a.txt"));
  CAF_CHECK(contains(status, "README.md"));
  // Disjoint scopes: they may run together in place; each passed.
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
  CAF_CHECK_EQUAL(to_string(s.task("t2").state), std::string{"done"});
}

CAF_TEST(discard removes the worktree and branch of a task and resets it) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks("- [ ] Fails\n  - files: a.txt\n  - run: echo a > a.txt; exit 1\n");
  CAF_CHECK_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  auto t = s.task("t1");
  auto wt = t.worktree.value_or("/none");
  CAF_REQUIRE(std::filesystem::exists(wt));
  auto d = s.tf({"discard", "t1"});
  CAF_CHECK_EQUAL(d.code, 0);
  CAF_CHECK(!std::filesystem::exists(wt));
  CAF_CHECK_EQUAL(git_ok(s.root, {"branch", "--list", "taskforce/*"}), "");
  t = s.task("t1");
  CAF_CHECK_EQUAL(to_string(t.state), std::string{"pending"});
  CAF_CHECK(!t.branch);
}
