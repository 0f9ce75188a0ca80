// A run in place (useWorktrees: false) or in assist mode whose driver is
// killed with SIGKILL to its whole process group, at several instants:
// `resume` continues it over the files its interrupted attempts wrote in
// the main checkout (they are the run's, not the person's), and completes
// it with every task's content.
#define CAF_SUITE scenarios.recovery_in_place
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <functional>
#include <thread>

#include "scenarios/scenario.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr int task_count = 5;

/// Five tasks, three at a time, each writing its file; each leaves a mark
/// when its worker wrote and when its gate passed.
std::string task_file(const fs::path& marks) {
  std::string text;
  for (int i = 1; i <= task_count; ++i) {
    auto n = std::to_string(i);
    auto mark = (marks / ("k" + n)).string();
    text += "- [ ] task " + n + "\n  - id: k" + n + "\n  - files: src/k" + n
            + ".txt\n  - run: mkdir -p src && echo content-" + n + " > src/k"
            + n + ".txt && touch " + mark + ".ran && sleep 0.1\n"
            + "  - verify: grep -q content-" + n + " src/k" + n
            + ".txt && touch " + mark + ".verified\n";
  }
  return text;
}

/// When to kill the driver.
struct kill_point {
  std::string name;
  /// Kill once it holds (polled), or after `after` when it is empty.
  std::function<bool(const scenario&, const fs::path&)> when;
  std::chrono::milliseconds after{0};
};

bool contains_no_run(const std::string& output) {
  return output.find("no run") != std::string::npos
         || output.find("no unfinished run") != std::string::npos;
}

bool marked(const fs::path& marks, const std::string& name) {
  return fs::exists(marks / name);
}

std::vector<kill_point> kill_points() {
  std::vector<kill_point> points;
  points.push_back(
    {"as the first worker wrote", [](const scenario&, const fs::path& m) {
       return marked(m, "k1.ran");
     }});
  points.push_back({"as a gate passed", [](const scenario&, const fs::path& m) {
                      return marked(m, "k2.verified");
                    }});
  points.push_back(
    {"in the second wave", [](const scenario&, const fs::path& m) {
       return marked(m, "k4.ran");
     }});
  points.push_back(
    {"as the last worker wrote", [](const scenario&, const fs::path& m) {
       return marked(m, "k5.ran");
     }});
  for (int ms : {20, 100, 300})
    points.push_back({"after " + std::to_string(ms) + " ms", nullptr,
                      std::chrono::milliseconds(ms)});
  return points;
}

/// Runs the task file in `config`'s mode, kills the driver's process group
/// at `point`, resumes, and checks that every task's content is there.
void kill_and_resume(const std::string& config, const kill_point& point,
                     bool committed) {
  scenario s;
  auto marks = s.dir.path() / "marks";
  fs::create_directories(marks);
  s.set_config(config);
  s.tasks(task_file(marks));
  // In a process group of its own: the kill takes the driver's whole group.
  auto child = start_taskforce(s, {"run", "TASKS.md", "--plain"}, "killed.log");
  if (point.when)
    eventually(
      [&] {
        return point.when(s, marks);
      },
      60s);
  else
    std::this_thread::sleep_for(point.after);
  ::kill(-child.pid, SIGKILL);
  auto st = proc::wait_for(child.pid);
  // Recovery: resume, or run again when the kill came before the run was
  // recorded.
  auto r = s.tf({"resume", "--plain"});
  if (r.code == 2 && contains_no_run(r.output))
    r = s.tf({"run", "TASKS.md", "--plain"});
  CAF_CHECK_EQUAL(r.code, 0);
  if (r.code != 0)
    CAF_MESSAGE(point.name << " (" << proc::to_string(st) << "):\n"
                           << read_file(s.dir.path() / "killed.log")
                           << "\n---\n"
                           << r.output << "\n---\n"
                           << s.tf({"status"}).output);
  CAF_CHECK_EQUAL(to_string(s.run().state), std::string{"completed"});
  for (int i = 1; i <= task_count; ++i) {
    auto n = std::to_string(i);
    auto file = "src/k" + n + ".txt";
    CAF_CHECK_EQUAL(read_file(s.root / file), "content-" + n + "\n");
    CAF_CHECK_EQUAL(to_string(s.task("k" + n).state), std::string{"done"});
    if (committed)
      CAF_CHECK_EQUAL(run_git(s.root, {"show", "main:" + file}).output,
                      "content-" + n + "\n");
  }
}

} // namespace

CAF_TEST(a run in place killed at any instant resumes to every task) {
  for (auto& point : kill_points()) {
    CAF_MESSAGE("in place, killed " << point.name);
    kill_and_resume(R"({"run": {"maxConcurrency": 3, "useWorktrees": false}})",
                    point, true);
  }
}

CAF_TEST(an assist run killed at any instant resumes to every task) {
  for (auto& point : kill_points()) {
    CAF_MESSAGE("assist mode, killed " << point.name);
    kill_and_resume(R"({"run": {"maxConcurrency": 3, "mode": "assist"}})",
                    point, false);
  }
}
