#define CAF_SUITE unit.admission
#include <caf/test/unit_test.hpp>

#include "unit/admission_driver.hpp"

using namespace taskforce;
using taskforce::pool::acquire_status;
using taskforce::test::admission_driver;

namespace {

pool_config config(uint64_t max_parallel = 2,
                   pool_mode mode = pool_mode::session) {
  pool_config cfg;
  cfg.max_parallel = max_parallel;
  cfg.mode = mode;
  return cfg;
}

constexpr auto fg = holder_kind::foreground;
constexpr auto bg = holder_kind::background;

} // namespace

// -- FIFO, hand-off, events ---------------------------------------------------

CAF_TEST(five acquirers with two permits are granted in arrival order) {
  admission_driver d{config()};
  auto a = d.acquire("s", "a");
  auto b = d.acquire("s", "b");
  CAF_CHECK(a.status == acquire_status::granted);
  CAF_CHECK(b.status == acquire_status::granted);
  CAF_CHECK_NOT_EQUAL(a.value.permit, b.value.permit);
  std::vector<uint64_t> tickets;
  for (auto name : {"c", "d", "e"}) {
    d.now += 10;
    auto r = d.acquire("s", name);
    CAF_REQUIRE(r.status == acquire_status::queued);
    tickets.push_back(r.ticket);
  }
  CAF_CHECK_EQUAL(d.core.in_use("s"), 2u);
  CAF_CHECK_EQUAL(d.core.queued_count(), 3u);
  // Each release hands its permit to the oldest waiter.
  d.now += 5;
  CAF_CHECK(d.release("a"));
  CAF_REQUIRE_EQUAL(d.granted.size(), 1u);
  CAF_CHECK(d.granted.count(tickets[0]) == 1);
  CAF_CHECK_EQUAL(d.granted[tickets[0]].permit, a.value.permit);
  CAF_CHECK_EQUAL(d.granted[tickets[0]].queued_ms, 25);
  CAF_CHECK(d.release("b"));
  CAF_CHECK(d.granted.count(tickets[1]) == 1);
  CAF_CHECK(d.release("c"));
  CAF_CHECK(d.granted.count(tickets[2]) == 1);
  CAF_CHECK_EQUAL(d.core.in_use("s"), 2u);
  CAF_CHECK(d.release("d"));
  CAF_CHECK(d.release("e"));
  CAF_CHECK_EQUAL(d.core.in_use("s"), 0u);
  CAF_CHECK_EQUAL(d.core.audit(), "");
}

CAF_TEST(queued events carry position of running and background) {
  admission_driver d{config()};
  d.acquire("s", "a");
  d.acquire("s", "b");
  d.acquire("s", "c");
  d.acquire("s", "d", bg);
  d.acquire("s", "e");
  auto c = d.last(pool_event_kind::queued, "c");
  auto dd = d.last(pool_event_kind::queued, "d");
  auto e = d.last(pool_event_kind::queued, "e");
  CAF_CHECK_EQUAL(c.position, 1u);
  CAF_CHECK_EQUAL(c.of, 1u);
  CAF_CHECK_EQUAL(c.running, 2u);
  CAF_CHECK_EQUAL(c.background, false);
  CAF_CHECK_EQUAL(dd.position, 2u);
  CAF_CHECK_EQUAL(dd.of, 2u);
  CAF_CHECK_EQUAL(dd.background, true);
  CAF_CHECK_EQUAL(e.position, 3u);
  CAF_CHECK_EQUAL(e.of, 3u);
  CAF_CHECK_EQUAL(e.session, "s");
  CAF_CHECK_EQUAL(e.connection, d.connection);
  // started for immediate grants and after a wait.
  CAF_CHECK_EQUAL(d.count(pool_event_kind::started, "a"), 1u);
  CAF_CHECK_EQUAL(d.count(pool_event_kind::started, "c"), 0u);
  d.now += 40;
  d.release("a");
  CAF_CHECK_EQUAL(d.count(pool_event_kind::started, "c"), 1u);
  CAF_CHECK_EQUAL(d.last(pool_event_kind::started, "c").queued_ms, 40);
  CAF_CHECK_EQUAL(d.last(pool_event_kind::released, "a").reason,
                  release_reason::completed);
  // The released event of the leaver comes before the started event of the
  // one that takes over.
  auto rel = std::find_if(d.events.begin(), d.events.end(), [](auto& ev) {
    return ev.kind == pool_event_kind::released;
  });
  CAF_CHECK(rel != d.events.end() && (rel + 1) != d.events.end()
            && (rel + 1)->kind == pool_event_kind::started
            && (rel + 1)->holder == "c");
}

CAF_TEST(a freed permit never goes to a later request while someone waits) {
  auto cfg = config(1);
  cfg.nested = nested_policy::fail_fast;
  admission_driver d{cfg};
  d.acquire("s", "a");
  auto b = d.acquire("s", "b");
  CAF_REQUIRE(b.status == acquire_status::queued);
  d.release("a");
  CAF_CHECK(d.granted.count(b.ticket) == 1);
  // Whoever comes now finds the permit taken and nothing free.
  CAF_CHECK(d.acquire("s", "c").status == acquire_status::queued);
  CAF_CHECK(d.adopt("s", "x", "child").code == errc::pool_full);
  CAF_CHECK(d.acquire("s", "n", fg, "b").code == errc::pool_full);
}

CAF_TEST(no event is produced when nobody listens) {
  admission_driver d{config(1)};
  auto quiet = d.core.attach(false);
  acquire_request req{"s", "a", fg, "", "", "", quiet};
  d.core.acquire(std::move(req), d.now);
  CAF_CHECK(d.core.effects().events.empty());
  acquire_request req2{"s", "b", fg, "", "", "", quiet};
  d.core.acquire(std::move(req2), d.now);
  CAF_CHECK(d.core.effects().events.empty());
  d.core.release("a", release_reason::completed, d.now);
  CAF_CHECK(d.core.effects().events.empty());
  CAF_CHECK_EQUAL(d.core.effects().grants.size(), 1u);
  // A subscriber sees every holder's events.
  CAF_CHECK(d.core.subscribe(d.connection));
  CAF_CHECK(!d.core.subscribe(quiet));
  CAF_CHECK(!d.core.subscribe(999));
  d.core.release("b", release_reason::completed, d.now);
  CAF_REQUIRE_EQUAL(d.core.effects().events.size(), 1u);
  CAF_CHECK_EQUAL(d.core.effects().events[0].holder, "b");
}

// -- modes --------------------------------------------------------------------

CAF_TEST(session mode gives every session its own pool) {
  admission_driver d{config(1)};
  CAF_CHECK(d.acquire("s1", "a").status == acquire_status::granted);
  CAF_CHECK(d.acquire("s2", "b").status == acquire_status::granted);
  CAF_CHECK(d.acquire("s1", "c").status == acquire_status::queued);
  auto st = d.core.status(d.now);
  CAF_CHECK_EQUAL(st.mode, "session");
  CAF_REQUIRE_EQUAL(st.pools.size(), 2u);
  CAF_CHECK_EQUAL(st.pools[0].key, "s1");
  CAF_CHECK_EQUAL(st.pools[1].key, "s2");
}

CAF_TEST(global mode shares one pool across sessions and connections) {
  admission_driver d{config(1, pool_mode::global)};
  CAF_CHECK(d.acquire("s1", "a").status == acquire_status::granted);
  d.connection = d.core.attach(true);
  CAF_CHECK(d.acquire("s2", "b").status == acquire_status::queued);
  auto st = d.core.status(d.now);
  CAF_CHECK_EQUAL(st.mode, "global");
  CAF_REQUIRE_EQUAL(st.pools.size(), 1u);
  CAF_CHECK_EQUAL(st.pools[0].key, "global");
  CAF_CHECK_EQUAL(d.core.in_use("global"), 1u);
}

// -- nested delegation --------------------------------------------------------

CAF_TEST(a nested acquire takes a free permit at once) {
  admission_driver d{config(2)};
  d.acquire("root", "p");
  auto n = d.acquire("child", "n", fg, "p");
  CAF_CHECK(n.status == acquire_status::granted);
  CAF_CHECK_EQUAL(n.value.lent, false);
  CAF_CHECK_EQUAL(d.core.in_use("root"), 2u);
  // It counts against its parent's pool, not the child session's.
  CAF_CHECK_EQUAL(d.core.in_use("child"), 0u);
}

CAF_TEST(a nested acquire borrows the parent permit and keeps the bound) {
  admission_driver d{config(1)};
  auto p = d.acquire("root", "p");
  auto w = d.acquire("root", "w");
  CAF_REQUIRE(w.status == acquire_status::queued);
  auto n = d.acquire("child", "n", fg, "p");
  CAF_REQUIRE(n.status == acquire_status::granted);
  CAF_CHECK_EQUAL(n.value.lent, true);
  CAF_CHECK_EQUAL(n.value.permit, p.value.permit);
  CAF_CHECK_EQUAL(d.last(pool_event_kind::started, "n").lent, true);
  // A grandchild borrows the same permit.
  auto g = d.acquire("grandchild", "g", fg, "n");
  CAF_CHECK_EQUAL(g.value.lent, true);
  CAF_CHECK_EQUAL(d.core.in_use("root"), 1u);
  CAF_CHECK_EQUAL(d.core.running_count(), 3u);
  // The permit returns to the pool only when parent and borrowers let go.
  d.release("p");
  d.release("g");
  CAF_CHECK(d.granted.empty());
  CAF_CHECK_EQUAL(d.core.in_use("root"), 1u);
  d.release("n");
  CAF_CHECK(d.granted.count(w.ticket) == 1);
  CAF_CHECK_EQUAL(d.granted[w.ticket].permit, p.value.permit);
  CAF_CHECK_EQUAL(d.core.in_use("root"), 1u);
  CAF_CHECK_EQUAL(d.core.audit(), "");
}

CAF_TEST(a nested acquire fails fast when configured so) {
  auto cfg = config(1);
  cfg.nested = nested_policy::fail_fast;
  admission_driver d{cfg};
  d.acquire("root", "p");
  auto n = d.acquire("child", "n", fg, "p");
  CAF_CHECK(n.status == acquire_status::failed);
  CAF_CHECK(n.code == errc::pool_full);
  CAF_CHECK(n.message.find("never queues") != std::string::npos);
  CAF_CHECK_EQUAL(d.core.queued_count(), 0u);
  // The name stays free.
  d.release("p");
  CAF_CHECK(d.acquire("root", "n").status == acquire_status::granted);
}

CAF_TEST(a background nested call never borrows : its parent does not wait) {
  admission_driver d{config(1)};
  d.acquire("root", "p");
  auto n = d.acquire("root", "n", bg, "p");
  CAF_CHECK(n.code == errc::pool_full);
  CAF_CHECK(n.message.find("background call cannot borrow")
            != std::string::npos);
  CAF_CHECK(n.message.find("does not wait") != std::string::npos);
  CAF_CHECK_EQUAL(d.core.running_count(), 1u);
  CAF_CHECK_EQUAL(d.core.audit(), "");
}

CAF_TEST(a background parent lends to a foreground call it waits for) {
  admission_driver d{config(1)};
  auto p = d.acquire("root", "p", bg);
  auto n = d.acquire("root", "n", fg, "p");
  CAF_REQUIRE(n.status == acquire_status::granted);
  CAF_CHECK_EQUAL(n.value.lent, true);
  CAF_CHECK_EQUAL(n.value.permit, p.value.permit);
  CAF_CHECK_EQUAL(d.core.in_use("root"), 1u);
}

CAF_TEST(a nested acquire finds its parent by the agent bound to it) {
  admission_driver d{config(1)};
  auto p = d.acquire("root", "toolu_outer", bg);
  d.bind("toolu_outer", "agent_outer");
  auto w = d.acquire("root", "toolu_root2");
  CAF_REQUIRE(w.status == acquire_status::queued);
  auto n = d.acquire("root", "toolu_inner", fg, "agent_outer");
  CAF_REQUIRE(n.status == acquire_status::granted);
  CAF_CHECK_EQUAL(n.value.lent, true);
  CAF_CHECK_EQUAL(n.value.permit, p.value.permit);
  CAF_CHECK_EQUAL(d.last(pool_event_kind::started, "toolu_inner").lent, true);
  CAF_CHECK_EQUAL(d.core.in_use("root"), 1u);
  CAF_CHECK_EQUAL(d.core.audit(), "");
  // The agent stops before its nested call returns (an interrupted agent):
  // the permit stays in use until the borrower lets go too.
  CAF_CHECK_EQUAL(d.idle("agent_outer"),
                  std::vector<std::string>{"toolu_outer"});
  CAF_CHECK(d.granted.empty());
  CAF_CHECK_EQUAL(d.core.in_use("root"), 1u);
  d.release("toolu_inner");
  CAF_CHECK(d.granted.count(w.ticket) == 1);
  CAF_CHECK_EQUAL(d.core.in_use("root"), 1u);
  d.release("toolu_root2");
  CAF_CHECK_EQUAL(d.core.in_use("root"), 0u);
  CAF_CHECK_EQUAL(d.core.audit(), "");
}

CAF_TEST(a nested acquire finds a foreground parent by the child started for
           it) {
  admission_driver d{config(1)};
  auto p = d.acquire("root", "toolu_outer");
  CAF_CHECK_EQUAL(d.child_started("root", "agent_outer"), "toolu_outer");
  auto w = d.acquire("root", "toolu_root2");
  CAF_REQUIRE(w.status == acquire_status::queued);
  auto n = d.acquire("root", "toolu_inner", fg, "agent_outer");
  CAF_REQUIRE(n.status == acquire_status::granted);
  CAF_CHECK_EQUAL(n.value.lent, true);
  CAF_CHECK_EQUAL(n.value.permit, p.value.permit);
  // The child's own child (a grandchild) borrows the same permit.
  CAF_CHECK_EQUAL(d.child_started("root", "agent_inner"), "toolu_inner");
  auto g = d.acquire("root", "toolu_deep", fg, "agent_inner");
  CAF_CHECK_EQUAL(g.value.lent, true);
  CAF_CHECK_EQUAL(g.value.permit, p.value.permit);
  CAF_CHECK_EQUAL(d.core.in_use("root"), 1u);
  CAF_CHECK_EQUAL(d.core.running_count(), 3u);
  // Children first, the way calls return: the permit moves on only when
  // the parent lets go too.
  d.release("toolu_deep");
  d.release("toolu_inner");
  CAF_CHECK(d.granted.empty());
  d.release("toolu_outer");
  CAF_CHECK(d.granted.count(w.ticket) == 1);
  CAF_CHECK_EQUAL(d.granted[w.ticket].permit, p.value.permit);
  CAF_CHECK_EQUAL(d.core.audit(), "");
}

CAF_TEST(a waiting parent lends its permit to one call at a time) {
  admission_driver d{config(1)};
  d.acquire("root", "p");
  d.child_started("root", "agent_p");
  auto n1 = d.acquire("root", "n1", fg, "agent_p");
  CAF_CHECK_EQUAL(n1.value.lent, true);
  // Two calls at once: the parent waits for both, yet only one can run in
  // its place.
  auto n2 = d.acquire("root", "n2", fg, "agent_p");
  CAF_CHECK(n2.code == errc::pool_full);
  CAF_CHECK(n2.message.find("already lends its permit to 'n1'")
            != std::string::npos);
  d.release("n1");
  auto n3 = d.acquire("root", "n3", fg, "agent_p");
  CAF_CHECK_EQUAL(n3.value.lent, true);
  CAF_CHECK_EQUAL(d.core.running_count(), 2u);
  CAF_CHECK_EQUAL(d.core.audit(), "");
}

CAF_TEST(child_started ties children to foreground holders in grant order) {
  admission_driver d{config(4)};
  d.acquire("s", "a");
  d.acquire("s", "b", bg);
  d.acquire("t", "other");
  d.acquire("s", "c");
  CAF_CHECK_EQUAL(d.child_started("s", "x"), "a");
  // Background holders are tied exactly by bind, never by a guess; other
  // sessions' holders are not candidates.
  CAF_CHECK_EQUAL(d.child_started("s", "y"), "c");
  CAF_CHECK_EQUAL(d.child_started("s", "z"), "");
  CAF_CHECK_EQUAL(d.core.untied_children(), 1u);
  // Told twice: nothing changes.
  CAF_CHECK_EQUAL(d.child_started("s", "x"), "a");
  d.bind("b", "bb");
  CAF_CHECK_EQUAL(d.child_started("s", "bb"), "b");
  CAF_CHECK_EQUAL(d.core.untied_children(), 1u);
  CAF_CHECK_EQUAL(d.core.audit(), "");
  // A tie never releases anything: the child's idle leaves its foreground
  // holder held (its call's end releases it).
  CAF_CHECK(d.idle("x").empty());
  CAF_CHECK_EQUAL(d.core.running_count(), 4u);
  CAF_CHECK_EQUAL(d.core.untied_children(), 1u);
  CAF_CHECK(d.idle("z").empty());
  CAF_CHECK_EQUAL(d.core.untied_children(), 0u);
}

CAF_TEST(a bind withdraws a wrong guess and gives the holder an untied child) {
  // A foreground and a background call start at once: the background agent's
  // start arrives before its call's bind and is taken for the foreground one.
  admission_driver d{config(2)};
  auto f = d.acquire("s", "toolu_fg");
  auto b = d.acquire("s", "toolu_bg", bg);
  CAF_CHECK_EQUAL(d.child_started("s", "agent_bg"), "toolu_fg");
  CAF_CHECK_EQUAL(d.child_started("s", "agent_fg"), "");
  d.bind("toolu_bg", "agent_bg");
  CAF_CHECK_EQUAL(d.core.untied_children(), 0u);
  CAF_CHECK_EQUAL(d.child_started("s", "agent_fg"), "toolu_fg");
  // Each agent now borrows its own call's permit.
  auto n1 = d.acquire("s", "n1", fg, "agent_fg");
  CAF_CHECK_EQUAL(n1.value.lent, true);
  CAF_CHECK_EQUAL(n1.value.permit, f.value.permit);
  auto n2 = d.acquire("s", "n2", fg, "agent_bg");
  CAF_CHECK_EQUAL(n2.value.lent, true);
  CAF_CHECK_EQUAL(n2.value.permit, b.value.permit);
  CAF_CHECK_EQUAL(d.core.in_use("s"), 2u);
  CAF_CHECK_EQUAL(d.core.audit(), "");
}

CAF_TEST(calls that start at once may swap their ties and the bound holds) {
  admission_driver d{config(2)};
  auto a = d.acquire("s", "toolu_a");
  auto b = d.acquire("s", "toolu_b");
  // Both agents start at once and their starts arrive swapped.
  CAF_CHECK_EQUAL(d.child_started("s", "agent_b"), "toolu_a");
  CAF_CHECK_EQUAL(d.child_started("s", "agent_a"), "toolu_b");
  auto w = d.acquire("s", "toolu_w");
  CAF_REQUIRE(w.status == acquire_status::queued);
  // Each agent waits for its nested call and borrows the other's permit:
  // still two permits, and two calls running in them.
  auto na = d.acquire("s", "na", fg, "agent_a");
  auto nb = d.acquire("s", "nb", fg, "agent_b");
  CAF_CHECK_EQUAL(na.value.lent, true);
  CAF_CHECK_EQUAL(na.value.permit, b.value.permit);
  CAF_CHECK_EQUAL(nb.value.lent, true);
  CAF_CHECK_EQUAL(nb.value.permit, a.value.permit);
  CAF_CHECK_EQUAL(d.core.in_use("s"), 2u);
  CAF_CHECK_EQUAL(d.core.audit(), "");
  // Agent a's call returns and a ends; b's call is still running in a's
  // permit, so the waiter waits on.
  d.release("na");
  d.release("toolu_a");
  CAF_CHECK(d.granted.empty());
  d.release("nb");
  CAF_CHECK(d.granted.count(w.ticket) == 1);
  CAF_CHECK_EQUAL(d.core.in_use("s"), 2u);
  d.release("toolu_b");
  d.release("toolu_w");
  CAF_CHECK_EQUAL(d.core.in_use("s"), 0u);
  CAF_CHECK_EQUAL(d.core.running_count(), 0u);
  CAF_CHECK_EQUAL(d.core.audit(), "");
}

CAF_TEST(an agent is a parent only in the session of its holder) {
  admission_driver d{config(1, pool_mode::global)};
  d.acquire("s", "p");
  d.child_started("s", "agent_p");
  auto n = d.acquire("t", "n", fg, "agent_p");
  CAF_CHECK(n.code == errc::pool_full);
  CAF_CHECK(n.message.find("holds no permit to lend") != std::string::npos);
  // The child session itself may name itself as the parent.
  auto m = d.acquire("agent_p", "m", fg, "agent_p");
  CAF_CHECK_EQUAL(m.value.lent, true);
  CAF_CHECK_EQUAL(d.core.audit(), "");
}

CAF_TEST(end forgets the untied children of its session) {
  admission_driver d{config(1)};
  CAF_CHECK_EQUAL(d.child_started("s", "a1"), "");
  CAF_CHECK_EQUAL(d.child_started("t", "a2"), "");
  CAF_CHECK_EQUAL(d.core.untied_children(), 2u);
  d.end("s");
  CAF_CHECK_EQUAL(d.core.untied_children(), 1u);
  d.end("a2");
  CAF_CHECK_EQUAL(d.core.untied_children(), 0u);
}

CAF_TEST(
  a nested acquire of an unknown parent uses its own pool and never queues) {
  admission_driver d{config(1)};
  CAF_CHECK(d.acquire("s", "n1", fg, "ghost").status
            == acquire_status::granted);
  auto n2 = d.acquire("s", "n2", fg, "ghost");
  CAF_CHECK(n2.code == errc::pool_full);
  CAF_CHECK_EQUAL(d.core.queued_count(), 0u);
}

// -- adopt --------------------------------------------------------------------

CAF_TEST(adopt takes a free permit as a background holder of its child) {
  admission_driver d{config(1)};
  auto a = d.adopt("s", "x", "kid");
  CAF_REQUIRE(a.status == acquire_status::granted);
  CAF_CHECK_EQUAL(d.count(pool_event_kind::started, "x"), 1u);
  auto st = d.core.status(d.now);
  CAF_CHECK(st.pools[0].running[0].kind == bg);
  auto full = d.adopt("s", "y", "kid2");
  CAF_CHECK(full.code == errc::pool_full);
  CAF_CHECK_EQUAL(d.core.queued_count(), 0u);
  CAF_CHECK(d.idle("kid") == std::vector<std::string>{"x"});
  CAF_CHECK_EQUAL(d.last(pool_event_kind::released, "x").reason,
                  release_reason::idle);
  CAF_CHECK(d.adopt("s", "z", "").code == errc::bad_request);
}

// -- bounded waits ------------------------------------------------------------

CAF_TEST(
  a queued acquire times out with how long it waited and how many were ahead) {
  auto cfg = config(1);
  cfg.queue_timeout_ms = 500;
  admission_driver d{cfg};
  d.acquire("s", "a");
  auto b = d.acquire("s", "b");
  d.now += 100;
  auto c = d.acquire("s", "c");
  d.advance(399);
  CAF_CHECK(d.failed.empty());
  d.advance(1);
  CAF_REQUIRE(d.failed.count(b.ticket) == 1);
  CAF_CHECK(d.failed[b.ticket].code == errc::queue_timeout);
  CAF_CHECK_EQUAL(d.failed[b.ticket].message,
                  "holder 'b' waited 500 ms for a permit of pool 's' "
                  "(queueTimeoutMs 500); 0 were still ahead of it and 1 "
                  "permit was in use");
  CAF_CHECK_EQUAL(d.last(pool_event_kind::timed_out, "b").waited_ms, 500);
  CAF_CHECK(d.failed.count(c.ticket) == 0);
  d.advance(100);
  CAF_REQUIRE(d.failed.count(c.ticket) == 1);
  CAF_CHECK_EQUAL(d.core.queued_count(), 0u);
  // Left the queue: the next release frees the permit instead.
  d.release("a");
  CAF_CHECK_EQUAL(d.core.in_use("s"), 0u);
}

CAF_TEST(queueTimeoutMs zero waits forever) {
  auto cfg = config(1);
  cfg.queue_timeout_ms = 0;
  admission_driver d{cfg};
  d.acquire("s", "a");
  d.acquire("s", "b");
  d.acquire("s", "c");
  // queueTimeoutMs 0 waits forever: no queue timer is armed.
  CAF_CHECK(d.timers.count(pool::admission::queue_timer) == 0);
  d.advance(10'000'000);
  CAF_CHECK(d.failed.empty());
}

CAF_TEST(waiters that give up together count those ahead of them) {
  auto cfg = config(1, pool_mode::global);
  cfg.queue_timeout_ms = 100;
  admission_driver d{cfg};
  d.acquire("s", "a");
  auto b = d.acquire("s", "b");
  auto c = d.acquire("t", "c");
  d.advance(100);
  CAF_REQUIRE_EQUAL(d.failed.size(), 2u);
  CAF_CHECK(d.failed[b.ticket].message.find("0 were still ahead of it and 1 "
                                            "permit was in use")
            != std::string::npos);
  CAF_CHECK(d.failed[c.ticket].message.find("1 was still ahead of it")
            != std::string::npos);
}

// -- release ------------------------------------------------------------------

CAF_TEST(release is idempotent and cancels a queued wait) {
  admission_driver d{config(1)};
  d.acquire("s", "a");
  auto b = d.acquire("s", "b");
  CAF_CHECK(d.release("b", release_reason::aborted));
  CAF_REQUIRE(d.failed.count(b.ticket) == 1);
  CAF_CHECK(d.failed[b.ticket].code == errc::cancelled);
  // b never held a permit: its acquire fails, and no terminal event follows.
  CAF_CHECK_EQUAL(d.count(pool_event_kind::released, "b"), 0u);
  CAF_CHECK(!d.release("b"));
  CAF_CHECK(d.release("a", release_reason::error));
  CAF_CHECK_EQUAL(d.last(pool_event_kind::released, "a").reason,
                  release_reason::error);
  CAF_CHECK(!d.release("a"));
  CAF_CHECK(!d.release("nobody"));
  CAF_CHECK_EQUAL(d.count(pool_event_kind::released, "a"), 1u);
  CAF_CHECK_EQUAL(d.core.in_use("s"), 0u);
}

// -- bind, idle, end ----------------------------------------------------------

CAF_TEST(idle releases only the background holders of that child) {
  admission_driver d{config(3)};
  d.acquire("s", "f", fg, "", "", "kid");
  d.acquire("s", "b1", bg, "", "", "kid");
  d.acquire("s", "b2", bg);
  CAF_CHECK(!d.bind("b2", "kid2"));
  CAF_CHECK(d.idle("kid") == std::vector<std::string>{"b1"});
  CAF_CHECK(d.idle("kid2") == std::vector<std::string>{"b2"});
  CAF_CHECK_EQUAL(d.core.running_count(), 1u);
  CAF_CHECK_EQUAL(d.last(pool_event_kind::released, "b2").reason,
                  release_reason::idle);
}

CAF_TEST(bind after a recent idle releases at once) {
  auto cfg = config(2);
  cfg.idle_memory_ms = 1000;
  admission_driver d{cfg};
  d.acquire("s", "b", bg);
  d.acquire("s", "late", bg);
  CAF_CHECK(d.idle("kid").empty());
  d.now += 999;
  CAF_CHECK(d.bind("b", "kid"));
  CAF_CHECK_EQUAL(d.last(pool_event_kind::released, "b").reason,
                  release_reason::idle);
  // Past idleMemoryMs the idle is forgotten.
  d.now += 1;
  CAF_CHECK(!d.bind("late", "kid"));
  CAF_CHECK_EQUAL(d.core.running_count(), 1u);
  CAF_CHECK(!d.bind("ghost", "kid"));
  // A foreground holder is never released by an idle.
  d.acquire("s", "f");
  d.idle("kid3");
  CAF_CHECK(!d.bind("f", "kid3"));
}

CAF_TEST(idles are remembered in bounded memory however long idleMemoryMs is) {
  auto cfg = config(2);
  cfg.idle_memory_ms = (int64_t{1} << 53) - 1;
  admission_driver d{cfg};
  d.acquire("s", "b", bg);
  // A harness reporting the same child idle again and again.
  for (int i = 0; i < 100000; ++i) {
    d.now += 1;
    d.core.idle("kid", d.now);
  }
  CAF_CHECK_LESS(d.core.remembered_idles(), 200u);
  // And many distinct children.
  for (int i = 0; i < 100000; ++i) {
    d.now += 1;
    d.core.idle("child-" + std::to_string(i), d.now);
  }
  CAF_CHECK_LESS_OR_EQUAL(d.core.remembered_idles(), 2 * 16384u + 64u);
  // The latest idles are still remembered.
  CAF_CHECK(d.bind("b", "child-99999"));
  d.acquire("s", "c", bg);
  CAF_CHECK(!d.bind("c", "child-0"));
}

CAF_TEST(idleMemoryMs zero remembers no idle) {
  auto cfg = config(2);
  cfg.idle_memory_ms = 0;
  admission_driver d{cfg};
  d.acquire("s", "b", bg);
  d.idle("kid");
  CAF_CHECK(!d.bind("b", "kid"));
}

CAF_TEST(end releases a session holders and children and cancels its waits) {
  admission_driver d{config(2)};
  d.acquire("s", "a");
  d.acquire("other", "bg", bg, "", "", "s");
  d.acquire("s", "b");
  auto c = d.acquire("s", "c");
  d.acquire("t", "keep");
  auto names = d.end("s");
  std::sort(names.begin(), names.end());
  CAF_CHECK(names == (std::vector<std::string>{"a", "b", "bg", "c"}));
  CAF_CHECK(d.failed.count(c.ticket) == 1);
  CAF_CHECK(d.failed[c.ticket].code == errc::cancelled);
  CAF_CHECK_EQUAL(d.last(pool_event_kind::released, "a").reason,
                  release_reason::ended);
  CAF_CHECK_EQUAL(d.last(pool_event_kind::released, "bg").reason,
                  release_reason::ended);
  CAF_CHECK_EQUAL(d.core.running_count(), 1u);
  CAF_CHECK_EQUAL(d.core.queued_count(), 0u);
}

// -- names and tools ----------------------------------------------------------

CAF_TEST(a tool that is not a subagent tool is not counted) {
  auto cfg = config(1);
  cfg.subagent_tool_names = {"task", "delegate"};
  admission_driver d{cfg};
  auto r = d.acquire("s", "x", fg, "", "bash");
  CAF_CHECK(r.status == acquire_status::granted);
  CAF_CHECK_EQUAL(r.value.counted, false);
  CAF_CHECK_EQUAL(d.core.running_count(), 0u);
  CAF_CHECK(d.events.empty());
  CAF_CHECK(!d.release("x"));
  CAF_CHECK(d.acquire("s", "t", fg, "", "delegate").value.counted);
  CAF_CHECK_EQUAL(d.core.in_use("s"), 1u);
}

CAF_TEST(tool names match whatever the case the harness spells them in) {
  admission_driver d{config(1)};
  // Claude Code calls it Task (or Agent), OpenCode task.
  CAF_CHECK(d.acquire("s", "a", fg, "", "Task").value.counted);
  CAF_CHECK_EQUAL(d.core.in_use("s"), 1u);
  CAF_CHECK(d.release("a"));
  CAF_CHECK(d.acquire("s", "b", fg, "", "TASK").value.counted);
  CAF_CHECK(d.release("b"));
  auto other = d.acquire("s", "c", fg, "", "tasks");
  CAF_CHECK(!other.value.counted);
}

CAF_TEST(a holder name is unique across connections running or queued) {
  admission_driver d{config(1)};
  d.acquire("s", "a");
  d.acquire("s", "b");
  d.connection = d.core.attach(true);
  auto dup = d.acquire("t", "a");
  CAF_CHECK(dup.code == errc::duplicate_holder);
  CAF_CHECK(dup.message.find("running") != std::string::npos);
  auto dupq = d.acquire("t", "b");
  CAF_CHECK(dupq.code == errc::duplicate_holder);
  CAF_CHECK(dupq.message.find("queued") != std::string::npos);
  CAF_CHECK(d.adopt("t", "a", "k").code == errc::duplicate_holder);
  d.release("a");
  d.release("b");
  CAF_CHECK(d.acquire("t", "a").status == acquire_status::granted);
}

CAF_TEST(an acquire without holder or session is a bad request) {
  admission_driver d{config(1)};
  CAF_CHECK(d.acquire("s", "").code == errc::bad_request);
  CAF_CHECK(d.acquire("", "h").code == errc::bad_request);
  CAF_CHECK(d.adopt("", "h", "k").code == errc::bad_request);
  CAF_CHECK(d.adopt("s", "", "k").code == errc::bad_request);
  CAF_CHECK_EQUAL(d.core.running_count(), 0u);
  CAF_CHECK(d.events.empty());
}

// -- connections --------------------------------------------------------------

CAF_TEST(detaching a connection releases its holders and cancels its waits) {
  admission_driver d{config(2, pool_mode::global)};
  auto first = d.connection;
  d.acquire("s", "a");
  d.acquire("s", "b");
  auto c = d.acquire("s", "c");
  d.connection = d.core.attach(true);
  auto other = d.acquire("t", "o");
  auto names = d.detach(first);
  CAF_CHECK(names == (std::vector<std::string>{"c", "a", "b"}));
  CAF_CHECK(d.failed[c.ticket].code == errc::cancelled);
  CAF_CHECK(d.granted.count(other.ticket) == 1);
  CAF_CHECK_EQUAL(d.core.running_count(), 1u);
  // Its holders that held a permit end with released (disconnected); the
  // wait that never got one ends with its error only.
  CAF_CHECK_EQUAL(d.last(pool_event_kind::released, "a").reason,
                  release_reason::disconnected);
  CAF_CHECK_EQUAL(d.last(pool_event_kind::released, "b").reason,
                  release_reason::disconnected);
  CAF_CHECK_EQUAL(d.count(pool_event_kind::released, "c"), 0u);
  CAF_CHECK(d.detach(first).empty());
}

CAF_TEST(a wait that is cancelled ends with an error and no released event) {
  admission_driver d{config(1)};
  d.acquire("s", "a");
  auto by_release = d.acquire("s", "w1");
  auto by_end = d.acquire("s", "w2");
  auto by_detach = d.acquire("s", "w3");
  d.release("w1", release_reason::aborted);
  d.end("s");
  d.detach(d.connection);
  for (auto ticket : {by_release.ticket, by_end.ticket, by_detach.ticket}) {
    CAF_REQUIRE(d.failed.count(ticket) == 1);
    CAF_CHECK(d.failed[ticket].code == errc::cancelled);
  }
  for (auto name : {"w1", "w2", "w3"}) {
    CAF_CHECK_EQUAL(d.count(pool_event_kind::released, name), 0u);
    CAF_CHECK_EQUAL(d.count(pool_event_kind::started, name), 0u);
  }
  // a held its permit until end: exactly one terminal event.
  CAF_CHECK_EQUAL(d.count(pool_event_kind::released, "a"), 1u);
}

// -- stop ---------------------------------------------------------------------

CAF_TEST(
  stop releases every holder once and fails every wait with shutting_down) {
  admission_driver d{config(1)};
  d.acquire("s", "a");
  d.acquire("t", "b", bg);
  auto w = d.acquire("s", "w");
  auto names = d.stop();
  std::sort(names.begin(), names.end());
  CAF_CHECK(names == (std::vector<std::string>{"a", "b", "w"}));
  // The wait is failed first: the permits freed below go to nobody.
  CAF_REQUIRE(d.failed.count(w.ticket) == 1);
  CAF_CHECK(d.failed[w.ticket].code == errc::shutting_down);
  CAF_CHECK(d.granted.empty());
  CAF_CHECK_EQUAL(d.count(pool_event_kind::started, "w"), 0u);
  CAF_CHECK_EQUAL(d.count(pool_event_kind::released, "w"), 0u);
  for (auto name : {"a", "b"}) {
    CAF_CHECK_EQUAL(d.count(pool_event_kind::released, name), 1u);
    CAF_CHECK_EQUAL(d.last(pool_event_kind::released, name).reason,
                    release_reason::disconnected);
  }
  CAF_CHECK_EQUAL(d.core.running_count(), 0u);
  CAF_CHECK_EQUAL(d.core.queued_count(), 0u);
  CAF_CHECK_EQUAL(d.core.audit(), "");
  // A stopped pool grants nothing more and stops only once.
  auto late = d.acquire("s", "late");
  CAF_CHECK(late.status == acquire_status::failed);
  CAF_CHECK(late.code == errc::shutting_down);
  auto orphan = d.adopt("s", "orphan", "kid");
  CAF_CHECK(orphan.status == acquire_status::failed);
  CAF_CHECK(orphan.code == errc::shutting_down);
  CAF_CHECK(d.stop().empty());
  CAF_CHECK(d.core.effects().empty());
}

CAF_TEST(the core alone keeps which connections subscribed) {
  admission_driver d{config(2)};
  auto a = d.connection;
  auto b = d.core.attach(true);
  auto deaf = d.core.attach(false);
  CAF_CHECK(d.core.subscribe(b));
  CAF_CHECK(d.core.subscribe(a));
  CAF_CHECK(d.core.subscribe(b)); // twice counts once
  CAF_CHECK(!d.core.subscribe(deaf));
  CAF_CHECK(!d.core.subscribe(999));
  CAF_CHECK(d.core.subscribers() == (std::vector<uint64_t>{b, a}));
  d.detach(b);
  CAF_CHECK(d.core.subscribers() == (std::vector<uint64_t>{a}));
  d.detach(a);
  CAF_CHECK(d.core.subscribers().empty());
  // Nobody listens any more: no event is made.
  d.acquire("s", "x");
  CAF_CHECK(d.events.empty());
}

CAF_TEST(a subscriber sees the disconnect of another connection) {
  admission_driver d{config(2)};
  auto watcher = d.connection;
  d.core.subscribe(watcher);
  d.connection = d.core.attach(true);
  d.acquire("s", "a");
  d.detach(d.connection);
  CAF_CHECK_EQUAL(d.last(pool_event_kind::released, "a").reason,
                  release_reason::disconnected);
}

// -- detached permits ---------------------------------------------------------

CAF_TEST(a detached permit outlives its connection and a release from another
           connection ends it) {
  admission_driver d{config(1)};
  auto hook = d.connection;
  d.detached = true;
  auto a = d.acquire("s", "a");
  CAF_REQUIRE(a.status == acquire_status::granted);
  // The hook process exits: the permit stays held.
  CAF_CHECK(d.detach(hook).empty());
  CAF_CHECK_EQUAL(d.core.in_use("s"), 1u);
  CAF_CHECK_EQUAL(d.count(pool_event_kind::released, "a"), 0u);
  auto st = d.core.status(d.now);
  CAF_REQUIRE_EQUAL(st.pools.size(), 1u);
  CAF_REQUIRE_EQUAL(st.pools[0].running.size(), 1u);
  CAF_CHECK(st.pools[0].running[0].detached);
  // Later hook processes: the next acquire waits for it, a release of it
  // from yet another connection hands its permit on.
  d.connection = d.core.attach(true);
  auto b = d.acquire("s", "b");
  CAF_REQUIRE(b.status == acquire_status::queued);
  d.connection = d.core.attach(true);
  CAF_CHECK(d.release("a"));
  CAF_CHECK(d.granted.count(b.ticket) == 1);
  CAF_CHECK(!d.release("a"));
  CAF_CHECK_EQUAL(d.core.audit(), "");
}

CAF_TEST(
  a connection that closes while its detached acquire waits cancels that wait) {
  admission_driver d{config(1)};
  d.acquire("s", "held");
  d.connection = d.core.attach(true);
  d.detached = true;
  auto w = d.acquire("s", "w");
  CAF_REQUIRE(w.status == acquire_status::queued);
  CAF_CHECK(d.detach(d.connection) == (std::vector<std::string>{"w"}));
  CAF_REQUIRE(d.failed.count(w.ticket) == 1);
  CAF_CHECK(d.failed[w.ticket].code == errc::cancelled);
  CAF_CHECK_EQUAL(d.core.queued_count(), 0u);
  // The permit, once free, goes to nobody it would leak to.
  d.release("held");
  CAF_CHECK_EQUAL(d.core.in_use("s"), 0u);
}

CAF_TEST(a closing connection releases its attached holders and keeps its
           detached ones) {
  admission_driver d{config(3)};
  auto conn = d.connection;
  d.acquire("s", "plain");
  d.detached = true;
  d.acquire("s", "kept");
  d.adopt("s", "adopted", "child");
  CAF_CHECK(d.detach(conn) == (std::vector<std::string>{"plain"}));
  CAF_CHECK_EQUAL(d.last(pool_event_kind::released, "plain").reason,
                  release_reason::disconnected);
  CAF_CHECK_EQUAL(d.core.running_count(), 2u);
  // A detached adopted child ends when its session goes idle.
  CAF_CHECK(d.idle("child") == (std::vector<std::string>{"adopted"}));
  CAF_CHECK_EQUAL(d.core.running_count(), 1u);
}

CAF_TEST(a detached permit ends with end of its session idle of its child
         or the watchdog) {
  auto cfg = config(3);
  cfg.max_hold_ms = 1000;
  admission_driver d{cfg};
  auto hook = d.connection;
  d.detached = true;
  d.acquire("s", "fg");
  d.acquire("s", "bg", holder_kind::background, "", "", "agent-1");
  d.acquire("t", "leaked");
  d.detach(hook);
  // Nobody listens to the orphans any more, but a subscriber sees them end.
  auto watcher = d.core.attach(true);
  d.core.subscribe(watcher);
  d.now += 10;
  CAF_CHECK(d.idle("agent-1") == (std::vector<std::string>{"bg"}));
  CAF_CHECK_EQUAL(d.last(pool_event_kind::released, "bg").reason,
                  release_reason::idle);
  CAF_CHECK(d.end("s") == (std::vector<std::string>{"fg"}));
  CAF_CHECK_EQUAL(d.last(pool_event_kind::released, "fg").reason,
                  release_reason::ended);
  d.advance(1000);
  CAF_REQUIRE_EQUAL(d.forced.size(), 1u);
  CAF_CHECK_EQUAL(d.forced[0].holder, "leaked");
  CAF_CHECK_EQUAL(d.count(pool_event_kind::force_released, "leaked"), 1u);
  CAF_CHECK_EQUAL(d.core.running_count(), 0u);
  CAF_CHECK_EQUAL(d.core.audit(), "");
}

CAF_TEST(an orphaned detached permit emits events for subscribers only) {
  admission_driver d{config(2)};
  auto watcher = d.connection;
  d.connection = d.core.attach(true);
  auto hook = d.connection;
  d.detached = true;
  d.acquire("s", "a");
  d.detach(hook);
  d.release("a");
  // Its connection is gone and nobody subscribed: no event is made.
  CAF_CHECK_EQUAL(d.count(pool_event_kind::released, "a"), 0u);
  d.connection = d.core.attach(true);
  hook = d.connection;
  d.acquire("s", "b");
  d.detach(hook);
  d.core.subscribe(watcher);
  d.release("b");
  // A subscriber sees it; the event names no connection of its own.
  auto ev = d.last(pool_event_kind::released, "b");
  CAF_CHECK_EQUAL(ev.holder, "b");
  CAF_CHECK_EQUAL(ev.connection, 0u);
  CAF_CHECK_EQUAL(ev.reason, release_reason::completed);
}

CAF_TEST(the default tool names count Claude Code and OpenCode subagents) {
  admission_driver d{pool_config{}};
  for (auto tool : {"Agent", "Task", "task", "agent"}) {
    auto r = d.acquire("s", tool, fg, "", tool);
    CAF_CHECK(r.value.counted);
    CAF_CHECK(d.release(tool));
  }
  for (auto tool : {"Bash", "Workflow", "tasks"})
    CAF_CHECK(!d.acquire("s", "x", fg, "", tool).value.counted);
}

// -- watchdog -----------------------------------------------------------------

CAF_TEST(a holder past maxHoldMs is force released and its permit moves on) {
  auto cfg = config(1);
  cfg.max_hold_ms = 1000;
  cfg.queue_timeout_ms = 0;
  admission_driver d{cfg};
  d.acquire("s", "a");
  d.now += 300;
  auto b = d.acquire("s", "b");
  d.advance(699);
  CAF_CHECK(d.forced.empty());
  d.advance(1);
  CAF_REQUIRE_EQUAL(d.forced.size(), 1u);
  CAF_CHECK_EQUAL(d.forced[0].holder, "a");
  CAF_CHECK_EQUAL(d.forced[0].held_ms, 1000);
  CAF_CHECK_EQUAL(d.last(pool_event_kind::force_released, "a").held_ms, 1000);
  CAF_CHECK_EQUAL(d.count(pool_event_kind::released, "a"), 0u);
  CAF_CHECK(d.granted.count(b.ticket) == 1);
  CAF_CHECK(!d.release("a"));
  // b was granted at 1000 ms: it gets its own full maxHoldMs.
  d.advance(999);
  CAF_CHECK_EQUAL(d.forced.size(), 1u);
  d.advance(1);
  CAF_CHECK_EQUAL(d.forced.size(), 2u);
}

CAF_TEST(a stale timer after a normal release changes nothing) {
  auto cfg = config(1);
  cfg.max_hold_ms = 1000;
  admission_driver d{cfg};
  d.acquire("s", "a");
  auto armed = d.timers[pool::admission::hold_timer];
  d.release("a");
  d.now += 500;
  d.acquire("s", "b");
  // The old timer fires at 1000 ms: b is not due, so it re-arms for b.
  d.advance(500);
  CAF_CHECK(d.forced.empty());
  CAF_CHECK_EQUAL(d.core.running_count(), 1u);
  auto rearmed = d.timers[pool::admission::hold_timer];
  CAF_CHECK_NOT_EQUAL(rearmed.generation, armed.generation);
  CAF_CHECK_EQUAL(rearmed.deadline, d.now + 500);
  // An old generation delivered again is ignored.
  d.core.expire(pool::admission::hold_timer, armed.generation, d.now + 5000);
  CAF_CHECK(d.core.effects().empty());
  CAF_CHECK_EQUAL(d.core.running_count(), 1u);
  d.advance(500);
  CAF_CHECK_EQUAL(d.forced.size(), 1u);
}

CAF_TEST(the longest limits a config allows never come due) {
  auto cfg = config(1);
  cfg.max_hold_ms = (int64_t{1} << 53) - 1;
  cfg.queue_timeout_ms = (int64_t{1} << 53) - 1;
  cfg.idle_memory_ms = (int64_t{1} << 53) - 1;
  admission_driver d{cfg};
  d.acquire("s", "a");
  d.acquire("s", "b");
  d.acquire("t", "kid-call", bg);
  d.idle("kid");
  CAF_CHECK_EQUAL(d.timers.size(), 2u);
  d.advance(1'000'000'000'000);
  CAF_CHECK(d.forced.empty());
  CAF_CHECK(d.failed.empty());
  CAF_CHECK_EQUAL(d.core.running_count(), 2u);
  CAF_CHECK_EQUAL(d.core.queued_count(), 1u);
  // The idle is still remembered.
  CAF_CHECK(d.bind("kid-call", "kid"));
}

CAF_TEST(limits beyond the range of the clock arm no timer at all) {
  // A pool_config built in code is not bound by the config file's 2^53-1:
  // `now + limit` saturates instead of wrapping into the past, and a
  // deadline no clock reaches needs no timer.
  auto cfg = config(1);
  cfg.max_hold_ms = INT64_MAX;
  cfg.queue_timeout_ms = INT64_MAX;
  cfg.idle_memory_ms = INT64_MAX;
  admission_driver d{cfg};
  d.acquire("s", "a");
  d.acquire("s", "b");
  d.acquire("t", "kid-call", bg);
  d.idle("kid");
  CAF_CHECK(d.timers.empty());
  d.advance(1'000'000'000'000);
  CAF_CHECK(d.forced.empty());
  CAF_CHECK(d.failed.empty());
  CAF_CHECK_EQUAL(d.core.running_count(), 2u);
  CAF_CHECK_EQUAL(d.core.queued_count(), 1u);
  CAF_CHECK(d.bind("kid-call", "kid"));
  CAF_CHECK_EQUAL(d.core.audit(), "");
}

CAF_TEST(a timer forced before its deadline counts as due at its deadline) {
  auto cfg = config(1);
  cfg.max_hold_ms = 1000;
  admission_driver d{cfg};
  d.acquire("s", "a");
  auto armed = d.timers[pool::admission::hold_timer];
  // Forced at once, as a test's trigger_timeout would.
  d.core.expire(pool::admission::hold_timer, armed.generation, d.now);
  d.absorb();
  CAF_REQUIRE_EQUAL(d.forced.size(), 1u);
  CAF_CHECK_EQUAL(d.forced[0].held_ms, 1000);
  CAF_CHECK_EQUAL(d.core.running_count(), 0u);
}

// -- status -------------------------------------------------------------------

CAF_TEST(status shows running and queued holders of every pool) {
  admission_driver d{config(1)};
  d.acquire("s", "a", bg);
  d.now += 10;
  d.acquire("s", "b");
  d.now += 5;
  d.acquire("s", "c");
  // Refused (a background nested call never borrows): not shown.
  d.acquire("t", "n", bg, "a");
  d.now += 20;
  auto st = d.core.status(d.now);
  CAF_CHECK_EQUAL(st.max_parallel, 1u);
  CAF_REQUIRE_EQUAL(st.pools.size(), 1u);
  auto& p = st.pools[0];
  CAF_CHECK_EQUAL(p.key, "s");
  CAF_REQUIRE_EQUAL(p.running.size(), 1u);
  CAF_CHECK(p.running[0]
            == (running_entry{"a", "s", holder_kind::background, 35, false}));
  CAF_REQUIRE_EQUAL(p.queued.size(), 2u);
  CAF_CHECK(p.queued[0] == (queued_entry{"b", "s", 1, 25}));
  CAF_CHECK(p.queued[1] == (queued_entry{"c", "s", 2, 20}));
}

CAF_TEST(status shows lent holders) {
  admission_driver d{config(1)};
  d.acquire("s", "p");
  d.acquire("t", "n", fg, "p");
  auto st = d.core.status(d.now);
  CAF_REQUIRE_EQUAL(st.pools.size(), 1u);
  CAF_REQUIRE_EQUAL(st.pools[0].running.size(), 2u);
  CAF_CHECK_EQUAL(st.pools[0].running[1].lent, true);
  CAF_CHECK_EQUAL(st.pools[0].running[1].session, "t");
}
