// A person steers a run another process drives, from a second process
// (the commands, through the driver's loopback endpoint): approve, reject,
// answer, add, send and broadcast take effect within the run (a merge commit, a
// blocked reason, a worker's inbox, an added task done), and once the driver
// exits nothing answers for it. Real binary, real repositories.
#define CAF_SUITE scenarios.live
#include <caf/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <thread>

#include "e2e/stranger.hpp"
#include "scenarios/scenario.hpp"
#include "src/cli/control_client.hpp"
#include "src/proc/spawn.hpp"
#include "src/run/control_wire.hpp"
#include "src/store/mailbox.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string state_of(const scenario& s, const std::string& id) {
  return to_string(s.task(id).state);
}

/// `taskforce run TASKS.md` in the background.
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

/// Waits until `ok()` holds (at most 30 s).
template<class F>
bool wait_until(F ok) {
  for (int i = 0; i < 300; ++i) {
    try {
      if (ok())
        return true;
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

bool in_state(const scenario& s, const std::string& id, const char* state) {
  return std::filesystem::exists(s.root / ".taskforce" / "ledger.sqlite")
         && state_of(s, id) == state;
}

run::steer_request req(run::steer_verb verb, std::string task,
                       std::string text = {}) {
  run::steer_request r;
  r.verb = verb;
  r.task = std::move(task);
  r.text = std::move(text);
  return r;
}

/// A command that waits for `flag` (at most 60 s), then writes `file`.
std::string waiter(const std::string& flag, const std::string& file) {
  return "i=0; while [ ! -f " + flag
         + " ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; echo x > "
         + file;
}

/// A connection to the Unix socket at `path`; -1 when refused.
int connect_to(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Sends `line` to the endpoint at `socket` without the driver's token, as
/// a stranger would; the reply.
std::string raw_request(const std::string& socket, const std::string& line) {
  int fd = connect_to(socket);
  std::string reply;
  if (fd >= 0) {
    auto n = ::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
    (void)n;
    char buf[4096];
    ssize_t got;
    while ((got = ::recv(fd, buf, sizeof buf, 0)) > 0)
      reply.append(buf, static_cast<size_t>(got));
  }
  if (fd >= 0)
    ::close(fd);
  return reply;
}

} // namespace

CAF_TEST(approve reject answer and add act on a live run) {
  scenario s;
  s.config_text = R"({"run": {"approvalRisks": ["high"]}})";
  auto flag = (s.dir.path() / "go.flag").string();
  s.tasks("- [ ] Risky\n  - files: risky.txt\n  - risk: high\n"
          "  - run: echo risky > risky.txt\n"
          "- [ ] Doubtful\n  - files: doubt.txt\n  - risk: high\n"
          "  - run: if [ \"$TASKFORCE_TURN\" = answer ]; then cat > doubt.txt; "
          "else echo first > doubt.txt; fi\n"
          "- [ ] Busy\n  - files: busy.txt\n  - run: "
          + waiter(flag, "busy.txt") + "\n");
  // Before any driver: nobody answers.
  CAF_CHECK(!cli::steer_live(s.root, req(run::steer_verb::approve, "t1")));
  auto child = start_run(s, "live.log");
  CAF_REQUIRE(wait_until([&] {
    return in_state(s, "t1", "review") && in_state(s, "t2", "review")
           && std::filesystem::exists(run::driver_file(s.root));
  }));
  // The endpoint's file is for its owner only.
  auto perms = std::filesystem::status(run::driver_file(s.root)).permissions();
  CAF_CHECK((perms & std::filesystem::perms::group_all)
              == std::filesystem::perms::none
            && (perms & std::filesystem::perms::others_all)
                 == std::filesystem::perms::none);
  // A stranger without the token changes nothing, nor does garbage.
  auto info = run::read_driver_file(run::driver_file(s.root));
  CAF_REQUIRE(info);
  // The endpoint is a socket in the repository's state folder.
  CAF_CHECK_EQUAL(info->socket, run::driver_socket(s.root).string());
  auto stranger = raw_request(
    info->socket, R"({"token": "guess", "verb": "approve", "task": "t1"})"
                  "\n");
  CAF_CHECK(contains(stranger, "unauthorized"));
  CAF_CHECK(contains(raw_request(info->socket, std::string(1000, '[') + "\n"),
                     "failed"));
  CAF_CHECK_EQUAL(state_of(s, "t1"), "review");
  auto before = s.first_parent_subjects().size();

  // approve: merged while the run goes on.
  auto v = s.tf({"approve", "t1"});
  CAF_CHECK_EQUAL(v.code, 0);
  CAF_CHECK(contains(v.output, "approved t1"));
  CAF_CHECK(wait_until([&] {
    return in_state(s, "t1", "done");
  }));
  CAF_CHECK(s.task("t1").merge_commit.has_value());
  CAF_CHECK_EQUAL(s.first_parent_subjects().size(), before + 1);
  CAF_CHECK(std::filesystem::exists(s.root / "risky.txt"));

  // approve on a done task: refused, naming the state.
  auto twice = s.tf({"approve", "t1"});
  CAF_CHECK_EQUAL(twice.code, 2);
  CAF_CHECK(contains(twice.output, "t1 is done"));
  auto nobody = s.tf({"approve", "t9"});
  CAF_CHECK_EQUAL(nobody.code, 2);
  CAF_CHECK(contains(nobody.output, "t9"));

  // reject: blocked with the reason, its work kept.
  auto r = s.tf({"reject", "t2", "not like this"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(state_of(s, "t2"), "blocked");
  CAF_CHECK(contains(s.task("t2").reason.value_or(""), "not like this"));
  CAF_CHECK(s.task("t2").branch.has_value());

  // answer: the same task runs again, its worker gets the answer.
  CAF_CHECK_EQUAL(s.tf({"answer", "t2", "use plan B"}).code, 0);
  CAF_REQUIRE(wait_until([&] {
    return in_state(s, "t2", "review");
  }));
  CAF_CHECK_EQUAL(s.tf({"approve", "t2"}).code, 0);
  CAF_CHECK(wait_until([&] {
    return in_state(s, "t2", "done");
  }));
  CAF_CHECK(contains(read_file(s.root / "doubt.txt"), "use plan B"));

  // add: a duplicate id is refused and adds nothing; new tasks run.
  // (Outside the repository: the main checkout stays clean for merges.)
  s.dir.write("MORE.md", "- [ ] Again\n  - id: t3\n  - files: again.txt\n"
                         "  - run: echo again > again.txt\n");
  auto dup = s.tf({"add", (s.dir.path() / "MORE.md").string()});
  CAF_CHECK_EQUAL(dup.code, 2);
  CAF_CHECK(contains(dup.output, "t3"));
  CAF_CHECK_EQUAL(s.task_rows().size(), 3u);
  s.dir.write("EXTRA.md", "- [ ] Extra\n  - id: extra\n  - files: extra.txt\n"
                          "  - run: echo extra > extra.txt\n");
  auto extra = (s.dir.path() / "EXTRA.md").string();
  CAF_CHECK_EQUAL(s.tf({"add", extra}).code, 0);
  CAF_CHECK(wait_until([&] {
    return in_state(s, "extra", "done");
  }));
  CAF_CHECK(std::filesystem::exists(s.root / "extra.txt"));
  CAF_CHECK_EQUAL(s.ledger().added_files(s.run().id),
                  std::vector<std::string>{
                    std::filesystem::weakly_canonical(extra).string()});

  // The busy task ends, so does the run; the endpoint goes with it.
  { std::ofstream{flag} << "go\n"; }
  auto st = proc::wait_for(child.pid);
  CAF_CHECK_EQUAL(st.code, 0);
  CAF_CHECK_EQUAL(to_string(s.run().state), std::string{"completed"});
  CAF_CHECK(!std::filesystem::exists(run::driver_file(s.root)));
  CAF_CHECK(!cli::steer_live(s.root, req(run::steer_verb::approve, "t1")));
}

CAF_TEST(send and broadcast reach the inbox of running workers) {
  scenario s;
  auto inbox = std::string{TASKFORCE_BINARY} + " inbox";
  // Each worker reads its inbox until the word it waits for arrives.
  auto reader = [&](const std::string& word, const std::string& file) {
    return "i=0; while [ $i -lt 600 ]; do " + inbox + " >> " + file
           + "; grep -q " + word + " " + file
           + " && break; sleep 0.1; i=$((i+1)); done";
  };
  s.tasks(
    "- [ ] One\n  - files: one.txt\n  - run: " + reader("go-one", "one.txt")
    + "\n- [ ] Two\n  - files: two.txt\n  - run: " + reader("all-go", "two.txt")
    + "\n");
  auto child = start_run(s, "mail.log");
  CAF_REQUIRE(wait_until([&] {
    return in_state(s, "t1", "running") && in_state(s, "t2", "running")
           && std::filesystem::exists(run::driver_file(s.root));
  }));
  CAF_CHECK_EQUAL(s.tf({"send", "t1", "go-one"}).code, 0);
  CAF_REQUIRE(wait_until([&] {
    return in_state(s, "t1", "done");
  }));
  CAF_CHECK(contains(read_file(s.root / "one.txt"), "go-one"));
  // send to a task that is not working: refused, naming its state.
  auto late = s.tf({"send", "t1", "more"});
  CAF_CHECK_EQUAL(late.code, 2);
  CAF_CHECK(contains(late.output, "t1 is done"));
  auto b = s.tf({"broadcast", "all-go"});
  CAF_CHECK_EQUAL(b.code, 0);
  CAF_CHECK(contains(b.output, "sent to t2"));
  auto st = proc::wait_for(child.pid);
  CAF_CHECK_EQUAL(st.code, 0);
  CAF_CHECK(contains(read_file(s.root / "two.txt"), "all-go"));
  // Each mail was delivered exactly once.
  auto db = s.ledger();
  for (auto& m : store::mailbox{db}.list(s.run().id))
    CAF_CHECK(m.delivered_ms.has_value());
}

CAF_TEST(a stale driver file does not fool a client) {
  scenario s;
  std::filesystem::create_directories(s.root / ".taskforce");
  // A killed driver's file: its socket now has nobody listening.
  run::write_driver_file(
    run::driver_file(s.root),
    {run::driver_socket(s.root).string(), "deadbeef", 999999, "r-old"});
  CAF_CHECK(!cli::steer_live(s.root, req(run::steer_verb::approve, "t1")));
  // One of an older taskforce, naming a loopback port: no driver either.
  s.write(".taskforce/driver.json",
          R"({"port": 1, "token": "deadbeef", "pid": 1, "run": "r-old"})");
  CAF_CHECK(!cli::steer_live(s.root, req(run::steer_verb::approve, "t1")));
}

CAF_TEST(a process that listens where a stale driver file points is not believed
         and gets nothing) {
  scenario s;
  std::filesystem::create_directories(s.root / ".taskforce");
  auto fake_reply = R"({"outcome":"accepted","message":"approved t1 FAKE"})";
  // The same user's process, but not the driver the file names (its pid
  // is gone): this test process listening on the recorded socket.
  auto socket = run::driver_socket(s.root).string();
  int own = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket.c_str());
  CAF_REQUIRE_EQUAL(
    ::bind(own, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  CAF_REQUIRE_EQUAL(::listen(own, 4), 0);
  run::write_driver_file(run::driver_file(s.root),
                         {socket, "the-token", 999999, "r-old"});
  CAF_CHECK(!cli::steer_live(s.root, req(run::steer_verb::approve, "t1")));
  // Nothing was sent to it: a connection waits unread in its queue.
  ::fcntl(own, F_SETFL, O_NONBLOCK);
  int conn = ::accept(own, nullptr, nullptr);
  if (conn >= 0) {
    char buf[256];
    CAF_CHECK(::recv(conn, buf, sizeof buf, MSG_DONTWAIT) <= 0);
    ::close(conn);
  }
  ::close(own);
  if (!stranger_listener::usable()) {
    CAF_MESSAGE("SKIPPED the other user's listener: needs root, setpriv and "
                "perl");
    return;
  }
  // Another user's process, named by the file as the driver.
  stranger_listener fake{false, fake_reply};
  run::write_driver_file(
    run::driver_file(s.root),
    {fake.socket().string(), "the-token", fake.pid(), "r-old"});
  CAF_CHECK(!cli::steer_live(s.root, req(run::steer_verb::approve, "t1")));
  CAF_CHECK_EQUAL(fake.received(), "");
}

CAF_TEST(idle connections to a live driver do not keep a command out) {
  scenario s;
  s.config_text = R"({"run": {"approvalRisks": ["high"]}})";
  auto flag = (s.dir.path() / "go.flag").string();
  s.tasks("- [ ] Risky\n  - files: risky.txt\n  - risk: high\n"
          "  - run: echo risky > risky.txt\n"
          "- [ ] Busy\n  - files: busy.txt\n  - run: "
          + waiter(flag, "busy.txt") + "\n");
  auto child = start_run(s, "idle.log");
  CAF_REQUIRE(wait_until([&] {
    return in_state(s, "t1", "review")
           && std::filesystem::exists(run::driver_file(s.root));
  }));
  auto info = run::read_driver_file(run::driver_file(s.root));
  CAF_REQUIRE(info);
  // More connections that say nothing than the driver serves or keeps
  // waiting at once.
  std::vector<int> idle;
  for (int i = 0; i < 100; ++i)
    if (int fd = connect_to(info->socket); fd >= 0)
      idle.push_back(fd);
  CAF_CHECK(idle.size() >= 16u);
  auto v = s.tf({"approve", "t1"});
  CAF_CHECK_EQUAL(v.code, 0);
  CAF_CHECK(contains(v.output, "approved t1"));
  for (int fd : idle)
    ::close(fd);
  { std::ofstream{flag} << "go\n"; }
  CAF_CHECK_EQUAL(proc::wait_for(child.pid).code, 0);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "done");
}

CAF_TEST(a driver stopped by ctrl c takes its endpoint along) {
  scenario s;
  auto flag = (s.dir.path() / "go.flag").string();
  s.tasks("- [ ] Busy\n  - files: busy.txt\n  - run: "
          + waiter(flag, "busy.txt") + "\n");
  auto child = start_run(s, "int.log");
  CAF_REQUIRE(wait_until([&] {
    return in_state(s, "t1", "running")
           && std::filesystem::exists(run::driver_file(s.root));
  }));
  ::kill(child.pid, SIGINT);
  CAF_CHECK_EQUAL(proc::wait_for(child.pid).code, 1);
  CAF_CHECK(!std::filesystem::exists(run::driver_file(s.root)));
  // With no driver, a command is recorded for the next resume instead.
  auto r = s.tf({"send", "t1", "later"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK(contains(r.output, "no process drives the run"));
}
