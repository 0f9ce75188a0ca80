// Monitors in a real ledger: ids, the live limit, ends that only the first
// writer wins, owners that went away (their rows unavailable, their paths
// derived), and the checks of a request (wake pattern, cwd).
#define CAF_SUITE unit.monitor_store
#include <caf/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "src/control/error.hpp"
#include "src/control/monitor_store.hpp"
#include "src/store/ledger.hpp"
#include "store_helpers.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::control;
namespace fs = std::filesystem;

namespace {

struct fixture {
  test::temp_dir repo;
  fs::path file = repo.path() / ".taskforce" / "ledger.sqlite";
  store::ledger db = [this] {
    fs::create_directories(file.parent_path());
    return store::ledger::open(file);
  }();
  monitor_store monitors{db, repo.path()};

  new_monitor sample(std::string command = "sleep 30") {
    new_monitor m;
    m.command = std::move(command);
    return m;
  }

  int64_t events(const std::string& id, const std::string& kind) {
    test::raw_db raw{file};
    return raw.scalar("SELECT count(*) FROM bg_events WHERE monitor_id = '" + id
                      + "' AND kind = '" + kind + "'");
  }
};

template<class F>
std::string refusal(F f, control_errc expected) {
  try {
    f();
  } catch (const control_error& e) {
    CAF_CHECK_EQUAL(static_cast<int>(e.code()), static_cast<int>(expected));
    return e.what();
  }
  CAF_FAIL("not refused");
  return {};
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(monitor_store_tests, fixture)

CAF_TEST(monitors are numbered and their creation is an event) {
  auto a = monitors.create(sample(), "server:a", 8, 1000);
  auto b = monitors.create(sample(), "server:a", 8, 1001);
  CAF_CHECK_EQUAL(a.id, "mon-1");
  CAF_CHECK_EQUAL(b.id, "mon-2");
  CAF_CHECK_EQUAL(to_string(a.state), std::string{"running"});
  CAF_CHECK_EQUAL(events("mon-1", "monitor.created"), 1);
  CAF_CHECK_EQUAL(monitors.list().size(), 2u);
  CAF_CHECK_EQUAL(monitors.require("mon-2").created_ms, 1001);
  auto missing = refusal(
    [&] {
      monitors.require("mon-9");
    },
    control_errc::not_found);
  CAF_CHECK(missing.find("mon-9") != std::string::npos);
}

CAF_TEST(more live monitors than the limit are refused until one ends) {
  monitors.create(sample(), "server:a", 1, 1000);
  auto why = refusal(
    [&] {
      monitors.create(sample(), "server:a", 1, 1001);
    },
    control_errc::limit);
  CAF_CHECK(why.find("Monitor limit") != std::string::npos);
  CAF_CHECK_EQUAL(monitors.list().size(), 1u); // nothing left behind
  CAF_REQUIRE(monitors.finish("mon-1", monitor_state::done, 0, 1002));
  CAF_CHECK_EQUAL(monitors.create(sample(), "server:a", 1, 1003).id, "mon-2");
}

CAF_TEST(the first end wins and a later one writes nothing) {
  monitors.create(sample(), "server:a", 8, 1000);
  auto pid = monitors.set_pid("mon-1", 4242, 1001);
  CAF_CHECK_EQUAL(pid.pid, std::optional<int64_t>{4242});
  auto done = monitors.finish("mon-1", monitor_state::done, 7, 1002);
  CAF_REQUIRE(done);
  CAF_CHECK_EQUAL(done->exit_code, std::optional<int64_t>{7});
  CAF_CHECK(
    !monitors.finish("mon-1", monitor_state::killed, std::nullopt, 1003));
  auto now = monitors.require("mon-1");
  CAF_CHECK_EQUAL(to_string(now.state), std::string{"done"});
  CAF_CHECK_EQUAL(now.exit_code, std::optional<int64_t>{7});
  CAF_CHECK_EQUAL(events("mon-1", "monitor.done"), 1);
  CAF_CHECK_EQUAL(events("mon-1", "monitor.killed"), 0);
  refusal(
    [&] {
      monitors.set_pid("mon-1", 1, 1004);
    },
    control_errc::invalid_state);
}

CAF_TEST(the wake - up is recorded once) {
  monitors.create(sample(), "server:a", 8, 1000);
  CAF_CHECK(!monitors.is_ready("mon-1"));
  CAF_CHECK(monitors.mark_ready("mon-1", 1001));
  CAF_CHECK(!monitors.mark_ready("mon-1", 1002));
  CAF_CHECK(monitors.is_ready("mon-1"));
  CAF_CHECK_EQUAL(events("mon-1", "monitor.ready"), 1);
}

CAF_TEST(a running row of an owner that went away becomes unavailable) {
  monitors.create(sample(), "server:gone", 8, 1000);
  monitors.create(sample(), "server:me", 8, 1001);
  {
    // A supervisor that is still there holds its lock.
    owner_lock held{repo.path(), "supervisor:alive", ::getpid()};
    monitors.create(sample(), "supervisor:alive", 8, 1002);
    auto changed = monitors.reconcile("server:me", 1003);
    CAF_REQUIRE_EQUAL(changed.size(), 1u);
    CAF_CHECK_EQUAL(changed[0].id, "mon-1");
    CAF_CHECK_EQUAL(to_string(changed[0].state), std::string{"unavailable"});
    CAF_CHECK(monitors.is_live(monitors.require("mon-3"), "server:me"));
    CAF_CHECK_EQUAL(owner_lock::pid_of(repo.path(), "supervisor:alive"),
                    ::getpid());
  }
  // Its lock is free now: it went away too.
  auto changed = monitors.reconcile("server:me", 1004);
  CAF_REQUIRE_EQUAL(changed.size(), 1u);
  CAF_CHECK_EQUAL(changed[0].id, "mon-3");
  CAF_CHECK(monitors.is_live(monitors.require("mon-2"), "server:me"));
  CAF_CHECK(!monitors.is_live(monitors.require("mon-1"), "server:me"));
  CAF_CHECK(monitors.reason_of("mon-1").find("server:gone")
            != std::string::npos);
  CAF_CHECK_EQUAL(events("mon-1", "monitor.unavailable"), 1);
  // An unavailable monitor never ends later.
  CAF_CHECK(!monitors.finish("mon-1", monitor_state::done, 0, 1005));
  // And it no longer counts against the limit.
  CAF_CHECK_EQUAL(monitors.create(sample(), "server:me", 2, 1006).id, "mon-4");
}

CAF_TEST(the paths of a monitor are derived from its id) {
  CAF_CHECK_EQUAL(monitor_log_file(repo.path(), "mon-3"),
                  repo.path() / ".taskforce/logs/monitors/mon-3.log");
  CAF_CHECK_EQUAL(owner_lock_file(repo.path(), "supervisor:ab"),
                  repo.path() / ".taskforce/monitors/supervisor-ab.lock");
}

CAF_TEST(a lock is held while its owner lives and free after) {
  auto file = owner_lock_file(repo.path(), "server:x");
  CAF_CHECK(!lock_held(file));
  {
    owner_lock lock{repo.path(), "server:x", 77};
    CAF_CHECK(lock_held(file));
    refusal(
      [&] {
        owner_lock second(repo.path(), "server:x", 78);
      },
      control_errc::unavailable);
  }
  CAF_CHECK(!lock_held(file));
}

CAF_TEST(an invalid wake pattern is refused with the regex error) {
  auto why = refusal(
    [] {
      compile_wake_pattern("[");
    },
    control_errc::bad_request);
  CAF_CHECK(why.rfind("invalid wake_pattern: ", 0) == 0);
  CAF_CHECK_GREATER(why.size(), std::string{"invalid wake_pattern: "}.size());
  auto long_one = refusal(
    [] {
      compile_wake_pattern(std::string(max_wake_pattern_chars + 1, 'a'));
    },
    control_errc::bad_request);
  CAF_CHECK(long_one.find("invalid wake_pattern") != std::string::npos);
  compile_wake_pattern(std::string(max_wake_pattern_chars, 'a'));
}

CAF_TEST(the wake pattern is found across pieces of output) {
  wake_matcher m{"ready now"};
  CAF_CHECK(!m.feed("starting...\nrea"));
  CAF_CHECK(!m.feed("dy"));
  CAF_CHECK(m.feed(" now\n"));
  CAF_CHECK(m.matched());
  CAF_CHECK(m.feed("anything"));
  wake_matcher never{"^never$"};
  for (int i = 0; i < 100; ++i)
    CAF_CHECK(!never.feed(std::string(10000, 'x')));
}

CAF_TEST(a pathological pattern on a large output neither crashes nor matches) {
  wake_matcher m{"(.|\n)*z"};
  CAF_CHECK(!m.feed(std::string(20000, 'a')));
  CAF_CHECK(m.feed("z"));
}

CAF_TEST(a request is checked before anything is written) {
  test::temp_dir outside;
  fs::create_directories(repo.path() / "sub");
  fs::create_symlink(outside.path(), repo.path() / "escape");
  auto check = [&](std::string cwd, std::string pattern = {}) {
    return check_monitor_spec(repo.path(), "echo hi", cwd, pattern, 0, "s1");
  };
  CAF_CHECK_EQUAL(check("sub").cwd, "sub");
  CAF_CHECK_EQUAL(check("").cwd, ".");
  CAF_CHECK_EQUAL(check("sub", "ready").wake_pattern,
                  std::optional<std::string>{"ready"});
  for (auto cwd :
       {outside.path().string(), std::string{"escape"}, std::string{"../x"}}) {
    auto why = refusal(
      [&] {
        check(cwd);
      },
      control_errc::bad_request);
    CAF_CHECK(why.find("inside the repository") != std::string::npos);
  }
  refusal(
    [&] {
      check("sub", "[");
    },
    control_errc::bad_request);
  refusal(
    [&] {
      check_monitor_spec(repo.path(), "  ", "", "", 0, "");
    },
    control_errc::bad_request);
  refusal(
    [&] {
      check_monitor_spec(repo.path(), "true", "", "", -1, "");
    },
    control_errc::bad_request);
  CAF_CHECK(monitors.list().empty());
}

CAF_TEST_FIXTURE_SCOPE_END()
