// The monitors actor on the deterministic scheduler, over a real ledger,
// with process helpers played by the test: waits that end on the wake
// pattern, on the exit or on their own time limit; kill through the mark;
// the monitor limit; refused requests that leave nothing behind; monitors
// of an owner that went away (unavailable, not killable); and a shutdown
// that kills what runs and tells nobody afterwards.
#define CAF_SUITE actors.monitor
#define FAIL(m) CAF_FAIL(m)
#include <caf/test/dsl.hpp>

#include <filesystem>
#include <memory>

#include "actors/monitor.hpp"
#include "messages/errors.hpp"
#include "messages/interfaces.hpp"
#include "src/control/monitor_store.hpp"
#include "src/store/ledger.hpp"
#include "test.hpp"
#include "unit/store_helpers.hpp"

using namespace taskforce;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct monitor_test_config : caf::actor_system_config {
  monitor_test_config() {
    add_message_types<caf::id_block::taskforce>();
    add_message_types<caf::id_block::taskforce_run>();
    add_message_types<caf::id_block::taskforce_control>();
  }
};

/// What the fake process helpers were asked and what was killed.
struct helper_book {
  std::vector<process_job> jobs;
  std::vector<caf::actor> helpers;
  std::vector<std::string> killed;
};

/// A process helper played by the test: whatever it is sent, it tells its
/// owner as its own report (holding its owner weakly, so that neither
/// keeps the other alive when the test ends).
caf::behavior fake_helper(caf::event_based_actor* self, caf::actor_addr owner) {
  return {
    [self, owner](proc_started& x) {
      self->send(caf::actor_cast<caf::actor>(owner), x);
    },
    [self, owner](proc_exited& x) {
      self->send(caf::actor_cast<caf::actor>(owner), x);
    },
  };
}

struct fixture : test_coordinator_fixture<monitor_test_config> {
  test::temp_dir repo;
  test::temp_dir outside;
  fs::path ledger = repo.path() / ".taskforce" / "ledger.sqlite";
  std::shared_ptr<helper_book> book = std::make_shared<helper_book>();
  int64_t clock = 1000;
  monitors_actor monitors;
  caf::scoped_actor listener{sys};
  std::vector<monitors_actor> spawned;

  fixture() {
    fs::create_directories(ledger.parent_path());
    store::ledger::open(ledger);
    monitors = spawn(1, "server:one");
  }

  ~fixture() {
    // The jobs' hooks hold the monitors actors: let them go.
    book->jobs.clear();
    book->helpers.clear();
    for (auto& m : spawned)
      caf::anon_send_exit(m, caf::exit_reason::kill);
    sched.run();
  }

  monitors_actor spawn(uint64_t max, const std::string& owner) {
    monitors_setup s;
    s.repository = repo.path();
    s.ledger = ledger;
    s.owner = owner;
    s.max_monitors = max;
    s.max_output_bytes = 16;
    s.spawner = [book = book](caf::actor_system& sys, process_job job) {
      auto helper = sys.spawn(fake_helper, job.owner.address());
      book->jobs.push_back(std::move(job));
      book->helpers.push_back(helper);
      return helper;
    };
    s.killer = [book = book](const std::string& mark) {
      book->killed.push_back(mark);
    };
    s.now_ms = [this] {
      return ++clock;
    };
    auto m = spawn_monitors(sys, std::move(s), false);
    sched.run();
    spawned.push_back(m);
    return m;
  }

  monitor_spec spec(std::string command, std::string pattern = {}) {
    monitor_spec s;
    s.command = std::move(command);
    s.wake_pattern = std::move(pattern);
    s.session = "s1";
    return s;
  }

  /// The answer to the last request, or the error's text.
  template<class T>
  std::variant<T, std::string> answer() {
    std::variant<T, std::string> got = std::string{"no answer"};
    self->receive(
      [&](T& x) {
        got = std::move(x);
      },
      [&](caf::error& e) {
        got = "error: " + render(e);
      },
      caf::after(0s) >> [] {});
    return got;
  }

  std::string render(const caf::error& e) {
    std::string code = e.category() == caf::atom("control")
                         ? to_string(static_cast<control_errc>(e.code()))
                         : "other";
    return code + ": " + what_of(e);
  }

  /// The error's text of the last request's answer, "no answer", or "an
  /// answer".
  template<class T>
  std::string text_of() {
    auto x = answer<T>();
    if (auto* s = std::get_if<std::string>(&x))
      return *s;
    return "an answer";
  }

  template<class T>
  T require(std::variant<T, std::string> x) {
    if (auto* s = std::get_if<std::string>(&x))
      CAF_FAIL("expected an answer, got " << *s);
    return std::get<T>(std::move(x));
  }

  /// Starts `s` and has its helper report the start.
  monitor_info start(monitor_spec s, int64_t pid = 4242) {
    self->send(monitors, start_atom::value, std::move(s));
    sched.run();
    CAF_REQUIRE(!book->helpers.empty());
    auto& job = book->jobs.back();
    self->send(book->helpers.back(), proc_started{pid, job.run.mark});
    sched.run();
    return require(answer<monitor_info>());
  }

  void exit_with(size_t helper, proc_exited x) {
    self->send(book->helpers.at(helper), std::move(x));
    sched.run();
  }

  monitor_info status(const std::string& id) {
    self->send(monitors, status_atom::value, id);
    sched.run();
    return require(answer<monitor_info>());
  }
};

/// `text` starts with what is expected; says what it was when not.
void check_prefix(bool ok, const std::string& text) {
  if (!ok)
    CAF_MESSAGE("unexpected: " << text);
  CAF_CHECK(ok);
}

proc_exited exit_code(int64_t code) {
  proc_exited x;
  x.exit_code = code;
  x.description = "exit " + std::to_string(code);
  return x;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(monitor_tests, fixture)

CAF_TEST(a monitor starts its command in its own helper with a derived log) {
  auto m = start(spec("echo hi", "ready now"));
  CAF_CHECK_EQUAL(m.id, "mon-1");
  CAF_CHECK_EQUAL(m.state, "running");
  CAF_CHECK_EQUAL(m.pid, 4242);
  CAF_CHECK(m.live);
  CAF_CHECK_EQUAL(m.cwd, ".");
  CAF_CHECK_EQUAL(
    m.log_file, (repo.path() / ".taskforce/logs/monitors/mon-1.log").string());
  auto& job = book->jobs.at(0);
  CAF_CHECK_EQUAL(job.run.argv,
                  (std::vector<std::string>{"/bin/sh", "-c", "echo hi"}));
  CAF_CHECK_EQUAL(job.run.log_file, m.log_file);
  CAF_CHECK_EQUAL(job.run.cwd, fs::canonical(repo.path()).string());
}

CAF_TEST(a wait ends with ready when the output matches the wake pattern) {
  self->send(monitors, subscribe_atom::value,
             caf::actor_cast<caf::actor>(listener));
  sched.run();
  auto m = start(spec("server", "ready now"));
  self->send(monitors, wait_atom::value, m.id, int64_t{60000});
  sched.run();
  CAF_CHECK_EQUAL(text_of<monitor_wait_result>(), "no answer");
  // The helper searches the output as it arrives, in pieces.
  auto& hook = book->jobs.at(0).run.on_data;
  CAF_REQUIRE(hook);
  hook("starting\nready");
  sched.run();
  CAF_CHECK_EQUAL(text_of<monitor_wait_result>(), "no answer");
  hook(" now\n");
  sched.run();
  auto woke = require(answer<monitor_wait_result>());
  CAF_CHECK_EQUAL(woke.reason, "ready");
  CAF_CHECK(woke.monitor.ready);
  CAF_CHECK_EQUAL(woke.monitor.state, "running");
  // A later wait answers at once.
  self->send(monitors, wait_atom::value, m.id, int64_t{60000});
  sched.run();
  CAF_CHECK_EQUAL(require(answer<monitor_wait_result>()).reason, "ready");
  // Subscribers heard the start and the wake-up.
  std::vector<std::string> kinds;
  for (;;) {
    bool got = false;
    listener->receive(
      [&](monitor_event& e) {
        kinds.push_back(e.kind);
        got = true;
      },
      caf::after(0s) >> [] {});
    if (!got)
      break;
  }
  CAF_CHECK_EQUAL(kinds, (std::vector<std::string>{"changed", "ready"}));
}

CAF_TEST(a wait with nothing happening times out at its limit and not before) {
  auto m = start(spec("sleep 100"));
  self->send(monitors, wait_atom::value, m.id, int64_t{1000});
  sched.run();
  advance_time(999ms);
  sched.run();
  CAF_CHECK_EQUAL(text_of<monitor_wait_result>(), "no answer");
  advance_time(1ms);
  sched.run();
  auto r = require(answer<monitor_wait_result>());
  CAF_CHECK_EQUAL(r.reason, "timeout");
  CAF_CHECK_EQUAL(r.monitor.state, "running");
}

CAF_TEST(an exit ends the waits and is read back by a new instance) {
  auto m = start(spec("echo out; echo err >&2; exit 7"));
  self->send(monitors, wait_atom::value, m.id, int64_t{60000});
  sched.run();
  exit_with(0, exit_code(7));
  auto r = require(answer<monitor_wait_result>());
  CAF_CHECK_EQUAL(r.reason, "exit");
  CAF_CHECK_EQUAL(r.monitor.state, "done");
  CAF_CHECK_EQUAL(r.monitor.exit_code, 7);
  CAF_CHECK(!r.monitor.live);
  // The timer of that wait fires later and changes nothing.
  advance_time(60s);
  sched.run();
  CAF_CHECK_EQUAL(text_of<monitor_wait_result>(), "no answer");
  auto other = spawn(1, "server:two");
  self->send(other, status_atom::value, m.id);
  sched.run();
  auto again = require(answer<monitor_info>());
  CAF_CHECK_EQUAL(again.state, "done");
  CAF_CHECK_EQUAL(again.exit_code, 7);
}

CAF_TEST(kill ends the group by its mark and answers killed) {
  auto m = start(spec("sleep 100"));
  self->send(monitors, kill_atom::value, m.id);
  sched.run();
  CAF_REQUIRE_EQUAL(book->killed.size(), 1u);
  CAF_CHECK_EQUAL(book->killed[0], book->jobs[0].run.mark);
  CAF_CHECK_EQUAL(text_of<monitor_info>(), "no answer");
  proc_exited x;
  x.signal = 9;
  x.description = "signal 9 (Killed)";
  exit_with(0, x);
  auto killed = require(answer<monitor_info>());
  CAF_CHECK_EQUAL(killed.state, "killed");
  CAF_CHECK(!killed.live);
  // Killing it again answers how it ended.
  self->send(monitors, kill_atom::value, m.id);
  sched.run();
  CAF_CHECK_EQUAL(require(answer<monitor_info>()).state, "killed");
}

CAF_TEST(a time limit ends a monitor as timeout) {
  auto s = spec("sleep 2");
  s.timeout_ms = 20;
  auto m = start(s);
  CAF_CHECK_EQUAL(book->jobs[0].run.timeout, 20ms);
  proc_exited x;
  x.signal = 15;
  x.timed_out = true;
  x.description = "timed out after 20 ms";
  exit_with(0, x);
  CAF_CHECK_EQUAL(status(m.id).state, "timeout");
}

CAF_TEST(a monitor over the limit is refused until one ends) {
  start(spec("sleep 100"));
  self->send(monitors, start_atom::value, spec("sleep 100"));
  sched.run();
  auto refused = answer<monitor_info>();
  CAF_REQUIRE(std::holds_alternative<std::string>(refused));
  CAF_CHECK(std::get<std::string>(refused).find("limit: Monitor limit")
            != std::string::npos);
  CAF_CHECK_EQUAL(book->jobs.size(), 1u); // nothing started
  exit_with(0, exit_code(0));
  CAF_CHECK_EQUAL(start(spec("sleep 100")).id, "mon-2");
}

CAF_TEST(bad requests are refused with the reason and leave nothing behind) {
  fs::create_symlink(outside.path(), repo.path() / "escape");
  struct bad {
    monitor_spec spec;
    std::string expected;
  };
  std::vector<bad> cases;
  cases.push_back({spec("true", "["), "bad_request: invalid wake_pattern: "});
  auto s = spec("true");
  s.cwd = outside.path().string();
  cases.push_back({s, "bad_request: cwd"});
  s.cwd = "escape";
  cases.push_back({s, "bad_request: cwd \"escape\" must be inside the "
                      "repository"});
  cases.push_back({spec(""), "bad_request: a monitor needs a command"});
  for (auto& c : cases) {
    self->send(monitors, start_atom::value, c.spec);
    sched.run();
    auto got = answer<monitor_info>();
    CAF_REQUIRE(std::holds_alternative<std::string>(got));
    auto text = std::get<std::string>(got);
    check_prefix(text.find("error: " + c.expected) == 0, text);
  }
  CAF_CHECK(book->jobs.empty());
  self->send(monitors, status_atom::value);
  sched.run();
  CAF_CHECK(require(answer<std::vector<monitor_info>>()).empty());
  self->send(monitors, status_atom::value, std::string{"mon-7"});
  sched.run();
  CAF_CHECK_EQUAL(text_of<monitor_info>(),
                  "error: not_found: no monitor mon-7");
}

CAF_TEST(a monitor left running by a server that went away is unavailable) {
  {
    auto db = store::ledger::open(ledger);
    control::monitor_store store{db, repo.path()};
    control::new_monitor m;
    m.command = "sleep 1000";
    store.create(m, "server:crashed", 8, 500);
    store.set_pid("mon-1", 999999, 501);
  }
  auto fresh = spawn(1, "server:fresh");
  self->send(fresh, status_atom::value, std::string{"mon-1"});
  sched.run();
  auto m = require(answer<monitor_info>());
  CAF_CHECK_EQUAL(m.state, "unavailable");
  CAF_CHECK(!m.live);
  CAF_CHECK_EQUAL(
    m.log_file, (repo.path() / ".taskforce/logs/monitors/mon-1.log").string());
  self->send(fresh, kill_atom::value, std::string{"mon-1"});
  sched.run();
  auto refused = text_of<monitor_info>();
  check_prefix(refused.find("error: unavailable: monitor mon-1 cannot "
                            "be killed")
                 == 0,
               refused);
  CAF_CHECK(book->killed.empty());
  // It does not count against the limit of 1.
  self->send(fresh, start_atom::value, spec("true"));
  sched.run();
  CAF_CHECK_EQUAL(book->jobs.size(), 1u);
}

CAF_TEST(a start whose record fails is refused and its process killed) {
  {
    test::raw_db raw{ledger};
    CAF_REQUIRE_EQUAL(raw.exec("CREATE TRIGGER no_pid BEFORE UPDATE OF pid ON "
                               "monitors BEGIN SELECT RAISE(ABORT, 'disk "
                               "says no'); END;"),
                      0);
  }
  self->send(monitors, start_atom::value, spec("sleep 100"));
  sched.run();
  self->send(book->helpers.at(0), proc_started{4242, book->jobs[0].run.mark});
  sched.run();
  auto got = text_of<monitor_info>();
  check_prefix(got.find("error: io: monitor mon-1 was stopped") == 0, got);
  CAF_REQUIRE_EQUAL(book->killed.size(), 1u);
  CAF_CHECK_EQUAL(book->killed[0], book->jobs[0].run.mark);
  exit_with(0, exit_code(-1));
  CAF_CHECK_EQUAL(status("mon-1").state, "killed");
  // Nothing of it is left live: the limit of 1 admits the next.
  self->send(monitors, start_atom::value, spec("true"));
  sched.run();
  CAF_CHECK_EQUAL(book->jobs.size(), 2u);
}

CAF_TEST(read returns the log from an offset capped at the output limit) {
  auto m = start(spec("printer"));
  fs::create_directories(fs::path{m.log_file}.parent_path());
  std::ofstream(m.log_file) << "0123456789abcdefghijklmnopqrstuvwxyz";
  self->send(monitors, read_atom::value, m.id, int64_t{4}, int64_t{0});
  sched.run();
  auto out = require(answer<monitor_output>());
  CAF_CHECK_EQUAL(out.data, "456789abcdefghij"); // 16 bytes, the cap
  CAF_CHECK_EQUAL(out.next_offset, 20);
  CAF_CHECK_EQUAL(out.size, 36);
  CAF_CHECK(!out.eof);
  exit_with(0, exit_code(0));
  self->send(monitors, read_atom::value, m.id, int64_t{30}, int64_t{100});
  sched.run();
  out = require(answer<monitor_output>());
  CAF_CHECK_EQUAL(out.data, "uvwxyz");
  CAF_CHECK(out.eof);
}

CAF_TEST(a shutdown kills what runs and tells subscribers nothing more) {
  self->send(monitors, subscribe_atom::value,
             caf::actor_cast<caf::actor>(listener));
  sched.run();
  start(spec("sleep 100"));
  listener->receive([](monitor_event&) {}, caf::after(0s) >> [] {});
  caf::anon_send_exit(monitors, caf::exit_reason::user_shutdown);
  sched.run();
  CAF_CHECK_EQUAL(book->killed.size(), 1u);
  // The helper's late report goes nowhere.
  exit_with(0, exit_code(0));
  bool late = false;
  listener->receive(
    [&](monitor_event&) {
      late = true;
    },
    caf::after(0s) >> [] {});
  CAF_CHECK(!late);
  auto db = store::ledger::open(ledger);
  control::monitor_store store{db, repo.path()};
  CAF_CHECK_EQUAL(to_string(store.require("mon-1").state),
                  std::string{"killed"});
}

CAF_TEST_FIXTURE_SCOPE_END()
