#define CAF_SUITE actors.pool
#define FAIL(m) CAF_FAIL(m)
#include <caf/test/dsl.hpp>

#include "actors/pool_fixture.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;

namespace {

constexpr auto fg = holder_kind::foreground;
constexpr auto bg = holder_kind::background;

using names = std::vector<std::string>;

pool_config with_parallel(uint64_t n, pool_mode mode = pool_mode::session) {
  pool_config cfg;
  cfg.max_parallel = n;
  cfg.mode = mode;
  return cfg;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(pool_tests, pool_fixture)

// -- FIFO and hand-off --------------------------------------------------------

CAF_TEST(five acquirers with two permits start two at a time in FIFO order) {
  start(with_parallel(2));
  auto c = connect();
  for (auto name : {"t1", "t2", "t3", "t4", "t5"})
    acquire(c, "s", name);
  CAF_CHECK(c.log->answers == (names{"t1", "t2"}));
  CAF_CHECK_NOT_EQUAL(c.log->grants["t1"].permit, c.log->grants["t2"].permit);
  advance(10ms);
  CAF_CHECK(release("t2"));
  CAF_CHECK(c.log->answers == (names{"t1", "t2", "t3"}));
  // Direct hand-off: t3 got exactly the permit t2 gave back.
  CAF_CHECK_EQUAL(c.log->grants["t3"].permit, c.log->grants["t2"].permit);
  CAF_CHECK_EQUAL(c.log->grants["t3"].queued_ms, 10);
  CAF_CHECK(release("t1"));
  CAF_CHECK(release("t3"));
  CAF_CHECK(c.log->answers == (names{"t1", "t2", "t3", "t4", "t5"}));
  CAF_CHECK(release("t4"));
  CAF_CHECK(release("t5"));
  CAF_CHECK(status().pools.empty());
}

CAF_TEST(queued and started events say where each call stands) {
  start(with_parallel(2));
  auto c = connect();
  acquire(c, "s", "t1");
  acquire(c, "s", "t2", bg);
  acquire(c, "s", "t3");
  acquire(c, "s", "t4", bg);
  acquire(c, "s", "t5");
  CAF_CHECK_EQUAL(c.log->of(pool_event_kind::started, "t1").size(), 1u);
  CAF_CHECK_EQUAL(c.log->of(pool_event_kind::started, "t2").size(), 1u);
  struct expected_queued {
    const char* holder;
    uint64_t position;
    bool background;
  };
  for (auto x :
       {expected_queued{"t3", 1, false}, expected_queued{"t4", 2, true},
        expected_queued{"t5", 3, false}}) {
    auto evs = c.log->of(pool_event_kind::queued, x.holder);
    CAF_REQUIRE_EQUAL(evs.size(), 1u);
    CAF_CHECK_EQUAL(evs[0].position, x.position);
    CAF_CHECK_EQUAL(evs[0].of, x.position);
    CAF_CHECK_EQUAL(evs[0].running, 2u);
    CAF_CHECK_EQUAL(evs[0].background, x.background);
    CAF_CHECK_EQUAL(evs[0].session, "s");
    CAF_CHECK_EQUAL(evs[0].connection, c.id);
  }
  advance(250ms);
  release("t1");
  auto started = c.log->of(pool_event_kind::started, "t3");
  CAF_REQUIRE_EQUAL(started.size(), 1u);
  CAF_CHECK_EQUAL(started[0].queued_ms, 250);
  CAF_CHECK_EQUAL(started[0].lent, false);
  CAF_CHECK_EQUAL(c.log->of(pool_event_kind::released, "t1").size(), 1u);
}

CAF_TEST(every session has its own pool in session mode) {
  start(with_parallel(1));
  auto c = connect();
  acquire(c, "s1", "a");
  acquire(c, "s2", "b");
  CAF_CHECK(c.log->answers == (names{"a", "b"}));
}

CAF_TEST(the global pool is shared by sessions of every connection) {
  start(with_parallel(1, pool_mode::global));
  auto c1 = connect();
  auto c2 = connect();
  acquire(c1, "s1", "a");
  acquire(c2, "s2", "b");
  CAF_CHECK(c2.log->answers.empty());
  release("a");
  CAF_CHECK(c2.log->answers == (names{"b"}));
  auto st = status();
  CAF_CHECK_EQUAL(st.mode, "global");
  CAF_REQUIRE_EQUAL(st.pools.size(), 1u);
  CAF_CHECK_EQUAL(st.pools[0].key, "global");
}

// -- release triggers ---------------------------------------------------------

CAF_TEST(a background permit is released when its child goes idle) {
  start(with_parallel(1));
  auto c = connect();
  acquire(c, "s", "bgcall", bg);
  acquire(c, "s", "next");
  CAF_CHECK(
    !ask<bool>(bind_atom_v, std::string{"bgcall"}, std::string{"child-1"}));
  CAF_CHECK(ask<names>(caf::idle_atom_v, std::string{"other"}).empty());
  CAF_CHECK(ask<names>(caf::idle_atom_v, std::string{"child-1"})
            == (names{"bgcall"}));
  CAF_CHECK(c.log->answers == (names{"bgcall", "next"}));
  auto rel = c.log->of(pool_event_kind::released, "bgcall");
  CAF_REQUIRE_EQUAL(rel.size(), 1u);
  CAF_CHECK_EQUAL(rel[0].reason, release_reason::idle);
}

CAF_TEST(an idle that arrives before bind releases the permit at bind) {
  auto cfg = with_parallel(1);
  cfg.idle_memory_ms = 10000;
  start(cfg);
  auto c = connect();
  acquire(c, "s", "bgcall", bg);
  CAF_CHECK(ask<names>(caf::idle_atom_v, std::string{"child-1"}).empty());
  advance(9s);
  CAF_CHECK(
    ask<bool>(bind_atom_v, std::string{"bgcall"}, std::string{"child-1"}));
  CAF_CHECK(status().pools.empty());
  // After idleMemoryMs the idle is forgotten.
  acquire(c, "s", "late", bg);
  advance(1s);
  CAF_CHECK(
    !ask<bool>(bind_atom_v, std::string{"late"}, std::string{"child-1"}));
  CAF_CHECK(
    !ask<bool>(bind_atom_v, std::string{"ghost"}, std::string{"child-1"}));
}

CAF_TEST(a call that errors releases its permit with reason error) {
  start(with_parallel(1));
  auto c = connect();
  acquire(c, "s", "a");
  acquire(c, "s", "b");
  CAF_CHECK(release("a", release_reason::error));
  auto rel = c.log->of(pool_event_kind::released, "a");
  CAF_REQUIRE_EQUAL(rel.size(), 1u);
  CAF_CHECK_EQUAL(rel[0].reason, release_reason::error);
  CAF_CHECK(c.log->grants.count("b") == 1);
}

CAF_TEST(a double release is a no op) {
  start(with_parallel(1));
  auto c = connect();
  acquire(c, "s", "a");
  acquire(c, "s", "b");
  acquire(c, "s", "c");
  CAF_CHECK(release("a"));
  CAF_CHECK(!release("a"));
  CAF_CHECK(!release("never-seen"));
  // The second release did not free b's permit for c.
  CAF_CHECK(c.log->answers == (names{"a", "b"}));
  CAF_CHECK_EQUAL(c.log->of(pool_event_kind::released, "a").size(), 1u);
}

// -- watchdog -----------------------------------------------------------------

CAF_TEST(the watchdog force releases a holder past maxHoldMs) {
  auto cfg = with_parallel(1);
  cfg.max_hold_ms = 60000;
  cfg.queue_timeout_ms = 0;
  start(cfg);
  auto c = connect();
  acquire(c, "s", "leaky");
  acquire(c, "s", "waiting");
  advance(59999ms);
  CAF_CHECK(c.log->of(pool_event_kind::force_released, "leaky").empty());
  advance(1ms);
  auto forced = c.log->of(pool_event_kind::force_released, "leaky");
  CAF_REQUIRE_EQUAL(forced.size(), 1u);
  CAF_CHECK_EQUAL(forced[0].held_ms, 60000);
  CAF_CHECK(c.log->of(pool_event_kind::released, "leaky").empty());
  CAF_CHECK(c.log->grants.count("waiting") == 1);
  CAF_CHECK(!release("leaky"));
}

CAF_TEST(the watchdog timer of a released holder is stale and ignored) {
  auto cfg = with_parallel(1);
  cfg.max_hold_ms = 60000;
  start(cfg);
  auto c = connect();
  acquire(c, "s", "a");
  advance(10s);
  release("a");
  advance(30s);
  acquire(c, "s", "b");
  // a's timer comes due now: b has held 20 s only and keeps its permit.
  advance(20s);
  CAF_CHECK(c.log->of(pool_event_kind::force_released, "b").empty());
  CAF_CHECK_EQUAL(status().pools.size(), 1u);
  advance(40s);
  CAF_CHECK_EQUAL(c.log->of(pool_event_kind::force_released, "b").size(), 1u);
  CAF_CHECK(c.log->of(pool_event_kind::force_released, "a").empty());
  CAF_CHECK(status().pools.empty());
}

CAF_TEST(limits too long for the clock never force a holder out or time a
           waiter out) {
  // 9223372036855 ms is a safe integer whose nanoseconds overflow int64;
  // 2^53-1 is the longest the config allows.
  for (int64_t limit : {int64_t{9223372036855}, (int64_t{1} << 53) - 1}) {
    CAF_MESSAGE("limit " << limit << " ms");
    auto cfg = with_parallel(1);
    cfg.max_hold_ms = limit;
    cfg.queue_timeout_ms = limit;
    cfg.idle_memory_ms = limit;
    restart(cfg);
    auto c = connect();
    acquire(c, "s", "holder");
    acquire(c, "s", "waiter");
    acquire(c, "t", "bg-call", bg);
    CAF_CHECK(ask<names>(caf::idle_atom_v, std::string{"kid"}).empty());
    for (int i = 0; i < 3; ++i)
      advance(24h);
    CAF_CHECK(c.log->of(pool_event_kind::force_released, "holder").empty());
    CAF_CHECK(c.log->of(pool_event_kind::timed_out, "waiter").empty());
    CAF_CHECK(c.log->errors.empty());
    auto st = status();
    CAF_REQUIRE_EQUAL(st.pools.size(), 2u);
    CAF_REQUIRE_EQUAL(st.pools[0].running.size(), 1u);
    CAF_CHECK_EQUAL(st.pools[0].running[0].holder, "holder");
    CAF_CHECK_EQUAL(st.pools[0].running[0].held_ms, 72 * 3600 * 1000);
    CAF_REQUIRE_EQUAL(st.pools[0].queued.size(), 1u);
    CAF_CHECK_EQUAL(st.pools[0].queued[0].holder, "waiter");
    // The idle of three days ago is still remembered.
    CAF_CHECK(
      ask<bool>(bind_atom_v, std::string{"bg-call"}, std::string{"kid"}));
    // The permit still moves on by release.
    CAF_CHECK(release("holder"));
    CAF_CHECK(c.log->grants.count("waiter") == 1);
  }
}

// -- bounded waits and cancellation ------------------------------------------

CAF_TEST(a queue timeout takes the waiter out of the queue with a clear error) {
  auto cfg = with_parallel(1);
  cfg.queue_timeout_ms = 5000;
  start(cfg);
  auto c = connect();
  acquire(c, "s", "a");
  acquire(c, "s", "b");
  advance(1s);
  acquire(c, "s", "c");
  advance(4s);
  CAF_CHECK(c.log->error_of("b") == errc::queue_timeout);
  CAF_CHECK_EQUAL(c.log->message_of("b"),
                  "holder 'b' waited 5000 ms for a permit of pool 's' "
                  "(queueTimeoutMs 5000); 0 were still ahead of it and 1 "
                  "permit was in use");
  auto t = c.log->of(pool_event_kind::timed_out, "b");
  CAF_REQUIRE_EQUAL(t.size(), 1u);
  CAF_CHECK_EQUAL(t[0].waited_ms, 5000);
  auto st = status();
  CAF_REQUIRE_EQUAL(st.pools.size(), 1u);
  CAF_REQUIRE_EQUAL(st.pools[0].queued.size(), 1u);
  CAF_CHECK_EQUAL(st.pools[0].queued[0].holder, "c");
  CAF_CHECK_EQUAL(st.pools[0].queued[0].position, 1u);
  // The next release goes to c, not to the waiter that gave up.
  release("a");
  CAF_CHECK(c.log->grants.count("c") == 1);
  CAF_CHECK(c.log->grants.count("b") == 0);
}

CAF_TEST(releasing a queued holder cancels its wait) {
  start(with_parallel(1));
  auto c = connect();
  acquire(c, "s", "a");
  acquire(c, "s", "b");
  acquire(c, "s", "c");
  CAF_CHECK(release("b", release_reason::aborted));
  CAF_CHECK(c.log->error_of("b") == errc::cancelled);
  CAF_CHECK(!release("b"));
  release("a");
  CAF_CHECK(c.log->answers == (names{"a", "!b", "c"}));
}

CAF_TEST(end releases and cancels everything of a session) {
  start(with_parallel(2));
  auto c = connect();
  acquire(c, "s", "a");
  acquire(c, "root", "kid-call", bg, "", "", "s");
  acquire(c, "s", "b");
  acquire(c, "s", "c");
  acquire(c, "t", "other");
  auto affected = ask<names>(end_atom_v, std::string{"s"});
  std::sort(affected.begin(), affected.end());
  CAF_CHECK(affected == (names{"a", "b", "c", "kid-call"}));
  CAF_CHECK(c.log->error_of("c") == errc::cancelled);
  for (auto h : {"a", "b", "kid-call"}) {
    auto rel = c.log->of(pool_event_kind::released, h);
    CAF_REQUIRE_EQUAL(rel.size(), 1u);
    CAF_CHECK_EQUAL(rel[0].reason, release_reason::ended);
  }
  auto st = status();
  CAF_REQUIRE_EQUAL(st.pools.size(), 1u);
  CAF_CHECK_EQUAL(st.pools[0].key, "t");
}

// -- nested delegation and adopt ---------------------------------------------

CAF_TEST(a nested acquire takes a free permit of its parent pool) {
  start(with_parallel(2));
  auto c = connect();
  acquire(c, "root", "parent");
  acquire(c, "child-session", "nested", fg, "parent");
  CAF_REQUIRE(c.log->grants.count("nested") == 1);
  CAF_CHECK_EQUAL(c.log->grants["nested"].lent, false);
  auto st = status();
  CAF_REQUIRE_EQUAL(st.pools.size(), 1u);
  CAF_CHECK_EQUAL(st.pools[0].key, "root");
  CAF_CHECK_EQUAL(st.pools[0].running.size(), 2u);
}

CAF_TEST(a nested acquire borrows the parent permit and gives it back) {
  start(with_parallel(1));
  auto c = connect();
  acquire(c, "root", "parent");
  acquire(c, "root", "waiter");
  acquire(c, "child", "nested", fg, "parent");
  CAF_REQUIRE(c.log->grants.count("nested") == 1);
  auto g = c.log->grants["nested"];
  CAF_CHECK_EQUAL(g.lent, true);
  CAF_CHECK_EQUAL(g.permit, c.log->grants["parent"].permit);
  auto started = c.log->of(pool_event_kind::started, "nested");
  CAF_REQUIRE_EQUAL(started.size(), 1u);
  CAF_CHECK_EQUAL(started[0].lent, true);
  auto st = status();
  CAF_REQUIRE_EQUAL(st.pools[0].running.size(), 2u);
  CAF_CHECK_EQUAL(st.pools[0].running[1].lent, true);
  // The nested call returns: the permit is the parent's again, the waiter
  // still waits.
  release("nested");
  CAF_CHECK(c.log->grants.count("waiter") == 0);
  release("parent");
  CAF_CHECK_EQUAL(c.log->grants["waiter"].permit, g.permit);
}

CAF_TEST(a nested acquire fails fast when nested is fail_fast) {
  auto cfg = with_parallel(1);
  cfg.nested = nested_policy::fail_fast;
  start(cfg);
  auto c = connect();
  acquire(c, "root", "parent");
  acquire(c, "child", "nested", fg, "parent");
  CAF_CHECK(c.log->error_of("nested") == errc::pool_full);
  CAF_CHECK(status().pools[0].queued.empty());
}

CAF_TEST(adopt is granted when a permit is free and never queues) {
  start(with_parallel(1));
  auto c = connect();
  adopt(c, "s", "orphan", "child-9");
  CAF_REQUIRE(c.log->grants.count("orphan") == 1);
  CAF_CHECK_EQUAL(c.log->of(pool_event_kind::started, "orphan").size(), 1u);
  adopt(c, "s", "second", "child-10");
  CAF_CHECK(c.log->error_of("second") == errc::pool_full);
  CAF_CHECK(status().pools[0].queued.empty());
  CAF_CHECK(ask<names>(caf::idle_atom_v, std::string{"child-9"})
            == (names{"orphan"}));
}

// -- names and tools ----------------------------------------------------------

CAF_TEST(a call of another tool is answered at once and not counted) {
  start(with_parallel(1));
  auto c = connect();
  acquire(c, "s", "a");
  acquire(c, "s", "shell", fg, "", "bash");
  CAF_REQUIRE(c.log->grants.count("shell") == 1);
  CAF_CHECK_EQUAL(c.log->grants["shell"].counted, false);
  CAF_CHECK(c.log->of(pool_event_kind::queued, "shell").empty());
  acquire(c, "s", "sub", fg, "", "task");
  CAF_CHECK(c.log->grants.count("sub") == 0);
  CAF_CHECK_EQUAL(c.log->of(pool_event_kind::queued, "sub").size(), 1u);
}

CAF_TEST(a holder name in use anywhere is refused as duplicate) {
  start(with_parallel(1));
  auto c1 = connect();
  auto c2 = connect();
  acquire(c1, "s", "a");
  acquire(c1, "s", "q");
  acquire(c2, "t", "a");
  acquire(c2, "t", "q");
  CAF_CHECK(c2.log->error_of("a") == errc::duplicate_holder);
  CAF_CHECK(c2.log->error_of("q") == errc::duplicate_holder);
  CAF_CHECK(c2.log->message_of("q").find("queued") != std::string::npos);
}

// -- connections --------------------------------------------------------------

CAF_TEST(a connection that closes releases its permits and cancels its waits) {
  start(with_parallel(2, pool_mode::global));
  auto c1 = connect();
  auto c2 = connect(true);
  acquire(c1, "s", "a");
  acquire(c1, "s", "b");
  acquire(c1, "s", "c");
  acquire(c2, "t", "d");
  // The harness dies: its listener goes down.
  caf::anon_send_exit(c1.actor, caf::exit_reason::kill);
  sched.run();
  CAF_CHECK(c2.log->grants.count("d") == 1);
  for (auto h : {"a", "b"}) {
    auto rel = c2.log->of(pool_event_kind::released, h);
    CAF_REQUIRE_EQUAL(rel.size(), 1u);
    CAF_CHECK_EQUAL(rel[0].reason, release_reason::disconnected);
  }
  // c only waited: it never held a permit, so no terminal event.
  CAF_CHECK(c2.log->of(pool_event_kind::released, "c").empty());
  auto st = status();
  CAF_REQUIRE_EQUAL(st.pools.size(), 1u);
  CAF_REQUIRE_EQUAL(st.pools[0].running.size(), 1u);
  CAF_CHECK_EQUAL(st.pools[0].running[0].holder, "d");
}

CAF_TEST(detach answers the holders it released) {
  start(with_parallel(1));
  auto c = connect();
  acquire(c, "s", "a");
  acquire(c, "s", "b");
  CAF_CHECK(ask<names>(detach_atom_v, c.id) == (names{"b", "a"}));
  CAF_CHECK(c.log->error_of("b") == errc::cancelled);
  // The closing connection still gets the end of what it held (a stdio
  // harness reads its output after closing its input), and nothing for the
  // wait that never got a permit.
  auto rel = c.log->of(pool_event_kind::released, "a");
  CAF_REQUIRE_EQUAL(rel.size(), 1u);
  CAF_CHECK_EQUAL(rel[0].reason, release_reason::disconnected);
  CAF_CHECK(c.log->of(pool_event_kind::released, "b").empty());
  CAF_CHECK(status().pools.empty());
  CAF_CHECK(ask<names>(detach_atom_v, c.id).empty());
}

CAF_TEST(a subscriber gets every event once and others only their own) {
  start(with_parallel(1));
  auto watcher = connect(true);
  auto c1 = connect();
  auto c2 = connect();
  acquire(c1, "s", "a");
  acquire(c2, "s", "b");
  release("a");
  release("b");
  // a: started, released; b: queued, started, released.
  CAF_CHECK_EQUAL(watcher.log->events.size(), 5u);
  CAF_CHECK_EQUAL(c1.log->events.size(), 2u);
  CAF_CHECK_EQUAL(c2.log->events.size(), 3u);
  for (auto& ev : c2.log->events)
    CAF_CHECK_EQUAL(ev.holder, "b");
  // A subscriber's own holders still arrive once.
  acquire(watcher, "w", "own");
  CAF_CHECK_EQUAL(watcher.log->of(pool_event_kind::started, "own").size(), 1u);
  CAF_CHECK(!ask<bool>(subscribe_atom_v, uint64_t{999}));
}

// -- status and shutdown ------------------------------------------------------

CAF_TEST(status lists each pool with running and queued holders) {
  start(with_parallel(1));
  auto c = connect();
  acquire(c, "s1", "a", bg);
  advance(100ms);
  acquire(c, "s1", "b");
  advance(50ms);
  acquire(c, "s2", "x");
  auto st = status();
  CAF_CHECK_EQUAL(st.mode, "session");
  CAF_CHECK_EQUAL(st.max_parallel, 1u);
  CAF_REQUIRE_EQUAL(st.pools.size(), 2u);
  auto& s1 = st.pools[0];
  CAF_CHECK_EQUAL(s1.key, "s1");
  CAF_REQUIRE_EQUAL(s1.running.size(), 1u);
  CAF_CHECK(s1.running[0] == (running_entry{"a", "s1", bg, 150, false}));
  CAF_REQUIRE_EQUAL(s1.queued.size(), 1u);
  CAF_CHECK(s1.queued[0] == (queued_entry{"b", "s1", 1, 50}));
  auto& s2 = st.pools[1];
  CAF_CHECK_EQUAL(s2.key, "s2");
  CAF_CHECK(s2.running[0] == (running_entry{"x", "s2", fg, 0, false}));
}

CAF_TEST(a stopping pool releases its holders and fails its waiters) {
  start(with_parallel(1));
  auto c = connect();
  auto watcher = connect(true);
  acquire(c, "s", "a");
  acquire(c, "s", "b");
  acquire(c, "t", "kid", bg);
  caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  sched.run();
  // Every holder that held a permit gets exactly one terminal event, its
  // connection and the subscriber alike; the wait gets only its error.
  for (auto& log : {c.log, watcher.log}) {
    for (auto h : {"a", "kid"}) {
      auto rel = log->of(pool_event_kind::released, h);
      CAF_REQUIRE_EQUAL(rel.size(), 1u);
      CAF_CHECK_EQUAL(rel[0].reason, release_reason::disconnected);
    }
    CAF_CHECK(log->of(pool_event_kind::released, "b").empty());
    CAF_CHECK(log->of(pool_event_kind::started, "b").empty());
  }
  CAF_CHECK(c.log->error_of("b") == errc::shutting_down);
  pool = nullptr;
}

// -- order of started and the answer
// -------------------------------------------

CAF_TEST(started comes before the acquire answer for every kind of grant) {
  start(with_parallel(1));
  auto c = connect();
  acquire(c, "s", "now");               // immediate
  acquire(c, "s", "later");             // queued, granted after a release
  acquire(c, "kid", "lent", fg, "now"); // borrows now's permit
  release("lent");
  release("now");
  adopt(c, "other", "adopted", "kid-2"); // adopted
  for (auto h : {"now", "later", "lent", "adopted"}) {
    auto started = c.log->position(std::string{"started:"} + h);
    auto answered = c.log->position(std::string{"answer:"} + h);
    CAF_MESSAGE(h << ": started at " << started << ", answered at "
                  << answered);
    CAF_CHECK_GREATER_OR_EQUAL(started, 0);
    CAF_CHECK_GREATER(answered, started);
  }
  // A queued acquire: queued, then started, then the answer.
  CAF_CHECK_LESS(c.log->position("queued:later"),
                 c.log->position("started:later"));
}

CAF_TEST_FIXTURE_SCOPE_END()
