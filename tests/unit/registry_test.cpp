// The process registry: records on disk written before a command starts,
// recovery after a crash by the mark every descendant inherits (never by a
// group id or a mark alone that could name somebody else), and the kill of
// everything from a signal handler, with no cap on the number of groups.
#define CAF_SUITE unit.registry
#include <caf/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
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
namespace fs = std::filesystem;

namespace {

bool gone(pid_t pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

/// Dead: gone, or a zombie waiting for its parent.
bool dead(pid_t pid) {
  return gone(pid) || is_zombie(pid);
}

/// The numbers after "pid:" at the start of lines of `text`.
std::vector<pid_t> printed_pids(const std::string& text) {
  std::vector<pid_t> pids;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("pid:", 0) == 0)
      pids.push_back(std::stoi(line.substr(4)));
  return pids;
}

/// Waits (at most 30 s, polling) until `done()` holds.
template<class F>
bool eventually(F done) {
  auto give_up = std::chrono::steady_clock::now() + 30s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up)
      return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

std::vector<std::string> names_in(const fs::path& folder) {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(folder, ec))
    names.push_back(e.path().filename().string());
  return names;
}

/// A process in a group of its own with `env` (none: unmarked).
child start_sleeper(std::vector<std::pair<std::string, std::string>> env) {
  spawn_options so;
  so.argv = {"sleep", "60"};
  so.env = std::move(env);
  so.in = stdio::null();
  auto c = spawn(so);
  // The spawn returns while the kernel still builds the new program's
  // environment, which /proc shows empty until then.
  auto environ = "/proc/" + std::to_string(c.pid) + "/environ";
  eventually([&] {
    return !test::read_file(environ).empty();
  });
  return c;
}

void stop(const child& c) {
  ::kill(c.pid, SIGKILL);
  wait_for(c.pid);
}

} // namespace

CAF_TEST(a run is recorded on disk before it starts and forgotten after) {
  test::temp_dir dir;
  auto folder = dir.path() / "procs";
  run_options o;
  o.argv
    = {"sh", "-c", "head -n 1 \"$0\"/*; echo \"token $TASKFORCE_PROC_TOKEN\"",
       folder.string()};
  o.label = "run-1/t1/";
  o.record_folder = folder.string();
  auto r = run(o);
  CAF_REQUIRE(r.success());
  // The record's first line is the mark the command carries.
  std::istringstream lines{r.tail};
  std::string recorded, token;
  std::getline(lines, recorded);
  std::getline(lines, token);
  CAF_CHECK_EQUAL(recorded.rfind("run-1/t1/#", 0), 0u);
  CAF_CHECK_EQUAL(token, "token " + recorded);
  CAF_CHECK_EQUAL(names_in(folder), std::vector<std::string>{});
  // A folder that cannot be written stops the run before anything starts.
  dir.write("blocked", "a file, not a folder");
  o.record_folder = (dir.path() / "blocked" / "procs").string();
  o.argv = {"sh", "-c", "echo ran > \"$0\"", (dir.path() / "ran").string()};
  try {
    run(o);
    CAF_FAIL("ran without its record");
  } catch (const spawn_error& e) {
    CAF_CHECK_NOT_EQUAL(std::string{e.what()}.find("cannot record"),
                        std::string::npos);
  }
  CAF_CHECK(!fs::exists(dir.path() / "ran"));
}

CAF_TEST(recovery kills what a crashed runner left in its group and out) {
  test::temp_dir dir;
  auto folder = dir.path() / "procs";
  auto log = dir.path() / "out.log";
  // The runner: another process, killed while its command runs with
  // descendants in every place a command can put them (the last one cleared
  // its mark but stayed in the group).
  pid_t runner = ::fork();
  CAF_REQUIRE(runner >= 0);
  if (runner == 0) {
    run_options o;
    o.argv = {"sh", "-c",
              "setsid sleep 60 & echo pid:$!; sleep 60 & echo pid:$!; "
              "nohup sleep 60 >/dev/null 2>&1 & echo pid:$!; "
              "env -u TASKFORCE_PROC_TOKEN sleep 60 & echo pid:$!; "
              "echo pid:$$; echo ready; wait"};
    o.log_file = log.string();
    o.record_folder = folder.string();
    o.label = "crashed/t1/";
    try {
      run(o);
    } catch (...) {
    }
    ::_exit(0);
  }
  // Ready once the four are sleeping (the last one without its mark).
  auto sleeping = [](pid_t pid) {
    using namespace std::string_literals;
    return test::read_file("/proc/" + std::to_string(pid) + "/cmdline")
           == "sleep\0"
              "60\0"s;
  };
  CAF_REQUIRE(eventually([&] {
    auto pids = printed_pids(test::read_file(log));
    return pids.size() == 5
           && std::all_of(pids.begin(), pids.end() - 1, sleeping);
  }));
  ::kill(runner, SIGKILL);
  ::waitpid(runner, nullptr, 0);
  auto pids = printed_pids(test::read_file(log));
  CAF_REQUIRE_EQUAL(pids.size(), 5u);
  for (auto pid : pids)
    CAF_CHECK(!dead(pid));
  CAF_REQUIRE_EQUAL(names_in(folder).size(), 1u);
  // Four carry the mark; the fifth goes with the group they are in.
  CAF_CHECK_EQUAL(recover_leftovers(folder.string()), 4u);
  for (auto pid : pids)
    CAF_CHECK(dead(pid));
  CAF_CHECK_EQUAL(names_in(folder), std::vector<std::string>{});
  CAF_CHECK_EQUAL(recover_leftovers(folder.string()), 0u);
  CAF_CHECK_EQUAL(recover_leftovers((dir.path() / "none").string()), 0u);
}

CAF_TEST(recovery never kills by a reused group id or a mark alone) {
  test::temp_dir dir;
  auto folder = dir.path() / "procs";
  auto other = dir.path() / "other-repository" / "procs";
  fs::create_directories(folder);
  fs::create_directories(other);
  // Somebody else's process now has the group id a record names.
  auto stranger = start_sleeper({});
  // A mark that the record's is a prefix of.
  auto near = start_sleeper({{mark_variable, "run/t1/#00ff-10"}});
  // Another repository's worker, recorded in its own folder.
  auto neighbour = start_sleeper({{mark_variable, "run/t1/#00ff-2"}});
  std::ofstream{folder / "00ff-1"} << "run/t1/#00ff-1\n"
                                   << stranger.pid << "\n";
  std::ofstream{other / "00ff-2"} << "run/t1/#00ff-2\n"
                                  << neighbour.pid << "\n";
  CAF_CHECK_EQUAL(recover_leftovers(folder.string()), 0u);
  CAF_CHECK(!dead(stranger.pid));
  CAF_CHECK(!dead(near.pid));
  CAF_CHECK(!dead(neighbour.pid));
  CAF_CHECK_EQUAL(names_in(folder), std::vector<std::string>{});
  // Its own folder's recovery finds it.
  CAF_CHECK_EQUAL(recover_leftovers(other.string()), 1u);
  CAF_CHECK_EQUAL(wait_for(neighbour.pid).signal, SIGKILL);
  CAF_CHECK(!dead(near.pid));
  stop(stranger);
  stop(near);
}

// Records are written, not fsync'd: a crash of the kernel may leave one
// empty or cut short, and with it every process it named is gone.
CAF_TEST(recovery removes records cut short and kills nobody for them) {
  test::temp_dir dir;
  auto folder = dir.path() / "procs";
  fs::create_directories(folder);
  // A live process whose mark a cut record is the start of.
  auto near = start_sleeper({{mark_variable, "run/t1/#00ff-10"}});
  std::ofstream{folder / "00ff-1"};
  std::ofstream{folder / "00ff-2"} << "run/t1/";
  std::ofstream{folder / "00ff-3"} << "run/t1/#00ff-1";
  CAF_CHECK_EQUAL(recover_leftovers(folder.string()), 0u);
  CAF_CHECK(!dead(near.pid));
  CAF_CHECK_EQUAL(names_in(folder), std::vector<std::string>{});
  stop(near);
}

CAF_TEST(marks are unique and the environment matcher reads them exactly) {
  auto a = new_mark("run/t1/");
  auto b = new_mark("run/t1/");
  CAF_CHECK_NOT_EQUAL(a, b);
  CAF_CHECK_EQUAL(a.rfind("run/t1/#", 0), 0u);
  std::string tag = instance_tag();
  CAF_CHECK_EQUAL(tag.size(), 34u); // '#', 32 hex digits, '-'
  CAF_CHECK_NOT_EQUAL(a.find(tag), std::string::npos);
  auto matches
    = [](const env_pattern& p, const std::string& env, size_t piece) {
        env_matcher m{p};
        for (size_t at = 0; at < env.size(); at += piece)
          if (m.feed(env.data() + at, std::min(piece, env.size() - at)))
            return true;
        return m.finish();
      };
  using namespace std::string_literals;
  auto env = "A=1\0TASKFORCE_PROC_TOKEN=r/t/##ab-#abc-7\0B=2"s;
  for (size_t piece : {size_t{1}, size_t{3}, size_t{1000}}) {
    CAF_CHECK(
      matches({"TASKFORCE_PROC_TOKEN=r/t/##ab-#abc-7", "", true}, env, piece));
    CAF_CHECK(
      !matches({"TASKFORCE_PROC_TOKEN=r/t/##ab-#abc-", "", true}, env, piece));
    CAF_CHECK(matches({"TASKFORCE_PROC_TOKEN=r/t/", "", false}, env, piece));
    CAF_CHECK(matches({"TASKFORCE_PROC_TOKEN=", "#abc-", false}, env, piece));
    CAF_CHECK(!matches({"TASKFORCE_PROC_TOKEN=", "#abd-", false}, env, piece));
    CAF_CHECK(!matches({"B=", "#abc-", false}, env, piece));
    CAF_CHECK(matches({"B=2", "", true}, env, piece)); // the last, no NUL
    CAF_CHECK(!matches({"A=", "", true}, env, piece));
  }
}

CAF_TEST(a signal handler kills every group however many and what left them) {
  test::temp_dir dir;
  auto list = dir.path() / "pids";
  auto ready = dir.path() / "ready";
  constexpr int groups = 600; // more than the 512 a fixed table once held
  pid_t driver = ::fork();
  CAF_REQUIRE(driver >= 0);
  if (driver == 0) {
    struct sigaction sa {};
    sa.sa_handler = [](int) {
      kill_all_running();
      ::_exit(0);
    };
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGTERM, &sa, nullptr);
    std::vector<std::unique_ptr<registered_group>> running;
    std::ofstream out(list);
    for (int i = 0; i < groups; ++i) {
      running.push_back(
        std::make_unique<registered_group>("", new_mark("many/")));
      spawn_options so;
      so.argv = {"sleep", "60"};
      so.in = stdio::null();
      out << "pid:" << running.back()->start(so).pid << '\n';
    }
    // One that leaves its group at once; its leader exits.
    running.push_back(
      std::make_unique<registered_group>("", new_mark("escaped/")));
    spawn_options so;
    so.argv = {"sh", "-c", "setsid sleep 60 & echo pid:$!"};
    so.in = stdio::null();
    so.out = stdio::file((dir.path() / "escaped").string());
    auto leader = running.back()->start(so);
    siginfo_t info;
    ::waitid(P_PID, static_cast<id_t>(leader.pid), &info, WEXITED | WNOWAIT);
    out << test::read_file(dir.path() / "escaped");
    out.close();
    std::ofstream{ready} << "ready\n";
    for (;;)
      ::pause();
  }
  CAF_REQUIRE(eventually([&] {
    return fs::exists(ready);
  }));
  auto pids = printed_pids(test::read_file(list));
  CAF_REQUIRE_EQUAL(pids.size(), static_cast<size_t>(groups + 1));
  CAF_CHECK(!dead(pids.back()));
  ::kill(driver, SIGTERM);
  int status = 0;
  ::waitpid(driver, &status, 0);
  CAF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // SIGKILLed, they die as soon as the scheduler lets them.
  auto alive = [&] {
    size_t n = 0;
    for (auto pid : pids)
      n += dead(pid) ? 0 : 1;
    return n;
  };
  CAF_CHECK(eventually([&] {
    return alive() == 0;
  }));
  CAF_CHECK_EQUAL(alive(), 0u);
  for (auto pid : pids)
    ::waitpid(pid, nullptr, WNOHANG); // ours if we are their subreaper
}

CAF_TEST(after the kill of everything nothing more starts) {
  pid_t driver = ::fork();
  CAF_REQUIRE(driver >= 0);
  if (driver == 0) {
    kill_all_running();
    try {
      run_options o;
      o.argv = {"true"};
      run(o);
    } catch (const spawn_error& e) {
      ::_exit(std::string{e.what()}.find("stopping") != std::string::npos ? 0
                                                                          : 2);
    }
    ::_exit(1);
  }
  int status = 0;
  ::waitpid(driver, &status, 0);
  CAF_CHECK(WIFEXITED(status));
  CAF_CHECK_EQUAL(WEXITSTATUS(status), 0);
}
