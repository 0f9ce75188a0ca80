// Monitors with real processes on the real scheduler: the wake pattern
// found in a live process's output, an exit code with stdout and stderr in
// one log read back by a later server, a time limit and a kill that end
// the whole group (descendants that ignore TERM and left the group too).
#define CAF_SUITE scenarios.monitors
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <fstream>

#include <caf/all.hpp>

#include "actors/monitor.hpp"
#include "actors/runtime_config.hpp"
#include "messages/errors.hpp"
#include "src/control/monitor_store.hpp"
#include "src/store/ledger.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct fixture {
  runtime_config cfg{2, false};
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  test::temp_dir repo;
  fs::path ledger = repo.path() / ".taskforce" / "ledger.sqlite";

  fixture() {
    fs::create_directories(ledger.parent_path());
  }

  monitors_actor spawn(const std::string& owner) {
    monitors_setup s;
    s.repository = repo.path();
    s.ledger = ledger;
    s.owner = owner;
    s.max_monitors = 4;
    s.max_output_bytes = 4096;
    s.kill_grace = 200ms;
    return spawn_monitors(sys, std::move(s));
  }

  template<class T, class... Ts>
  T ask(const monitors_actor& m, Ts&&... xs) {
    T result;
    self->request(m, 60s, std::forward<Ts>(xs)...)
      .receive(
        [&](T& x) {
          result = std::move(x);
        },
        [&](caf::error& e) {
          CAF_FAIL("refused: " << what_of(e));
        });
    return result;
  }

  monitor_spec spec(std::string command, std::string pattern = {}) {
    monitor_spec s;
    s.command = std::move(command);
    s.wake_pattern = std::move(pattern);
    return s;
  }

  pid_t pid_in(const std::string& name) {
    pid_t pid = -1;
    test::eventually([&] {
      std::ifstream in(repo.path() / name);
      return static_cast<bool>(in >> pid);
    });
    return pid;
  }
};

bool alive(pid_t pid) {
  return pid > 0 && ::kill(pid, 0) == 0;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(monitors_tests, fixture)

CAF_TEST(a live process wakes its waiter with ready and its output reads) {
  auto monitors = spawn("server:a");
  auto m = ask<monitor_info>(monitors, start_atom::value,
                             spec("echo starting; sleep 0.2; echo ready now; "
                                  "exec sleep 60",
                                  "ready now"));
  auto r = ask<monitor_wait_result>(monitors, wait_atom::value, m.id,
                                    int64_t{60000});
  CAF_CHECK_EQUAL(r.reason, "ready");
  CAF_CHECK_EQUAL(r.monitor.state, "running");
  auto out = ask<monitor_output>(monitors, read_atom::value, m.id, int64_t{0},
                                 int64_t{0});
  CAF_CHECK(out.data.find("ready now") != std::string::npos);
  auto killed = ask<monitor_info>(monitors, kill_atom::value, m.id);
  CAF_CHECK_EQUAL(killed.state, "killed");
  CAF_CHECK(!alive(static_cast<pid_t>(m.pid)));
  caf::anon_send_exit(monitors, caf::exit_reason::kill);
}

CAF_TEST(an exit code and both streams are kept and read by a later server) {
  auto monitors = spawn("server:a");
  auto m = ask<monitor_info>(monitors, start_atom::value,
                             spec("echo to-out; echo to-err >&2; exit 7"));
  auto r = ask<monitor_wait_result>(monitors, wait_atom::value, m.id,
                                    int64_t{60000});
  CAF_CHECK_EQUAL(r.reason, "exit");
  CAF_CHECK_EQUAL(r.monitor.state, "done");
  CAF_CHECK_EQUAL(r.monitor.exit_code, 7);
  auto log = test::read_file(r.monitor.log_file);
  CAF_CHECK(log.find("to-out") != std::string::npos);
  CAF_CHECK(log.find("to-err") != std::string::npos);
  caf::anon_send_exit(monitors, caf::exit_reason::kill);
  self->wait_for(monitors);
  auto later = spawn("server:b");
  auto again = ask<monitor_info>(later, status_atom::value, m.id);
  CAF_CHECK_EQUAL(again.state, "done");
  CAF_CHECK_EQUAL(again.exit_code, 7);
  caf::anon_send_exit(later, caf::exit_reason::kill);
}

CAF_TEST(a time limit ends the whole group as timeout) {
  auto monitors = spawn("server:a");
  auto s = spec("trap '' TERM; setsid sh -c 'trap \"\" TERM; echo $$ > "
                "desc.pid; while :; do sleep 0.05; done' & "
                "while :; do sleep 0.05; done");
  s.timeout_ms = 300;
  auto m = ask<monitor_info>(monitors, start_atom::value, s);
  auto r = ask<monitor_wait_result>(monitors, wait_atom::value, m.id,
                                    int64_t{60000});
  CAF_CHECK_EQUAL(r.reason, "exit");
  CAF_CHECK_EQUAL(r.monitor.state, "timeout");
  auto pid = pid_in("desc.pid");
  CAF_REQUIRE_GREATER(pid, 0);
  CAF_CHECK(!alive(pid));
  caf::anon_send_exit(monitors, caf::exit_reason::kill);
}

CAF_TEST(kill ends a descendant that ignores TERM and left the group) {
  auto monitors = spawn("server:a");
  auto m = ask<monitor_info>(
    monitors, start_atom::value,
    spec("setsid sh -c 'trap \"\" TERM; echo $$ > desc.pid; "
         "while :; do sleep 0.05; done' & exec sleep 60"));
  auto pid = pid_in("desc.pid");
  CAF_REQUIRE_GREATER(pid, 0);
  CAF_CHECK(alive(pid));
  auto killed = ask<monitor_info>(monitors, kill_atom::value, m.id);
  CAF_CHECK_EQUAL(killed.state, "killed");
  CAF_CHECK(!alive(pid));
  caf::anon_send_exit(monitors, caf::exit_reason::kill);
}

CAF_TEST_FIXTURE_SCOPE_END()
