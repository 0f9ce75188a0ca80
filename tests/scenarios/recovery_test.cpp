// A 20-task run killed with SIGKILL (its whole process group) at several
// points and resumed each time: every task is merged exactly once, no work
// is lost, git stays consistent, and no worker outlives the kills.
#define CAF_SUITE scenarios.recovery
#include <caf/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <map>
#include <thread>

#include "scenarios/scenario.hpp"
#include "src/proc/spawn.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;

namespace {

std::string task_file(const std::string& marker) {
  std::string text;
  for (int i = 1; i <= 20; ++i) {
    auto n = std::to_string(i);
    text += "- [ ] Task " + n + "\n  - files: out/f" + n + ".txt\n";
    // A few dependency chains so the run has waves.
    if (i > 5 && i % 3 == 0)
      text += "  - deps: " + std::to_string(i - 5) + "\n";
    text += "  - run: mkdir -p out && echo start > out/f" + n
            + ".txt && sleep 0.15 && echo task" + n + " > out/f" + n
            + ".txt # " + marker + "\n";
    text += "  - verify: grep -q task" + n + " out/f" + n + ".txt\n";
  }
  return text;
}

} // namespace

CAF_TEST(a run killed at several points resumes to every task merged once) {
  scenario s;
  auto marker = "tfmark" + std::to_string(::getpid());
  s.tasks(task_file(marker));
  s.set_config(R"({"run": {"maxConcurrency": 3}})");
  // Kill points (ms after the start) spread over the run's life.
  std::vector<int> kill_after{350, 150, 600, 250, 450, 100, 800};
  auto ledger_file = s.root / ".taskforce" / "ledger.sqlite";
  // Asked through `taskforce status`, as a user would right after a kill
  // (no task state is called "completed", only a run's).
  auto completed = [&] {
    if (!std::filesystem::exists(ledger_file))
      return false;
    auto st = s.tf({"status", "--json"});
    return st.code == 0
           && st.output.find("\"state\":\"completed\"") != std::string::npos;
  };
  for (auto ms : kill_after) {
    // A kill can land after the run committed its completion but before
    // the process exited; `run` would then start a new run of the file.
    if (completed())
      break;
    proc::spawn_options o;
    o.argv = {TASKFORCE_BINARY, "--repo", s.root.string(), "--config",
              s.config.string(), "run", "TASKS.md", "--plain"};
    o.cwd = s.root.string();
    o.out = proc::stdio::file((s.dir.path() / "killed.log").string(), true);
    o.err = proc::stdio::to_stdout();
    o.in = proc::stdio::null();
    auto child = proc::spawn(o);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    ::kill(-child.pid, SIGKILL);
    auto st = proc::wait_for(child.pid);
    // It may have finished before the kill; then it completed.
    if (st.signal == 0) {
      CAF_MESSAGE("the run finished before the kill at " << ms << " ms: exit "
                  << st.code << "\n" << read_file(s.dir.path() / "killed.log"));
      break;
    }
  }
  // `resume` continues the killed run, or exits 0 when it already completed.
  auto r = std::filesystem::exists(ledger_file) ? s.tf({"resume"}, 120s)
                                                : s.tf({"run", "TASKS.md"}, 120s);
  CAF_CHECK_EQUAL(r.code, 0);
  if (r.code != 0) {
    auto status = s.tf({"status"});
    CAF_FAIL("the final run did not complete:\n"
             << read_file(s.dir.path() / "killed.log") << "\n---\n"
             << r.output << "\n---\n" << status.output);
  }
  auto run = s.run();
  CAF_CHECK_EQUAL(to_string(run.state), std::string{"completed"});
  auto rows = s.task_rows();
  CAF_REQUIRE_EQUAL(rows.size(), 20u);
  for (auto& t : rows)
    CAF_CHECK_EQUAL(to_string(t.state), std::string{"done"});
  // Each task's branch came in through exactly one merge commit.
  std::map<std::string, int> merges;
  for (auto& subject : s.first_parent_subjects()) {
    auto prefix = "Merge taskforce/" + run.id + "/";
    if (subject.rfind(prefix, 0) == 0) {
      auto rest = subject.substr(prefix.size());
      merges[rest.substr(0, rest.find(':'))]++;
    }
  }
  for (int i = 1; i <= 20; ++i) {
    auto id = "t" + std::to_string(i);
    CAF_CHECK_EQUAL(merges[id], 1);
    CAF_CHECK_EQUAL(read_file(s.root / ("out/f" + std::to_string(i) + ".txt")),
                    "task" + std::to_string(i) + "\n");
  }
  // Consistent repository, clean checkout, no leftovers.
  auto fsck = run_git(s.root, {"fsck", "--strict", "--no-progress"});
  CAF_CHECK_EQUAL(fsck.status, 0);
  CAF_CHECK(fsck.output.find("error") == std::string::npos);
  CAF_CHECK_EQUAL(git_ok(s.root, {"status", "--porcelain"}), "");
  CAF_CHECK_EQUAL(lines_of(git_ok(s.root, {"worktree", "list"})).size(), 1u);
  CAF_CHECK_EQUAL(git_ok(s.root, {"branch", "--list", "taskforce/*"}), "");
  CAF_CHECK(scenario::processes_mentioning(marker).empty());
}
