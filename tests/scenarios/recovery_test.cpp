// A run whose driver is killed with SIGKILL and resumed: every task is
// merged exactly once, no work is lost, git stays consistent, and nothing a
// worker started (in its group, in a session of its own, under nohup)
// outlives the kill.
#define CAF_SUITE scenarios.recovery
#include <caf/test/unit_test.hpp>

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <map>
#include <random>
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
            + ".txt && sleep 0.15 && echo task" + n + " > out/f" + n + ".txt # "
            + marker + "\n";
    text += "  - verify: grep -q task" + n + " out/f" + n + ".txt\n";
  }
  return text;
}

/// Starts `taskforce ARGS...` in the scenario's repository with `mark`
/// (an environment entry NAME=VALUE) inherited by everything it starts.
proc::child start_driver(scenario& s, std::vector<std::string> args,
                         const std::string& mark) {
  auto eq = mark.find('=');
  return start_taskforce(s, args, "killed.log",
                         {{mark.substr(0, eq), mark.substr(eq + 1)}});
}

/// The live processes (zombies hold nothing) whose environment has `entry`
/// (NAME=VALUE), as /proc shows them.
std::vector<pid_t> processes_carrying(const std::string& entry) {
  std::vector<pid_t> found;
  auto* d = ::opendir("/proc");
  if (d == nullptr)
    return found;
  while (auto* e = ::readdir(d)) {
    pid_t pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == ::getpid())
      continue;
    auto base = std::string{"/proc/"} + e->d_name;
    auto stat = read_file(base + "/stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos || stat.compare(close, 3, ") Z") == 0)
      continue;
    auto env = read_file(base + "/environ");
    size_t at = 0;
    while (at < env.size()) {
      auto end = env.find('\0', at);
      if (end == std::string::npos)
        end = env.size();
      if (env.compare(at, end - at, entry) == 0) {
        found.push_back(pid);
        break;
      }
      at = end + 1;
    }
  }
  ::closedir(d);
  return found;
}

/// A worker that leaves three kinds of descendants behind: one in a session
/// of its own, one in the background of its group, one under nohup.
const char* orphan_makers = "setsid sleep 1000 & sleep 1000 & "
                            "nohup sleep 1000 >/dev/null 2>&1 & ";

/// Kills the driver of a run whose worker hangs after starting orphans,
/// then recovers with `again` (`resume`, or `run TASKS.md`).
void orphans_outlive_no_recovery(const std::vector<std::string>& again) {
  scenario s;
  auto flag = (s.dir.path() / "started").string();
  s.tasks(std::string{"- [ ] Orphans\n  - files: out/a.txt\n  - run: "}
          + orphan_makers + "if [ -e " + flag
          + " ]; then mkdir -p out && echo done > out/a.txt; else touch " + flag
          + "; sleep 1000; fi\n");
  auto mark
    = "TFTEST_MARK=orphans-" + std::to_string(::getpid()) + "-" + again[0];
  auto driver = start_driver(s, {"run", "TASKS.md", "--plain"}, mark);
  // The worker hangs in `sleep 1000` with its three orphans-to-be.
  CAF_REQUIRE(eventually([&] {
    return std::filesystem::exists(flag)
           && processes_carrying(mark).size() >= 6; // driver, sh, 4 sleeps
  }));
  ::kill(driver.pid, SIGKILL);
  CAF_CHECK_EQUAL(proc::wait_for(driver.pid).signal, SIGKILL);
  // They outlive the driver...
  CAF_CHECK_GREATER_OR_EQUAL(processes_carrying(mark).size(), 5u);
  // ...until the next start, which finds them and finishes the run.
  auto r = s.tf(again);
  CAF_CHECK_EQUAL(r.code, 0);
  if (r.code != 0)
    CAF_MESSAGE(read_file(s.dir.path() / "killed.log") << "\n---\n"
                                                       << r.output);
  CAF_CHECK_EQUAL(processes_carrying(mark), std::vector<pid_t>{});
  CAF_CHECK_EQUAL(to_string(s.run().state), std::string{"completed"});
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
  CAF_CHECK_EQUAL(read_file(s.root / "out/a.txt"), "done\n");
  // Nothing is left to find the next time either: no process, no record.
  CAF_CHECK_EQUAL(processes_carrying(mark), std::vector<pid_t>{});
  auto records = s.root / ".taskforce" / "procs";
  CAF_CHECK(std::filesystem::is_directory(records));
  CAF_CHECK(std::filesystem::is_empty(records));
}

/// TASKFORCE_SEED replays a run of the random kill loop; without it, each
/// run draws its own.
uint64_t kill_seed() {
  if (auto env = std::getenv("TASKFORCE_SEED"))
    return std::strtoull(env, nullptr, 10);
  return std::random_device{}();
}

/// TASKFORCE_KILL_ROUNDS sets the number of rounds (a few in CI).
int kill_rounds() {
  auto env = std::getenv("TASKFORCE_KILL_ROUNDS");
  return env != nullptr ? std::atoi(env) : 6;
}

} // namespace

CAF_TEST(resume kills what the worker of a killed driver left in any session) {
  orphans_outlive_no_recovery({"resume"});
}

CAF_TEST(
  run again kills what the worker of a killed driver left in any session) {
  orphans_outlive_no_recovery({"run", "TASKS.md"});
}

CAF_TEST(a second interrupt kills every worker at once wherever it went) {
  scenario s;
  auto flag = (s.dir.path() / "started").string();
  s.tasks(std::string{"- [ ] Orphans\n  - files: out/a.txt\n  - run: "}
          + orphan_makers + "if [ -e " + flag
          + " ]; then mkdir -p out && echo done > out/a.txt; else touch " + flag
          + "; sleep 1000; fi\n");
  auto mark = "TFTEST_MARK=interrupted-" + std::to_string(::getpid());
  auto driver = start_driver(s, {"run", "TASKS.md", "--plain"}, mark);
  CAF_REQUIRE(eventually([&] {
    return std::filesystem::exists(flag)
           && processes_carrying(mark).size() >= 6; // driver, sh, 4 sleeps
  }));
  // Two in a row (two different signals, which never merge into one
  // pending signal): the second stops everything before the pause can.
  ::kill(driver.pid, SIGINT);
  ::kill(driver.pid, SIGTERM);
  auto st = proc::wait_for(driver.pid);
  CAF_CHECK_EQUAL(st.code, 1);
  CAF_CHECK_NOT_EQUAL(
    read_file(s.dir.path() / "killed.log").find("stopped at once"),
    std::string::npos);
  // SIGKILLed, they go as soon as the scheduler lets them; nothing waits
  // for a resume.
  CAF_CHECK(eventually([&] {
    return processes_carrying(mark).empty();
  }));
  CAF_CHECK_EQUAL(processes_carrying(mark), std::vector<pid_t>{});
  // And the run is still recoverable.
  CAF_CHECK_EQUAL(s.tf({"resume"}).code, 0);
  CAF_CHECK_EQUAL(read_file(s.root / "out/a.txt"), "done\n");
}

CAF_TEST(a driver killed at random instants leaves nothing after recovery) {
  auto seed = kill_seed();
  auto rounds = kill_rounds();
  CAF_MESSAGE("seed " << seed << ", " << rounds
                      << " rounds (TASKFORCE_SEED and TASKFORCE_KILL_ROUNDS "
                         "replay or extend it)");
  std::mt19937_64 rng{seed};
  for (int round = 0; round < rounds; ++round) {
    scenario s;
    s.set_config(R"({"run": {"maxConcurrency": 2}})");
    std::string text;
    for (int i = 1; i <= 4; ++i) {
      auto n = std::to_string(i);
      text += "- [ ] Task " + n + "\n  - files: out/f" + n + ".txt\n"
              + "  - run: " + orphan_makers + "mkdir -p out && sleep 0.1 && "
              + "echo task" + n + " > out/f" + n + ".txt\n" + "  - verify: "
              + orphan_makers + "grep -q task" + n + " out/f" + n + ".txt\n";
    }
    s.tasks(text);
    auto mark = "TFTEST_MARK=round-" + std::to_string(::getpid()) + "-"
                + std::to_string(round);
    auto delay = std::uniform_int_distribution<int>{0, 900}(rng);
    auto driver = start_driver(s, {"run", "TASKS.md", "--plain"}, mark);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    ::kill(driver.pid, SIGKILL);
    auto st = proc::wait_for(driver.pid);
    // Recovery: resume, or run again when the kill came before the run
    // was recorded.
    auto r = s.tf({"resume"});
    if (r.code == 2)
      r = s.tf({"run", "TASKS.md"});
    auto left = processes_carrying(mark);
    CAF_CHECK_EQUAL(left, std::vector<pid_t>{});
    CAF_CHECK_EQUAL(r.code, 0);
    if (!left.empty() || r.code != 0)
      CAF_MESSAGE("round " << round << ": killed after " << delay << " ms ("
                           << proc::to_string(st) << ")\n"
                           << read_file(s.dir.path() / "killed.log")
                           << "\n---\n"
                           << r.output);
    for (int i = 1; i <= 4; ++i)
      CAF_CHECK_EQUAL(
        read_file(s.root / ("out/f" + std::to_string(i) + ".txt")),
        "task" + std::to_string(i) + "\n");
  }
}

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
    o.argv = {TASKFORCE_BINARY,  "--repo", s.root.string(), "--config",
              s.config.string(), "run",    "TASKS.md",      "--plain"};
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
      CAF_MESSAGE("the run finished before the kill at "
                  << ms << " ms: exit " << st.code << "\n"
                  << read_file(s.dir.path() / "killed.log"));
      break;
    }
  }
  // `resume` continues the killed run, or exits 0 when it already completed.
  auto r = std::filesystem::exists(ledger_file)
             ? s.tf({"resume"}, 120s)
             : s.tf({"run", "TASKS.md"}, 120s);
  CAF_CHECK_EQUAL(r.code, 0);
  if (r.code != 0) {
    auto status = s.tf({"status"});
    CAF_FAIL("the final run did not complete:\n"
             << read_file(s.dir.path() / "killed.log") << "\n---\n"
             << r.output << "\n---\n"
             << status.output);
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
