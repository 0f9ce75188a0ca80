#define CAF_SUITE unit.run_lock
#include <caf/test/unit_test.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <variant>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/store/run_lock.hpp"
#include "test.hpp"

extern char** environ;

using namespace taskforce;
using namespace taskforce::store;

namespace {

// A copy, so a check never refers into a temporary that is gone.
template<class T>
T copy(const T& x) {
  return x;
}

// When the test binary is started with TASKFORCE_TEST_HOLD_RUN_LOCK set, it
// becomes a lock holder before main runs: it takes the lock, optionally
// spawns a long-lived child (a "worker") and writes its pid next to the lock,
// then waits to be killed. This gives the tests a real, separate process.
const int lock_holder_mode = [] {
  const char* path = std::getenv("TASKFORCE_TEST_HOLD_RUN_LOCK");
  if (path == nullptr)
    return 0;
  auto result = run_lock::try_acquire(path, "held-run");
  if (!std::holds_alternative<run_lock>(result))
    ::_exit(3);
  if (const char* pid_file = std::getenv("TASKFORCE_TEST_SPAWN_WORKER")) {
    pid_t child = 0;
    char sh[] = "sleep";
    char arg[] = "60";
    char* argv[] = {sh, arg, nullptr};
    if (posix_spawnp(&child, "sleep", nullptr, nullptr, argv, environ) != 0)
      ::_exit(4);
    std::ofstream(pid_file) << child << "\n";
  }
  for (;;)
    ::pause();
}();

// Starts this test binary as a lock holder; returns its pid.
pid_t spawn_holder(const std::filesystem::path& lock,
                   const std::string& worker_pid_file = "") {
  std::vector<std::string> env_text{"TASKFORCE_TEST_HOLD_RUN_LOCK="
                                    + lock.string()};
  if (!worker_pid_file.empty())
    env_text.push_back("TASKFORCE_TEST_SPAWN_WORKER=" + worker_pid_file);
  std::vector<char*> env;
  for (auto& e : env_text)
    env.push_back(e.data());
  env.push_back(nullptr);
  char self[] = "/proc/self/exe";
  char* argv[] = {self, nullptr};
  pid_t pid = 0;
  auto rc
    = posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, env.data());
  CAF_REQUIRE_EQUAL(rc, 0);
  return pid;
}

// Polls `holder` until `pid` holds the lock (at most 10 s).
bool wait_for_holder(const std::filesystem::path& lock, pid_t pid) {
  for (int i = 0; i < 1000; ++i) {
    auto h = run_lock::holder(lock);
    if (h && h->pid == pid)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

void kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

} // namespace

CAF_TEST(the first process gets the lock and the second learns who has it) {
  test::temp_dir dir;
  auto lock_file = dir.path() / ".taskforce" / "run.lock";
  CAF_CHECK(!run_lock::holder(lock_file).has_value());
  auto first = run_lock::try_acquire(lock_file, "r1");
  CAF_REQUIRE(std::holds_alternative<run_lock>(first));
  auto h = run_lock::holder(lock_file);
  CAF_REQUIRE(h.has_value());
  CAF_CHECK_EQUAL(h->pid, ::getpid());
  CAF_CHECK_EQUAL(h->run_id, "r1");
  // A second open file description is refused even in the same process.
  auto second = run_lock::try_acquire(lock_file, "r2");
  CAF_REQUIRE(std::holds_alternative<run_lock_holder>(second));
  auto who = std::get<run_lock_holder>(second);
  CAF_CHECK_EQUAL(who.pid, ::getpid());
  CAF_CHECK_EQUAL(describe(who), "run r1 is being driven by process "
                                   + std::to_string(::getpid()));
  std::get<run_lock>(first).set_run("r9");
  CAF_CHECK_EQUAL(copy(run_lock::holder(lock_file)->run_id), "r9");
  std::get<run_lock>(first).release();
  CAF_CHECK(!run_lock::holder(lock_file).has_value());
  auto third = run_lock::try_acquire(lock_file);
  CAF_CHECK(std::holds_alternative<run_lock>(third));
}

CAF_TEST(a lock held by another process refuses this one) {
  test::temp_dir dir;
  auto lock_file = dir.path() / "run.lock";
  auto child = spawn_holder(lock_file);
  CAF_REQUIRE(wait_for_holder(lock_file, child));
  auto result = run_lock::try_acquire(lock_file, "mine");
  CAF_REQUIRE(std::holds_alternative<run_lock_holder>(result));
  auto who = std::get<run_lock_holder>(result);
  CAF_CHECK_EQUAL(who.pid, child);
  CAF_CHECK_EQUAL(who.run_id, "held-run");
  CAF_CHECK_EQUAL(describe(who), "run held-run is being driven by process "
                                   + std::to_string(child));
  kill_and_reap(child);
}

CAF_TEST(a killed holder never blocks the next process) {
  test::temp_dir dir;
  auto lock_file = dir.path() / "run.lock";
  auto worker_pid_file = dir.path() / "worker.pid";
  auto child = spawn_holder(lock_file, worker_pid_file.string());
  CAF_REQUIRE(wait_for_holder(lock_file, child));
  pid_t worker = 0;
  for (int i = 0; i < 1000 && worker == 0; ++i) {
    std::ifstream in(worker_pid_file);
    in >> worker;
    if (worker == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CAF_REQUIRE(worker > 0);
  kill_and_reap(child);
  // The holder's worker lives on (it was not in the holder's group by
  // design here), yet it did not inherit the lock.
  CAF_CHECK_EQUAL(::kill(worker, 0), 0);
  auto result = run_lock::try_acquire(lock_file, "next");
  CAF_CHECK(std::holds_alternative<run_lock>(result));
  ::kill(worker, SIGKILL);
}
