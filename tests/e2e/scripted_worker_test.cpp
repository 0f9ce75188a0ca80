// The scripted worker as the `scripted` backend runs it: the real binary,
// started through the process runner in a working directory.
#define CAF_SUITE e2e.scripted_worker
#include <caf/test/unit_test.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "src/proc/run.hpp"
#include "src/report/report.hpp"
#include "src/worker/script.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace std::chrono_literals;

namespace {

struct fixture {
  test::temp_dir dir;
  std::string script_path;

  void script(const std::string& text) {
    script_path = dir.write("script.json", text).string();
  }

  proc::run_result invoke(const std::string& task, uint64_t n,
                          std::chrono::milliseconds timeout = 0ms) {
    proc::run_options o;
    o.argv = scripted_worker_argv(TASKFORCE_BINARY, script_path, task, n);
    o.cwd = (dir.path() / "wt").string();
    std::filesystem::create_directories(o.cwd);
    o.log_file = (dir.path() / "worker.log").string();
    o.timeout = timeout;
    o.kill_grace = 300ms;
    return proc::run(o);
  }

  std::string in_worktree(const std::string& path) {
    return test::read_file(dir.path() / "wt" / path);
  }

  bool exists(const std::string& path) {
    return std::filesystem::exists(dir.path() / "wt" / path);
  }
};

std::vector<pid_t> hanging_children(const std::string& out) {
  std::vector<pid_t> pids;
  std::istringstream in(out);
  std::string line;
  const std::string prefix = "hanging child: ";
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0)
      pids.push_back(std::stoi(line.substr(prefix.size())));
  return pids;
}

bool gone(pid_t pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(scripted_worker_tests, fixture)

CAF_TEST(an invocation writes and deletes files and prints its report) {
  script(R"({"tasks": {"t1": [{
    "write": {"src/a.txt": "alpha\n", "b.txt": "beta\n"},
    "append": {"b.txt": "more\n"},
    "delete": ["old.txt"],
    "print": "working on it\n", "stderr": "a warning\n",
    "report": {"status": "done", "summary": "wrote a and b",
               "files": ["src/a.txt", "b.txt"]}}]}})");
  dir.write("wt/old.txt", "old");
  auto r = invoke("t1", 1);
  CAF_CHECK(r.success());
  CAF_CHECK_EQUAL(in_worktree("src/a.txt"), "alpha\n");
  CAF_CHECK_EQUAL(in_worktree("b.txt"), "beta\nmore\n");
  CAF_CHECK(!exists("old.txt"));
  CAF_CHECK(r.tail.find("working on it\n") != std::string::npos);
  CAF_CHECK(r.tail.find("a warning\n") != std::string::npos);
  auto v = judge_worker(worker_backend::scripted, r, read_report(r.tail));
  CAF_CHECK_EQUAL(to_string(v.kind), std::string{"done"});
  CAF_CHECK_EQUAL(v.reason, "wrote a and b");
  CAF_REQUIRE(v.report);
  CAF_CHECK_EQUAL(v.report->files,
                  (std::vector<std::string>{"src/a.txt", "b.txt"}));
  CAF_CHECK_EQUAL(test::read_file(dir.path() / "worker.log"), r.tail);
}

CAF_TEST(invocation k runs entry k and the last entry repeats) {
  script(R"({"tasks": {"t1": [
    {"marker": "blocked", "reason": "which table?"},
    {"write": {"x.txt": "2"}, "marker": "done"}]},
    "default": [{"print": "default entry\n", "marker": "done"}]})");
  auto first = invoke("t1", 1);
  auto v1
    = judge_worker(worker_backend::scripted, first, read_report(first.tail));
  CAF_CHECK_EQUAL(to_string(v1.kind), std::string{"blocked"});
  CAF_CHECK_EQUAL(v1.reason, "which table?");
  CAF_CHECK(!exists("x.txt"));
  for (uint64_t n : {2, 3, 7}) {
    auto r = invoke("t1", n);
    auto v = judge_worker(worker_backend::scripted, r, read_report(r.tail));
    CAF_CHECK_EQUAL(to_string(v.kind), std::string{"done"});
  }
  CAF_CHECK_EQUAL(in_worktree("x.txt"), "2");
  auto other = invoke("t9", 1);
  CAF_CHECK(other.tail.find("default entry") != std::string::npos);
}

CAF_TEST(the exit code passes through and no report fails the attempt) {
  script(R"({"tasks": {"t1": [{"print": "did stuff\n", "exit": 3}]}})");
  auto r = invoke("t1", 1);
  CAF_CHECK_EQUAL(r.exit_code, 3);
  auto v = judge_worker(worker_backend::scripted, r, read_report(r.tail));
  CAF_CHECK_EQUAL(to_string(v.kind), std::string{"failed"});
  CAF_CHECK_EQUAL(v.reason, "no report (exit 3)");
}

CAF_TEST(a malformed report is printed verbatim and named) {
  script(
    R"({"tasks": {"t1": [{"print": "```json\n{\"status\": done}\n```\n"}]}})");
  auto r = invoke("t1", 1);
  CAF_CHECK(r.success());
  auto v = judge_worker(worker_backend::scripted, r, read_report(r.tail));
  CAF_CHECK_EQUAL(to_string(v.kind), std::string{"failed"});
  CAF_CHECK(v.reason.rfind("malformed report: the last ```json block", 0) == 0);
}

CAF_TEST(a crash is a real abort and leaves no core file) {
  script(R"({"tasks": {"t1": [{"write": {"half.txt": "x"}, "crash": true}]}})");
  auto r = invoke("t1", 1);
  CAF_CHECK_EQUAL(r.signal, SIGABRT);
  CAF_CHECK(exists("half.txt"));
  size_t entries = 0;
  for ([[maybe_unused]] auto& e :
       std::filesystem::directory_iterator(dir.path() / "wt"))
    ++entries;
  CAF_CHECK_EQUAL(entries, 1u);
  auto v = judge_worker(worker_backend::scripted, r, read_report(r.tail));
  CAF_CHECK_EQUAL(v.reason, "no report (signal 6 (Aborted))");
}

CAF_TEST(a sleeping worker is stopped by the timeout) {
  script(R"({"tasks": {"t1": [{"sleep_ms": 60000, "marker": "done"}]}})");
  auto r = invoke("t1", 1, 300ms);
  CAF_CHECK(r.timed_out);
  CAF_CHECK_EQUAL(r.signal, SIGTERM);
  CAF_CHECK_LESS(r.duration, 3000ms);
}

CAF_TEST(a hanging worker and its hanging children are killed on timeout) {
  // The timeout leaves a loaded machine time to start the worker, so that
  // it really ignores SIGTERM when the timeout strikes.
  script(R"({"tasks": {"t1": [{"hang": true, "hang_children": 2}]}})");
  auto r = invoke("t1", 1, 2000ms);
  CAF_CHECK(r.timed_out);
  CAF_CHECK(r.tail.find("hanging, SIGTERM ignored") != std::string::npos);
  CAF_CHECK_EQUAL(r.signal, SIGKILL);
  CAF_CHECK_GREATER_OR_EQUAL(r.duration, 2300ms);
  CAF_CHECK_LESS(r.duration, 8000ms);
  auto children = hanging_children(r.tail);
  CAF_REQUIRE_EQUAL(children.size(), 2u);
  for (auto pid : children)
    CAF_CHECK(gone(pid));
  CAF_CHECK(gone(-r.pid));
  auto v = judge_worker(worker_backend::scripted, r, read_report(r.tail));
  CAF_CHECK_EQUAL(v.reason.rfind("timed out after", 0), 0u);
}

CAF_TEST(hanging children that left the process group are killed too) {
  script(R"({"tasks": {"t1": [{"hang": true, "hang_children": 2,
                               "escape_group": true}]}})");
  auto r = invoke("t1", 1, 2000ms);
  CAF_CHECK(r.timed_out);
  CAF_CHECK(r.tail.find("hanging, SIGTERM ignored") != std::string::npos);
  auto children = hanging_children(r.tail);
  CAF_REQUIRE_EQUAL(children.size(), 2u);
  for (auto pid : children)
    CAF_CHECK(gone(pid));
}

CAF_TEST(hanging children of a worker that exits do not outlive it) {
  script(R"({"tasks": {"t1": [{"hang_children": 1, "marker": "done"}]}})");
  auto r = invoke("t1", 1, 20000ms);
  CAF_CHECK(!r.timed_out);
  CAF_CHECK(r.success());
  CAF_CHECK_LESS(r.duration, 5000ms);
  auto children = hanging_children(r.tail);
  CAF_REQUIRE_EQUAL(children.size(), 1u);
  CAF_CHECK(gone(children[0]));
}

CAF_TEST(workers left behind by a killed parent are found by their label) {
  // A stand-in for a taskforce killed mid-run: its worker (and the worker's
  // hanging child) carry the run's label and survive it.
  script(R"({"tasks": {"t1": [{"hang": true, "hang_children": 1}]}})");
  auto args = scripted_worker_argv(TASKFORCE_BINARY, script_path, "t1", 1);
  std::string command;
  for (auto& a : args)
    command += "'" + a + "' ";
  proc::spawn_options so;
  so.argv = {"sh", "-c", command + "& echo $!; wait"};
  so.env = {{"TASKFORCE_PROC_TOKEN", "crashed-run/t1/#1-1"}};
  so.out = proc::stdio::pipe();
  so.err = proc::stdio::to_stdout();
  auto parent = proc::spawn(so);
  std::string out;
  char buf[256];
  // Read until the hanging child has been announced.
  while (out.find("hanging child: ") == std::string::npos
         || out.find('\n', out.find("hanging child: ")) == std::string::npos) {
    auto n = ::read(parent.stdout_fd, buf, sizeof buf);
    CAF_REQUIRE(n > 0);
    out.append(buf, static_cast<size_t>(n));
  }
  pid_t worker = std::stoi(out);
  auto children = hanging_children(out);
  CAF_REQUIRE_EQUAL(children.size(), 1u);
  ::kill(parent.pid, SIGKILL);
  proc::wait_for(parent.pid);
  ::close(parent.stdout_fd);
  CAF_CHECK(!gone(worker));
  CAF_CHECK_EQUAL(proc::kill_leftovers("crashed-run/"), 2u);
  auto dead = [](pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(in, line);
    auto close = line.rfind(')');
    return gone(pid) || (close != std::string::npos && line[close + 2] == 'Z');
  };
  CAF_CHECK(dead(worker));
  CAF_CHECK(dead(children[0]));
}

CAF_TEST(a bad script or an uncovered task exits 2 and says why) {
  script(R"({"tasks": {"t1": [{"slep_ms": 5}]}})");
  auto r = invoke("t1", 1);
  CAF_CHECK_EQUAL(r.exit_code, 2);
  CAF_CHECK(r.tail.find("tasks.t1[0]: unknown key \"slep_ms\" (did you mean "
                        "\"sleep_ms\"?)")
            != std::string::npos);
  script(R"({"tasks": {"t1": [{"marker": "done"}]}})");
  r = invoke("t2", 1);
  CAF_CHECK_EQUAL(r.exit_code, 2);
  CAF_CHECK(r.tail.find("has no entry for task \"t2\" and no \"default\"")
            != std::string::npos);
}

CAF_TEST_FIXTURE_SCOPE_END()
