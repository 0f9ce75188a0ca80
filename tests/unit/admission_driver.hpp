// A test driver around the admission core: a simulated clock, a simulated
// watchdog (armed timers fire when the clock passes them) and a record of
// every side effect.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "src/pool/admission.hpp"

namespace taskforce::test {

/// Drives a pool::admission with simulated time and records its effects.
struct admission_driver {
  explicit admission_driver(pool_config cfg) : core(std::move(cfg)) {
    connection = core.attach(true);
  }

  /// Records the effects of the last operation.
  void absorb() {
    auto& fx = core.effects();
    for (auto& ev : fx.events)
      events.push_back(ev);
    for (auto& d : fx.grants)
      granted[d.ticket] = d.value;
    for (auto& f : fx.failures)
      failed[f.ticket] = f;
    for (auto& f : fx.forced)
      forced.push_back(f);
    for (auto& t : fx.arms)
      timers[t.id] = {t.generation, now + t.delay_ms};
    if (on_effects)
      on_effects();
  }

  pool::acquire_result acquire(const std::string& session,
                               const std::string& holder,
                               holder_kind kind = holder_kind::foreground,
                               const std::string& parent = "",
                               const std::string& tool = "",
                               const std::string& child = "") {
    acquire_request req{session, holder, kind,       child,
                        parent,  tool,   connection, detached};
    auto result = core.acquire(std::move(req), now);
    absorb();
    return result;
  }

  pool::acquire_result adopt(const std::string& session,
                             const std::string& holder,
                             const std::string& child) {
    auto result
      = core.adopt({session, holder, child, connection, detached}, now);
    absorb();
    return result;
  }

  bool release(const std::string& holder,
               release_reason reason = release_reason::completed) {
    auto result = core.release(holder, reason, now);
    absorb();
    return result;
  }

  bool bind(const std::string& holder, const std::string& child) {
    auto result = core.bind(holder, child, now);
    absorb();
    return result;
  }

  std::string child_started(const std::string& session,
                            const std::string& child) {
    auto result = core.child_started(session, child, now);
    absorb();
    return result;
  }

  std::vector<std::string> idle(const std::string& session) {
    auto result = core.idle(session, now);
    absorb();
    return result;
  }

  std::vector<std::string> end(const std::string& session) {
    auto result = core.end(session, now);
    absorb();
    return result;
  }

  std::vector<std::string> detach(uint64_t conn) {
    auto result = core.detach(conn, now);
    absorb();
    return result;
  }

  std::vector<std::string> stop() {
    auto result = core.stop(now);
    absorb();
    return result;
  }

  /// Moves the clock and fires every timer that came due, like the watchdog.
  void advance(int64_t ms) {
    auto target = now + ms;
    for (;;) {
      auto next = timers.end();
      for (auto i = timers.begin(); i != timers.end(); ++i)
        if (i->second.deadline <= target
            && (next == timers.end()
                || i->second.deadline < next->second.deadline))
          next = i;
      if (next == timers.end())
        break;
      now = std::max(now, next->second.deadline);
      auto id = next->first;
      auto generation = next->second.generation;
      timers.erase(next);
      core.expire(id, generation, now);
      absorb();
    }
    now = target;
  }

  /// The events of `kind` for `holder`.
  size_t count(pool_event_kind kind, const std::string& holder) const {
    size_t n = 0;
    for (auto& ev : events)
      if (ev.kind == kind && ev.holder == holder)
        ++n;
    return n;
  }

  /// The last event of `kind` for `holder`, or a default event.
  pool_event last(pool_event_kind kind, const std::string& holder) const {
    for (auto i = events.rbegin(); i != events.rend(); ++i)
      if (i->kind == kind && i->holder == holder)
        return *i;
    return {};
  }

  struct armed {
    uint64_t generation = 0;
    int64_t deadline = 0;
  };

  pool::admission core;
  /// Called after every operation's effects were recorded.
  std::function<void()> on_effects;
  uint64_t connection = 0;
  /// Whether acquire() and adopt() ask for detached permits.
  bool detached = false;
  int64_t now = 1000;
  std::vector<pool_event> events;
  std::map<uint64_t, grant> granted;
  std::map<uint64_t, pool::failure> failed;
  std::vector<pool::forced_release> forced;
  std::map<uint64_t, armed> timers;
};

} // namespace taskforce::test
