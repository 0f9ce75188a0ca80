#define CAF_SUITE unit.admission_random
#include <caf/test/unit_test.hpp>

#include <cstdlib>
#include <map>
#include <random>
#include <set>

#include "unit/admission_driver.hpp"

using namespace taskforce;
using taskforce::pool::acquire_status;

namespace {

/// The fixed seed; TASKFORCE_SEED replays another one.
uint64_t seed() {
  auto env = std::getenv("TASKFORCE_SEED");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 20261129;
}

/// A model of every holder's life, fed by events, answers and grants; it
/// checks the protocol's promises after every step.
struct checker {
  enum class life { queued, running };

  explicit checker(pool::admission& core) : core(core) {}

  pool::admission& core;
  /// Holder -> where it is in its life.
  std::map<std::string, life> holders;
  /// Ticket of a queued acquire -> (pool key, holder).
  std::map<uint64_t, std::pair<std::string, std::string>> waiting;
  size_t grants = 0;
  size_t terminal = 0;
  std::string error;

  void fail(const std::string& what) {
    if (error.empty())
      error = what;
  }

  std::string key_of(const std::string& session) const {
    return core.config().mode == pool_mode::global ? "global" : session;
  }

  /// Checks an acquire's immediate answer against its events.
  void answered(const std::string& holder, const std::string& pool_key,
                const pool::acquire_result& r, bool counted_expected) {
    auto& fx = core.effects();
    auto has = [&](pool_event_kind k) {
      for (auto& ev : fx.events)
        if (ev.kind == k && ev.holder == holder)
          return true;
      return false;
    };
    switch (r.status) {
      case acquire_status::granted:
        if (!r.value.counted) {
          if (counted_expected)
            fail("a subagent tool was not counted: " + holder);
          return;
        }
        if (!has(pool_event_kind::started))
          fail("immediate grant without started: " + holder);
        break;
      case acquire_status::queued:
        if (!has(pool_event_kind::queued))
          fail("queued without a queued event: " + holder);
        waiting[r.ticket] = {pool_key, holder};
        break;
      case acquire_status::failed:
        if (has(pool_event_kind::started) || has(pool_event_kind::queued))
          fail("a refused acquire produced events: " + holder);
        break;
    }
  }

  /// Follows the effects of the last operation.
  void follow() {
    auto& fx = core.effects();
    for (auto& ev : fx.events) {
      auto i = holders.find(ev.holder);
      switch (ev.kind) {
        case pool_event_kind::queued:
          if (i != holders.end())
            fail("queued twice: " + ev.holder);
          holders[ev.holder] = life::queued;
          break;
        case pool_event_kind::started:
          if (i != holders.end() && i->second == life::running)
            fail("started twice: " + ev.holder);
          holders[ev.holder] = life::running;
          ++grants;
          break;
        case pool_event_kind::released:
        case pool_event_kind::force_released:
          // Only a holder that held a permit gets a terminal event.
          if (i == holders.end())
            fail("terminal event for a holder that is gone: " + ev.holder);
          else if (i->second != life::running)
            fail("terminal event for a holder that never held a permit: "
                 + ev.holder);
          else
            holders.erase(i);
          ++terminal;
          break;
        case pool_event_kind::timed_out:
          if (i == holders.end() || i->second != life::queued)
            fail("timed out but not queued: " + ev.holder);
          else
            holders.erase(i);
          break;
      }
    }
    // Cancellations of an operation come before its hand-offs (end and
    // detach cancel waits first), so take them first. A cancelled wait ends
    // with its error alone.
    for (auto& f : fx.failures) {
      auto w = waiting.find(f.ticket);
      if (w == waiting.end()) {
        fail("failure for an unknown ticket");
        continue;
      }
      if (auto i = holders.find(w->second.second);
          i != holders.end() && i->second == life::queued)
        holders.erase(i);
      waiting.erase(w);
    }
    for (auto& d : fx.grants) {
      auto w = waiting.find(d.ticket);
      if (w == waiting.end()) {
        fail("grant for an unknown ticket");
        continue;
      }
      // FIFO: nobody older in the same pool may still wait.
      for (auto& [ticket, entry] : waiting)
        if (ticket < d.ticket && entry.first == w->second.first)
          fail("grant to " + w->second.second + " overtook " + entry.second);
      waiting.erase(w);
    }
  }

  /// Checks the core's structure and counters against the model.
  void check() {
    if (auto what = core.audit(); !what.empty())
      fail("audit: " + what);
    if (holders.size() != core.running_count() + core.queued_count())
      fail("model and core disagree on the number of holders");
    if (waiting.size() != core.queued_count())
      fail("model and core disagree on the number of waiters");
  }
};

struct scenario {
  uint64_t max_parallel;
  pool_mode mode;
  nested_policy nested;
  int64_t queue_timeout_ms;
};

void run(const scenario& sc, std::mt19937_64& rng, size_t steps) {
  pool_config cfg;
  cfg.max_parallel = sc.max_parallel;
  cfg.mode = sc.mode;
  cfg.nested = sc.nested;
  cfg.queue_timeout_ms = sc.queue_timeout_ms;
  cfg.max_hold_ms = 400;
  cfg.idle_memory_ms = 30;
  cfg.subagent_tool_names = {"task"};
  test::admission_driver d{cfg};
  // The driver's own connection only watches every event.
  d.core.subscribe(d.connection);
  checker model{d.core};
  d.on_effects = [&] {
    model.follow();
  };
  std::vector<std::string> sessions{"s1", "s2", "s3", "s4", "c1", "c2"};
  std::vector<uint64_t> connections{0, d.core.attach(true), d.core.attach(true),
                                    d.core.attach(false)};
  std::vector<std::string> names;
  auto pick = [&](auto& xs) -> auto& {
    return xs[std::uniform_int_distribution<size_t>(0, xs.size() - 1)(rng)];
  };
  auto chance = [&](int percent) {
    return std::uniform_int_distribution<int>(0, 99)(rng) < percent;
  };
  auto some_name = [&]() -> std::string {
    if (names.empty() || chance(10))
      return "ghost";
    return pick(names);
  };
  size_t serial = 0;
  for (size_t step = 0; step < steps && model.error.empty(); ++step) {
    auto op = std::uniform_int_distribution<int>(0, 99)(rng);
    if (op < 30) {
      // Root or nested acquire, sometimes of a non-subagent tool.
      acquire_request req;
      req.session = pick(sessions);
      req.holder = chance(3) && !names.empty() ? pick(names)
                                               : "h" + std::to_string(++serial);
      req.kind = chance(40) ? holder_kind::background : holder_kind::foreground;
      if (chance(30))
        req.child_session = pick(sessions);
      // A parent named by its holder, or by a child session (an agent).
      if (chance(30))
        req.parent = chance(50) ? some_name() : pick(sessions);
      req.tool = chance(10) ? "bash" : (chance(50) ? "task" : "");
      req.connection = pick(connections);
      auto holder = req.holder;
      auto key = model.key_of(req.session);
      auto counted = req.tool != "bash";
      auto r = d.core.acquire(std::move(req), d.now);
      d.absorb();
      model.answered(holder, key, r, counted);
      if (r.status != acquire_status::failed && r.value.counted)
        names.push_back(holder);
    } else if (op < 36) {
      adopt_request req{pick(sessions), "a" + std::to_string(++serial),
                        pick(sessions), pick(connections)};
      auto holder = req.holder;
      auto key = model.key_of(req.session);
      auto r = d.core.adopt(std::move(req), d.now);
      d.absorb();
      CAF_CHECK(r.status != acquire_status::queued);
      model.answered(holder, key, r, true);
      if (r.status == acquire_status::granted)
        names.push_back(holder);
    } else if (op < 60) {
      auto reasons = {release_reason::completed, release_reason::error,
                      release_reason::aborted};
      auto reason = *(reasons.begin() + (rng() % 3));
      d.release(some_name(), reason);
    } else if (op < 66) {
      d.bind(some_name(), pick(sessions));
    } else if (op < 74) {
      d.idle(pick(sessions));
    } else if (op < 78) {
      d.end(pick(sessions));
    } else if (op < 82) {
      auto& conn = connections[1 + rng() % 3];
      d.detach(conn);
      conn = d.core.attach(chance(70));
    } else if (op < 86) {
      d.child_started(pick(sessions), pick(sessions));
    } else {
      // Time passes; due timers fire as the watchdog would fire them.
      d.advance(std::uniform_int_distribution<int64_t>(0, 60)(rng));
    }
    model.check();
  }
  CAF_CHECK_EQUAL(model.error, "");
  // Leave: every connection closes and every session ends.
  for (auto conn : connections) {
    d.detach(conn);
    model.check();
  }
  for (auto& s : sessions) {
    d.end(s);
    model.check();
  }
  CAF_CHECK_EQUAL(model.error, "");
  CAF_CHECK_EQUAL(d.core.running_count(), 0u);
  CAF_CHECK_EQUAL(d.core.queued_count(), 0u);
  CAF_CHECK_EQUAL(d.core.untied_children(), 0u);
  CAF_CHECK(model.holders.empty());
  CAF_CHECK(model.waiting.empty());
  CAF_CHECK(d.core.status(d.now).pools.empty());
  CAF_CHECK_EQUAL(d.core.audit(), "");
  // Every grant ended in exactly one terminal event.
  CAF_CHECK_EQUAL(model.terminal, model.grants);
  CAF_MESSAGE("max_parallel " << sc.max_parallel << ": " << model.grants
                              << " grants, " << model.terminal
                              << " terminal events, " << d.forced.size()
                              << " force-released");
}

} // namespace

CAF_TEST(random operations keep the bound and leave nothing behind) {
  CAF_MESSAGE("seed " << seed() << " (set TASKFORCE_SEED to replay another)");
  std::mt19937_64 rng{seed()};
  std::vector<scenario> scenarios{
    {1, pool_mode::session, nested_policy::lend, 50},
    {2, pool_mode::session, nested_policy::lend, 0},
    {2, pool_mode::global, nested_policy::lend, 80},
    {3, pool_mode::global, nested_policy::fail_fast, 40},
    {2, pool_mode::session, nested_policy::fail_fast, 120},
  };
  for (auto& sc : scenarios)
    run(sc, rng, 4000);
}
