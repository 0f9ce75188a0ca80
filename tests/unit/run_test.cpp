#define CAF_SUITE unit.run
#include <caf/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "src/proc/mark.hpp"
#include "src/proc/registry.hpp"
#include "src/proc/run.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::proc;
using namespace std::chrono_literals;

namespace {

run_options sh(const std::string& script) {
  run_options o;
  o.argv = {"sh", "-c", script};
  o.kill_grace = 300ms;
  return o;
}

/// The pids a script printed, one per line, after a "pids:" prefix.
std::vector<pid_t> printed_pids(const std::string& out) {
  std::vector<pid_t> pids;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("pid:", 0) == 0)
      pids.push_back(std::stoi(line.substr(4)));
  return pids;
}

bool gone(pid_t pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

/// Dead: gone, or a zombie waiting for its parent.
bool dead(pid_t pid) {
  if (gone(pid))
    return true;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  auto close = line.rfind(')');
  return close != std::string::npos && line.substr(close + 2, 1) == "Z";
}

} // namespace

CAF_TEST(the exit code and the output pass through) {
  test::temp_dir dir;
  auto o = sh("echo out; echo err >&2; exit 3");
  o.log_file = (dir.path() / "worker.log").string();
  auto r = run(o);
  CAF_CHECK_EQUAL(r.exit_code, 3);
  CAF_CHECK_EQUAL(r.signal, 0);
  CAF_CHECK(!r.timed_out);
  CAF_CHECK(!r.cancelled);
  CAF_CHECK(!r.success());
  CAF_CHECK_EQUAL(r.describe(), "exit 3");
  CAF_CHECK_EQUAL(r.tail, "out\nerr\n");
  CAF_CHECK_EQUAL(test::read_file(o.log_file), "out\nerr\n");
  CAF_CHECK(run(sh("true")).success());
}

CAF_TEST(the log gets everything and the tail keeps the end) {
  test::temp_dir dir;
  auto o = sh("i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done");
  o.log_file = (dir.path() / "worker.log").string();
  o.tail_bytes = 20;
  auto r = run(o);
  CAF_CHECK(r.success());
  CAF_CHECK(r.tail_truncated);
  CAF_CHECK_EQUAL(r.tail, "7\nline1998\nline1999\n");
  auto log = test::read_file(o.log_file);
  CAF_CHECK_EQUAL(log.substr(0, 12), "line0\nline1\n");
  CAF_CHECK_EQUAL(log.size(), 16890u);
  o.append_log = true;
  o.argv = {"sh", "-c", "echo again"};
  run(o);
  CAF_CHECK_EQUAL(test::read_file(o.log_file).size(), 16896u);
}

CAF_TEST(a large output streams to the log without blocking the command) {
  test::temp_dir dir;
  auto o = sh("head -c 20000000 /dev/zero; echo end");
  o.log_file = (dir.path() / "big.log").string();
  auto r = run(o);
  CAF_CHECK(r.success());
  CAF_CHECK_EQUAL(std::filesystem::file_size(o.log_file), 20000004u);
  CAF_CHECK_EQUAL(r.tail.size(), 64u * 1024u);
  CAF_CHECK_EQUAL(r.tail.substr(r.tail.size() - 4), "end\n");
}

CAF_TEST(working directory environment and stdin reach the command) {
  test::temp_dir dir;
  dir.write("input.txt", "from stdin");
  auto o = sh("pwd; echo \"$TF_X\"; cat");
  o.cwd = dir.path().string();
  o.env = {{"TF_X", "x-value"}};
  o.stdin_file = (dir.path() / "input.txt").string();
  auto r = run(o);
  auto real = std::filesystem::canonical(dir.path()).string();
  CAF_CHECK_EQUAL(r.tail, real + "\nx-value\nfrom stdin");
  CAF_CHECK_EQUAL(run(sh("cat")).tail, "");
}

CAF_TEST(
  a timeout kills a command that ignores the TERM signal and its children) {
  auto o = sh("trap '' TERM; sleep 60 & echo pid:$!; sleep 60 & echo pid:$!;"
              "echo pid:$$; wait; wait; echo survived");
  o.timeout = 1000ms; // time for sh to start and set its trap
  o.kill_grace = 200ms;
  auto r = run(o);
  CAF_CHECK(r.timed_out);
  CAF_CHECK(!r.cancelled);
  CAF_CHECK_EQUAL(r.signal, SIGKILL);
  CAF_CHECK_GREATER_OR_EQUAL(r.duration, 1200ms);
  CAF_CHECK_LESS(r.duration, 3000ms);
  auto pids = printed_pids(r.tail);
  CAF_REQUIRE_EQUAL(pids.size(), 3u);
  for (auto pid : pids)
    CAF_CHECK(gone(pid));
  CAF_CHECK(gone(-r.pid)); // no process of the group is left
  CAF_CHECK_EQUAL(r.tail.find("survived"), std::string::npos);
}

CAF_TEST(a timeout ends a cooperative command with the TERM signal alone) {
  auto o = sh("sleep 60");
  o.timeout = 200ms;
  o.kill_grace = 5s;
  auto r = run(o);
  CAF_CHECK(r.timed_out);
  CAF_CHECK_EQUAL(r.signal, SIGTERM);
  CAF_CHECK_LESS(r.duration, 2000ms);
}

CAF_TEST(a huge timeout is a limit far away and never fires at once) {
  // 9223372036855 ms is a valid safe integer whose nanoseconds overflow
  // int64; 1e14 and the largest count wrap further.
  for (int64_t ms : {int64_t{9223372036855}, int64_t{100000000000000},
                     std::numeric_limits<int64_t>::max()}) {
    auto o = sh("sleep 0.2; echo finished");
    o.timeout = std::chrono::milliseconds(ms);
    auto r = run(o);
    CAF_CHECK(!r.timed_out);
    CAF_CHECK(r.success());
    CAF_CHECK_EQUAL(r.tail, "finished\n");
  }
}

CAF_TEST(a huge grace lets a command finish its cleanup on the TERM signal) {
  auto o
    = sh("trap 'sleep 0.3; echo cleaned up; exit 7' TERM; sleep 60 & wait");
  o.timeout = 200ms;
  o.kill_grace = std::chrono::milliseconds(9223372036855);
  auto r = run(o);
  CAF_CHECK(r.timed_out);
  CAF_CHECK_EQUAL(r.signal, 0);
  CAF_CHECK_EQUAL(r.exit_code, 7);
  CAF_CHECK_EQUAL(r.tail, "cleaned up\n");
}

CAF_TEST(descendants that left the group or were orphaned do not survive) {
  // One escapes into its own session, one is orphaned by a subshell, one
  // escapes and then forks; the command itself exits at once.
  auto o = sh("setsid sleep 60 & echo pid:$!;"
              "( sleep 60 & echo pid:$! ) ;"
              "setsid sh -c 'sleep 60 & echo pid:$!; wait' & echo pid:$!;"
              "sleep 0.2; exit 0");
  auto r = run(o);
  CAF_CHECK(r.success());
  CAF_CHECK_LESS(r.duration, 3000ms);
  auto pids = printed_pids(r.tail);
  CAF_REQUIRE_EQUAL(pids.size(), 4u);
  for (auto pid : pids)
    CAF_CHECK(gone(pid));
}

CAF_TEST(a marked process behind a parent that cleared its environment
           does not survive a recorded run) {
  // The parent leaves the group and drops the mark; its child carries the
  // mark again. Only a scan of every process finds the child, and it must
  // run because the parent is a stranger among our children.
  test::temp_dir dir;
  auto o = sh("T=$TASKFORCE_PROC_TOKEN; setsid env -i T=\"$T\" "
              "PATH=\"$PATH\" sh -c 'TASKFORCE_PROC_TOKEN=\"$T\" sleep 60 "
              "& echo pid:$!; echo parent:$$; exec sleep 60' &"
              "sleep 0.3; exit 0");
  o.record_folder = (dir.path() / "records").string();
  auto r = run(o);
  CAF_CHECK(r.success());
  auto pids = printed_pids(r.tail);
  CAF_REQUIRE_EQUAL(pids.size(), 1u);
  CAF_CHECK(dead(pids[0]));
  // The unmarked parent escaped: it is the test's to stop.
  auto at = r.tail.find("parent:");
  CAF_REQUIRE(at != std::string::npos);
  pid_t parent = std::stoi(r.tail.substr(at + 7));
  CAF_CHECK(!dead(parent));
  ::kill(parent, SIGKILL);
  ::waitpid(parent, nullptr, 0);
}

CAF_TEST(a background writer does not hold the run open) {
  auto r = run(sh("(sleep 60; echo late) & echo early"));
  CAF_CHECK(r.success());
  CAF_CHECK_EQUAL(r.tail, "early\n");
  CAF_CHECK_LESS(r.duration, 2000ms);
}

CAF_TEST(cancel from another thread terminates the group) {
  auto o = sh("sleep 60 & echo pid:$!; wait");
  cancel_handle handle;
  o.cancel = handle;
  pid_t started = -1;
  o.on_start = [&](pid_t pid) {
    started = pid;
  };
  std::thread stopper([handle] {
    std::this_thread::sleep_for(200ms);
    handle.cancel();
  });
  auto r = run(o);
  stopper.join();
  CAF_CHECK(r.cancelled);
  CAF_CHECK(!r.timed_out);
  CAF_CHECK_EQUAL(r.describe(), "cancelled");
  CAF_CHECK_EQUAL(started, r.pid);
  CAF_CHECK_LESS(r.duration, 2000ms);
  for (auto pid : printed_pids(r.tail))
    CAF_CHECK(gone(pid));
}

CAF_TEST(kill stops a command that ignores the TERM signal at once) {
  auto o = sh("trap '' TERM; sleep 60");
  o.kill_grace = 30s;
  cancel_handle handle;
  o.cancel = handle;
  std::thread stopper([handle] {
    std::this_thread::sleep_for(200ms);
    handle.kill();
  });
  auto r = run(o);
  stopper.join();
  CAF_CHECK(r.cancelled);
  CAF_CHECK_EQUAL(r.signal, SIGKILL);
  CAF_CHECK_LESS(r.duration, 3000ms);
}

CAF_TEST(a handle cancelled before the start runs nothing) {
  test::temp_dir dir;
  auto o = sh("touch ran");
  o.cwd = dir.path().string();
  o.cancel.cancel();
  auto r = run(o);
  CAF_CHECK(r.cancelled);
  CAF_CHECK_EQUAL(r.pid, -1);
  CAF_CHECK(!std::filesystem::exists(dir.path() / "ran"));
}

CAF_TEST(a missing program or an unwritable log is a clear error) {
  run_options o;
  o.argv = {"taskforce-no-such-agent", "-p", "x"};
  try {
    run(o);
    CAF_FAIL("run should throw");
  } catch (const spawn_error& e) {
    CAF_CHECK_EQUAL(std::string{e.what()},
                    "cannot run 'taskforce-no-such-agent': No such file or "
                    "directory");
  }
  o = sh("true");
  o.log_file = "/nonexistent-dir/worker.log";
  try {
    run(o);
    CAF_FAIL("run should throw");
  } catch (const spawn_error& e) {
    CAF_CHECK_EQUAL(std::string{e.what()},
                    "cannot run 'sh': cannot write the log "
                    "'/nonexistent-dir/worker.log': No such file or "
                    "directory");
  }
}

CAF_TEST(a failing start callback stops the command and passes the error) {
  auto o = sh("sleep 60");
  pid_t started = -1;
  o.on_start = [&](pid_t pid) {
    started = pid;
    throw std::runtime_error("ledger unavailable");
  };
  try {
    run(o);
    CAF_FAIL("run should throw");
  } catch (const std::runtime_error& e) {
    CAF_CHECK_EQUAL(std::string{e.what()}, "ledger unavailable");
  }
  CAF_REQUIRE(started > 0);
  CAF_CHECK(gone(started));
}

CAF_TEST(the label marks every process and finds the leftovers of a crash) {
  // What a killed taskforce leaves behind: a worker and its child, in a
  // group of their own, carrying the run's label.
  spawn_options so;
  so.argv = {"sh", "-c", "sleep 60 & echo $!; wait"};
  so.env = {{"TASKFORCE_PROC_TOKEN", "run-7/t1/#123-1"}};
  so.out = stdio::pipe();
  auto c = spawn(so);
  char buf[64] = {};
  std::string line;
  while (line.find('\n') == std::string::npos) {
    auto n = ::read(c.stdout_fd, buf, sizeof buf);
    CAF_REQUIRE(n > 0);
    line.append(buf, static_cast<size_t>(n));
  }
  ::close(c.stdout_fd);
  pid_t grandchild = std::stoi(line);
  // Another run's processes are not touched.
  CAF_CHECK_EQUAL(kill_leftovers("run-70/"), 0u);
  CAF_CHECK_EQUAL(kill_leftovers(""), 0u);
  CAF_CHECK(!dead(c.pid));
  CAF_CHECK_EQUAL(kill_leftovers("run-7/"), 2u);
  CAF_CHECK(dead(grandchild));
  CAF_CHECK_EQUAL(wait_for(c.pid).signal, SIGKILL);
  // run() hands its label down, with a unique suffix.
  auto o = sh("echo $TASKFORCE_PROC_TOKEN");
  o.label = "run-8/t2/";
  auto r = run(o);
  CAF_CHECK_EQUAL(r.tail.rfind("run-8/t2/#", 0), 0u);
}

CAF_TEST(runs on several threads at once keep their own results) {
  std::vector<std::thread> threads;
  std::vector<run_result> results(6);
  for (size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([i, &results] {
      auto o = sh("sleep 0.1; echo " + std::to_string(i) + "; exit "
                  + std::to_string(i));
      results[i] = run(o);
    });
  for (auto& t : threads)
    t.join();
  for (size_t i = 0; i < results.size(); ++i) {
    CAF_CHECK_EQUAL(results[i].exit_code, static_cast<int>(i));
    CAF_CHECK_EQUAL(results[i].tail, std::to_string(i) + "\n");
  }
}

CAF_TEST(kill_running stops a command by its mark from another thread) {
  // A command that ignores TERM and keeps a child that left its group: the
  // owner knows only the mark, shares nothing with the runner.
  auto o = sh("trap '' TERM; setsid sleep 60 & echo pid:$!; sleep 60");
  o.kill_grace = 30s;
  o.mark = new_mark("kill-running/");
  CAF_CHECK(!kill_running(o.mark)); // not started yet: nothing to kill
  std::atomic<bool> child_up{false};
  o.output_interval = 0ms;
  o.on_output = [&](const std::string& tail) {
    if (tail.find("pid:") != std::string::npos)
      child_up = true;
  };
  std::thread stopper([&child_up, mark = o.mark] {
    while (!child_up || !kill_running(mark))
      std::this_thread::sleep_for(5ms);
  });
  auto r = run(o);
  stopper.join();
  CAF_CHECK_EQUAL(r.signal, SIGKILL);
  CAF_CHECK_LESS(r.duration, 5000ms);
  auto pids = printed_pids(r.tail);
  CAF_REQUIRE_EQUAL(pids.size(), 1u);
  CAF_CHECK(dead(pids[0]));
  // Once the run is over its mark names nothing any more.
  CAF_CHECK(!kill_running(o.mark));
}

CAF_TEST(output progress is bounded in size and rate and the head is kept) {
  auto o = sh("echo banner-line; for i in 1 2 3 4 5 6; do "
              "printf 'chunk %s %0300d\\n' $i 0; sleep 0.05; done");
  o.head_bytes = 11;
  o.output_bytes = 64;
  // However the writes are spread in time, one call per hour is one call.
  o.output_interval = std::chrono::hours(1);
  std::vector<std::string> seen;
  o.on_output = [&](const std::string& tail) {
    seen.push_back(tail);
  };
  auto r = run(o);
  CAF_CHECK_EQUAL(r.exit_code, 0);
  CAF_CHECK_EQUAL(r.head, "banner-line");
  CAF_REQUIRE_EQUAL(seen.size(), 1u);
  CAF_CHECK_LESS_OR_EQUAL(seen[0].size(), 64u);
  // It was the end of the output at the time.
  CAF_CHECK(r.tail.find(seen[0]) != std::string::npos);
  // The final tail is the run's, whatever progress showed.
  CAF_CHECK(r.tail.find("chunk 6") != std::string::npos);
}

CAF_TEST(every piece of output reaches the data hook in order and whole) {
  test::temp_dir dir;
  auto o = sh("i=0; while [ $i -lt 3000 ]; do echo line$i; i=$((i+1)); done; "
              "head -c 200000 /dev/zero | tr '\\0' x; echo");
  o.log_file = (dir.path() / "stream.log").string();
  o.tail_bytes = 16;
  o.output_interval = std::chrono::hours(1);
  std::string streamed;
  size_t pieces = 0;
  o.on_data = [&](std::string_view piece) {
    streamed.append(piece);
    ++pieces;
  };
  auto r = run(o);
  CAF_CHECK_EQUAL(r.exit_code, 0);
  CAF_CHECK_GREATER(pieces, 1u);
  // Nothing skipped, however the rate limit of on_output is set.
  CAF_CHECK_EQUAL(streamed.size(), test::read_file(o.log_file).size());
  CAF_CHECK(streamed == test::read_file(o.log_file));
}

CAF_TEST(a data hook that throws loses its piece and never the run) {
  auto o = sh("echo one; sleep 0.05; echo two; exit 4");
  o.on_data = [](std::string_view) {
    throw std::runtime_error("hook broke");
  };
  auto r = run(o);
  CAF_CHECK_EQUAL(r.exit_code, 4);
  CAF_CHECK(r.tail.find("two") != std::string::npos);
}
