#define CAF_SUITE unit.spawn
#include <caf/test/unit_test.hpp>

#include <signal.h>
#include <unistd.h>

#include <string>

#include "src/proc/spawn.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::proc;

namespace {

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0)
    out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

} // namespace

CAF_TEST(the exit code passes through) {
  auto c = spawn({{"sh", "-c", "exit 3"}, {}, {}});
  auto st = wait_for(c.pid);
  CAF_CHECK_EQUAL(st.code, 3);
  CAF_CHECK_EQUAL(st.signal, 0);
  CAF_CHECK_EQUAL(to_string(st), "exit 3");
}

CAF_TEST(a pipe returns the output and the child leads its own group) {
  spawn_options o;
  o.argv = {"sh", "-c", "ps -o pgid= -p $$ | tr -d ' '; echo $$"};
  o.out = stdio::pipe();
  auto c = spawn(o);
  CAF_REQUIRE(c.stdout_fd >= 0);
  auto out = read_all(c.stdout_fd);
  CAF_CHECK(wait_for(c.pid).success());
  auto pid = std::to_string(c.pid);
  CAF_CHECK_EQUAL(out, pid + "\n" + pid + "\n");
}

CAF_TEST(working directory and environment reach the child) {
  test::temp_dir dir;
  spawn_options o;
  o.argv = {"sh", "-c", "pwd; echo \"$TF_A-$HOME\""};
  o.cwd = dir.path().string();
  o.env = {{"TF_A", "one"}, {"HOME", "/nowhere"}};
  o.out = stdio::pipe();
  auto c = spawn(o);
  auto out = read_all(c.stdout_fd);
  wait_for(c.pid);
  auto real = std::filesystem::canonical(dir.path()).string();
  CAF_CHECK_EQUAL(out, real + "\none-/nowhere\n");
}

CAF_TEST(files are truncated or appended and stderr can join stdout) {
  test::temp_dir dir;
  auto log = (dir.path() / "out.log").string();
  dir.write("out.log", "old\n");
  spawn_options o;
  o.argv = {"sh", "-c", "echo a; echo b >&2"};
  o.out = stdio::file(log);
  o.err = stdio::to_stdout();
  wait_for(spawn(o).pid);
  CAF_CHECK_EQUAL(test::read_file(log), "a\nb\n");
  o.out = stdio::file(log, true);
  wait_for(spawn(o).pid);
  CAF_CHECK_EQUAL(test::read_file(log), "a\nb\na\nb\n");
}

CAF_TEST(stdin can be a pipe or dev null) {
  spawn_options o;
  o.argv = {"cat"};
  o.in = stdio::pipe();
  o.out = stdio::pipe();
  auto c = spawn(o);
  CAF_REQUIRE(::write(c.stdin_fd, "hello", 5) == 5);
  ::close(c.stdin_fd);
  CAF_CHECK_EQUAL(read_all(c.stdout_fd), "hello");
  wait_for(c.pid);
  o.in = stdio::null();
  c = spawn(o);
  CAF_CHECK_EQUAL(read_all(c.stdout_fd), "");
  wait_for(c.pid);
}

CAF_TEST(ignored signals and a blocked mask are not inherited) {
  struct sigaction ign {
  }, old_term{}, old_int{};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGTERM, &ign, &old_term);
  ::sigaction(SIGINT, &ign, &old_int);
  sigset_t block, old_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  ::pthread_sigmask(SIG_BLOCK, &block, &old_mask);
  spawn_options o;
  o.argv = {"sh", "-c", "grep -E '^(SigIgn|SigBlk)' /proc/self/status"};
  o.out = stdio::pipe();
  auto c = spawn(o);
  auto out = read_all(c.stdout_fd);
  wait_for(c.pid);
  ::sigaction(SIGTERM, &old_term, nullptr);
  ::sigaction(SIGINT, &old_int, nullptr);
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  // glibc keeps its two internal real-time signals (32, 33) ignored.
  CAF_CHECK_EQUAL(out, "SigBlk:\t0000000000000000\n"
                       "SigIgn:\t0000000180000000\n");
}

CAF_TEST(a missing program is an error naming it) {
  try {
    spawn({{"taskforce-no-such-program", "x"}, {}, {}});
    CAF_FAIL("spawn should throw");
  } catch (const spawn_error& e) {
    CAF_CHECK_EQUAL(e.code(), ENOENT);
    CAF_CHECK_EQUAL(std::string{e.what()},
                    "cannot run 'taskforce-no-such-program': No such file "
                    "or directory");
  }
}

CAF_TEST(a bad working directory or output file is an error naming it) {
  spawn_options o;
  o.argv = {"true"};
  o.cwd = "/nonexistent-dir";
  try {
    spawn(o);
    CAF_FAIL("spawn should throw");
  } catch (const spawn_error& e) {
    CAF_CHECK_EQUAL(std::string{e.what()},
                    "cannot run 'true' in '/nonexistent-dir': No such file "
                    "or directory");
  }
  o.cwd.clear();
  o.out = stdio::file("/nonexistent-dir/log");
  try {
    spawn(o);
    CAF_FAIL("spawn should throw");
  } catch (const spawn_error& e) {
    CAF_CHECK_EQUAL(std::string{e.what()},
                    "cannot run 'true': cannot open '/nonexistent-dir/log': "
                    "No such file or directory");
  }
}

CAF_TEST(a killed child reports its signal) {
  auto c = spawn({{"sleep", "10"}, {}, {}});
  ::kill(c.pid, SIGKILL);
  auto st = wait_for(c.pid);
  CAF_CHECK_EQUAL(st.signal, SIGKILL);
  CAF_CHECK_EQUAL(st.code, -1);
  CAF_CHECK(!st.success());
}
