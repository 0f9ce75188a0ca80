#define CAF_SUITE actors.watchdog
#define FAIL(m) CAF_FAIL(m)
#include <caf/test/dsl.hpp>

#include <memory>
#include <vector>

#include "actors/watchdog.hpp"

using namespace taskforce;
using namespace std::chrono_literals;

namespace {

struct registered_config : caf::actor_system_config {
  registered_config() {
    add_message_types<caf::id_block::taskforce>();
  }
};

using expiries = std::vector<std::pair<uint64_t, uint64_t>>;

/// An owner that arms timers on the test's behalf and records expiries.
caf::behavior owner(caf::event_based_actor* self, watchdog_actor wd,
                    std::shared_ptr<expiries> log) {
  return {
    [=](arm_atom, uint64_t id, uint64_t generation, caf::timespan delay) {
      self->send(wd, arm_atom_v, id, generation, delay);
    },
    [=](disarm_atom, uint64_t id) {
      self->send(wd, disarm_atom_v, id);
    },
    [=](expired_atom, uint64_t id, uint64_t generation) {
      log->emplace_back(id, generation);
    },
  };
}

struct fixture : test_coordinator_fixture<registered_config> {
  fixture() {
    wd = sys.spawn(watchdog);
    a = sys.spawn(owner, wd, a_log);
    b = sys.spawn(owner, wd, b_log);
    sched.run();
  }

  ~fixture() override {
    for (auto& x : {caf::actor_cast<caf::actor>(wd), a, b})
      caf::anon_send_exit(x, caf::exit_reason::kill);
    sched.run();
  }

  void tell(const caf::actor& who, caf::message msg) {
    self->send(who, std::move(msg));
    sched.run();
  }

  watchdog_actor wd;
  std::shared_ptr<expiries> a_log = std::make_shared<expiries>();
  std::shared_ptr<expiries> b_log = std::make_shared<expiries>();
  caf::actor a;
  caf::actor b;
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(watchdog_tests, fixture)

CAF_TEST(a due timer reaches its owner with its id and generation) {
  tell(a, caf::make_message(arm_atom_v, uint64_t{1}, uint64_t{7},
                            caf::timespan{100ms}));
  advance_time(99ms);
  sched.run();
  CAF_CHECK(a_log->empty());
  advance_time(1ms);
  sched.run();
  CAF_CHECK(*a_log == (expiries{{1, 7}}));
  // It fires once.
  advance_time(1h);
  sched.run();
  CAF_CHECK_EQUAL(a_log->size(), 1u);
}

CAF_TEST(re arming replaces the timer and the stale one is ignored) {
  tell(a, caf::make_message(arm_atom_v, uint64_t{1}, uint64_t{1},
                            caf::timespan{100ms}));
  tell(a, caf::make_message(arm_atom_v, uint64_t{1}, uint64_t{2},
                            caf::timespan{200ms}));
  advance_time(100ms);
  sched.run();
  CAF_CHECK(a_log->empty());
  advance_time(100ms);
  sched.run();
  CAF_CHECK(*a_log == (expiries{{1, 2}}));
}

CAF_TEST(a disarmed timer never fires) {
  tell(a, caf::make_message(arm_atom_v, uint64_t{3}, uint64_t{1},
                            caf::timespan{50ms}));
  tell(a, caf::make_message(disarm_atom_v, uint64_t{3}));
  advance_time(1s);
  sched.run();
  CAF_CHECK(a_log->empty());
}

CAF_TEST(timers of different owners and ids are independent) {
  tell(a, caf::make_message(arm_atom_v, uint64_t{1}, uint64_t{1},
                            caf::timespan{30ms}));
  tell(a, caf::make_message(arm_atom_v, uint64_t{2}, uint64_t{1},
                            caf::timespan{10ms}));
  tell(b, caf::make_message(arm_atom_v, uint64_t{1}, uint64_t{5},
                            caf::timespan{20ms}));
  // b disarming its id 1 leaves a's id 1 alone.
  tell(b, caf::make_message(disarm_atom_v, uint64_t{1}));
  advance_time(30ms);
  sched.run();
  CAF_CHECK(*a_log == (expiries{{2, 1}, {1, 1}}));
  CAF_CHECK(b_log->empty());
}

CAF_TEST(a delay longer than the clock can count never fires) {
  // now + delay would overflow the clock and wrap into the past.
  tell(a, caf::make_message(arm_atom_v, uint64_t{1}, uint64_t{1},
                            caf::timespan::max()));
  tell(a, caf::make_message(arm_atom_v, uint64_t{2}, uint64_t{1},
                            caf::timespan::max() - caf::timespan{1}));
  tell(b, caf::make_message(arm_atom_v, uint64_t{1}, uint64_t{9},
                            caf::timespan{10ms}));
  advance_time(24h * 365);
  sched.run();
  CAF_CHECK(a_log->empty());
  CAF_CHECK(*b_log == (expiries{{1, 9}}));
}

CAF_TEST(the timers of an owner that exits are dropped) {
  tell(a, caf::make_message(arm_atom_v, uint64_t{1}, uint64_t{1},
                            caf::timespan{50ms}));
  tell(b, caf::make_message(arm_atom_v, uint64_t{1}, uint64_t{1},
                            caf::timespan{50ms}));
  caf::anon_send_exit(a, caf::exit_reason::kill);
  sched.run();
  using impl = caf::stateful_actor<watchdog_state, watchdog_actor::base>;
  CAF_CHECK_EQUAL(deref<impl>(wd).state.armed.size(), 1u);
  advance_time(50ms);
  sched.run();
  CAF_CHECK(a_log->empty());
  CAF_CHECK(*b_log == (expiries{{1, 1}}));
}

CAF_TEST(
  an armed timer does not keep an owner alive that nothing else references) {
  auto token = std::make_shared<int>(0);
  std::weak_ptr<int> alive = token;
  auto c = sys.spawn([token, wd = wd](caf::event_based_actor* self) {
    self->send(wd, arm_atom_v, uint64_t{1}, uint64_t{1}, caf::timespan{1h});
    return caf::behavior{[token](int) {}};
  });
  token.reset();
  sched.run();
  CAF_REQUIRE(!alive.expired());
  // The last handle goes: the owner is destroyed although its timer is
  // armed, and the watchdog forgets the timer.
  c = nullptr;
  sched.run();
  CAF_CHECK(alive.expired());
  advance_time(2h);
  sched.run();
  CAF_CHECK(a_log->empty());
}

CAF_TEST_FIXTURE_SCOPE_END()
