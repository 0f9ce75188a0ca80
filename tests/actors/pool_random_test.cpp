#define CAF_SUITE actors.pool_random
#define FAIL(m) CAF_FAIL(m)
#include <caf/test/dsl.hpp>

#include <cstdlib>
#include <map>
#include <random>
#include <set>

#include "actors/pool_fixture.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;

namespace {

/// The fixed seed; TASKFORCE_SEED replays another one.
uint64_t seed() {
  auto env = std::getenv("TASKFORCE_SEED");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 7411;
}

/// Follows every holder's life through a subscriber's events.
struct life_check {
  std::map<std::string, int> started;
  std::map<std::string, int> terminal;
  std::set<std::string> queued;
  size_t seen = 0;
  std::string error;

  void follow(const std::vector<pool_event>& events) {
    for (; seen < events.size(); ++seen) {
      auto& ev = events[seen];
      switch (ev.kind) {
        case pool_event_kind::queued: queued.insert(ev.holder); break;
        case pool_event_kind::started:
          queued.erase(ev.holder);
          if (++started[ev.holder] > 1 + terminal[ev.holder])
            error = "started twice without an end: " + ev.holder;
          break;
        case pool_event_kind::timed_out:
          if (queued.erase(ev.holder) == 0)
            error = "timed out but not queued: " + ev.holder;
          break;
        case pool_event_kind::released:
        case pool_event_kind::force_released:
          // Only a holder that held a permit ends with a terminal event; a
          // cancelled wait ends with its error alone.
          if (++terminal[ev.holder] > started[ev.holder])
            error = "terminal event for a holder that never held a permit: "
                    + ev.holder;
          break;
      }
    }
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(pool_random_tests, pool_fixture)

CAF_TEST(random traffic through the actor keeps the bound and leaks nothing) {
  CAF_MESSAGE("seed " << seed() << " (set TASKFORCE_SEED to replay another)");
  std::mt19937_64 rng{seed()};
  pool_config c;
  c.max_parallel = 2;
  c.mode = pool_mode::session;
  c.queue_timeout_ms = 1500;
  c.max_hold_ms = 4000;
  c.idle_memory_ms = 300;
  start(c);
  auto watcher = connect(true);
  std::vector<connection> conns{connect(), connect(), connect()};
  std::vector<std::string> sessions{"s1", "s2", "s3", "k1", "k2"};
  std::vector<std::string> holders;
  life_check life;
  auto pick = [&](auto& xs) -> auto& {
    return xs[rng() % xs.size()];
  };
  auto chance = [&](unsigned percent) {
    return rng() % 100 < percent;
  };
  size_t serial = 0;
  for (int step = 0; step < 1500; ++step) {
    auto op = rng() % 100;
    if (op < 35) {
      auto name = "h" + std::to_string(++serial);
      auto& conn = pick(conns);
      auto parent = chance(25) && !holders.empty() ? pick(holders) : "";
      acquire(conn, pick(sessions), name,
              chance(40) ? holder_kind::background : holder_kind::foreground,
              parent, chance(10) ? "bash" : "task",
              chance(30) ? pick(sessions) : "");
      holders.push_back(name);
    } else if (op < 40) {
      auto name = "a" + std::to_string(++serial);
      adopt(pick(conns), pick(sessions), name, pick(sessions));
      holders.push_back(name);
    } else if (op < 62 && !holders.empty()) {
      release(pick(holders),
              chance(50) ? release_reason::completed : release_reason::error);
    } else if (op < 67 && !holders.empty()) {
      ask<bool>(bind_atom_v, pick(holders), pick(sessions));
    } else if (op < 74) {
      ask<std::vector<std::string>>(caf::idle_atom_v, pick(sessions));
    } else if (op < 77) {
      ask<std::vector<std::string>>(end_atom_v, pick(sessions));
    } else if (op < 80) {
      // A harness dies; another one connects.
      auto& conn = pick(conns);
      caf::anon_send_exit(conn.actor, caf::exit_reason::kill);
      sched.run();
      conn = connect();
    } else {
      advance(std::chrono::milliseconds(rng() % 700));
    }
    life.follow(watcher.log->events);
    // The bound: distinct permits per pool never exceed maxParallel.
    auto st = status();
    for (auto& p : st.pools) {
      size_t owners = 0;
      for (auto& r : p.running)
        if (!r.lent)
          ++owners;
      if (owners > c.max_parallel)
        CAF_FAIL("pool " << p.key << " has " << owners << " permits in use");
      if (!p.queued.empty() && owners == 0 && p.running.empty())
        CAF_FAIL("pool " << p.key << " has waiters and nothing running");
    }
  }
  CAF_CHECK_EQUAL(life.error, "");
  // Everyone leaves.
  for (auto& conn : conns)
    ask<std::vector<std::string>>(detach_atom_v, conn.id);
  for (auto& s : sessions)
    ask<std::vector<std::string>>(end_atom_v, s);
  life.follow(watcher.log->events);
  CAF_CHECK(status().pools.empty());
  CAF_CHECK_EQUAL(life.error, "");
  size_t grants = 0;
  for (auto& [holder, n] : life.started) {
    grants += n;
    if (life.terminal[holder] != n)
      CAF_FAIL(holder << " started " << n << " times but ended "
                      << life.terminal[holder] << " times");
  }
  // Every acquire of a surviving connection got exactly one answer.
  for (auto& conn : conns) {
    std::set<std::string> answered;
    for (auto& a : conn.log->answers) {
      auto name = a[0] == '!' ? a.substr(1) : a;
      CAF_CHECK(answered.insert(name).second);
    }
  }
  CAF_MESSAGE(grants << " grants through the actor");
}

CAF_TEST_FIXTURE_SCOPE_END()

// -- on the real scheduler ----------------------------------------------------

CAF_TEST(a pool with waiters stops without hanging the actor system) {
  registered_config cfg;
  caf::actor_system sys{cfg};
  pool_config pc;
  pc.max_parallel = 1;
  auto pool = spawn_pool(sys, pc);
  caf::scoped_actor self{sys};
  acquire_request first{"s", "a", holder_kind::foreground, "", "", "", 0};
  self->request(pool, caf::infinite, acquire_atom_v, first)
    .receive(
      [](grant& g) {
        CAF_CHECK(g.counted);
      },
      [](caf::error& e) {
        CAF_FAIL(to_string(e));
      });
  acquire_request second{"s", "b", holder_kind::foreground, "", "", "", 0};
  auto pending = self->request(pool, caf::infinite, acquire_atom_v, second);
  self->send_exit(pool, caf::exit_reason::user_shutdown);
  bool failed = false;
  pending.receive(
    [](grant&) {
      CAF_FAIL("granted during shutdown");
    },
    [&](caf::error& e) {
      failed = e == caf::make_error(errc::shutting_down);
    });
  CAF_CHECK(failed);
  // Leaving this scope destroys the system: it must not wait forever.
}
