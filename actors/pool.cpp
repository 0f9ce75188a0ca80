#include "actors/pool.hpp"

#include <algorithm>
#include <chrono>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/log_handlers.hpp"
#include "src/time/duration.hpp"

namespace taskforce {

// -- state --------------------------------------------------------------------

pool_state::~pool_state() {
  for (auto& [ticket, promise] : waiting)
    if (promise.pending())
      promise.deliver(
        caf::make_error(errc::shutting_down, "the pool is shutting down"));
  waiting.clear();
  if (owns_watchdog && watchdog)
    caf::anon_send_exit(watchdog, caf::exit_reason::user_shutdown);
}

int64_t pool_state::now() const {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  return duration_cast<milliseconds>(self->clock().now().time_since_epoch())
    .count();
}

// Events go out before answers, so a holder's `queued` and `started` always
// reach its connection before its acquire's answer, whether granted at once
// (the answer leaves when the handler returns), after a wait, lent or
// adopted; and a timed-out wait's `timed_out` before its error.
void pool_state::apply() {
  auto& fx = core->effects();
  for (auto& ev : fx.events)
    route(ev);
  for (auto& d : fx.grants)
    if (auto i = waiting.find(d.ticket); i != waiting.end()) {
      i->second.deliver(d.value);
      waiting.erase(i);
    }
  for (auto& f : fx.failures)
    if (auto i = waiting.find(f.ticket); i != waiting.end()) {
      i->second.deliver(caf::make_error(f.code, f.message));
      waiting.erase(i);
    }
  // A force-release means a holder leaked its permit: say so loudly.
  for (auto& f : fx.forced)
    spdlog::warn("pool: holder '{}' of session '{}' held its permit {} ms, "
                 "longer than maxHoldMs {}: force-released",
                 f.holder, f.session, f.held_ms, core->config().max_hold_ms);
  for (auto& t : fx.arms)
    self->send(watchdog, arm_atom_v, t.id, t.generation,
               caf::timespan{saturating_ms(t.delay_ms)});
}

void pool_state::route(const pool_event& ev) {
  // Listeners are dynamically typed; a typed actor reaches them anonymously.
  if (auto i = listeners.find(ev.connection); i != listeners.end())
    caf::anon_send(i->second, event_atom_v, ev);
  for (auto conn : core->subscribers())
    if (conn != ev.connection)
      if (auto i = listeners.find(conn); i != listeners.end())
        caf::anon_send(i->second, event_atom_v, ev);
}

void pool_state::forget(uint64_t connection) {
  listeners.erase(connection);
}

// -- behaviour ----------------------------------------------------------------

namespace {

caf::result<grant> answer(pool_actor::stateful_pointer<pool_state> self,
                          pool::acquire_result& r) {
  auto& st = self->state;
  switch (r.status) {
    case pool::acquire_status::granted: st.apply(); return r.value;
    case pool::acquire_status::failed:
      st.apply();
      return caf::make_error(r.code, std::move(r.message));
    case pool::acquire_status::queued: break;
  }
  // The promise takes the request's sender; nothing reads it afterwards.
  auto rp = self->make_response_promise<grant>();
  st.waiting.emplace(r.ticket, rp);
  st.apply();
  return rp;
}

} // namespace

pool_actor::behavior_type
pool_behavior(pool_actor::stateful_pointer<pool_state> self, pool_config cfg,
              watchdog_actor wd, bool owns_watchdog) {
  auto& st = self->state;
  st.self = self;
  st.core = std::make_unique<pool::admission>(std::move(cfg));
  st.watchdog = std::move(wd);
  st.owns_watchdog = owns_watchdog;
  log_instead_of_printing(self);
  // A listener that exits closes its connections.
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    std::vector<uint64_t> closed;
    for (auto& [conn, listener] : st.listeners)
      if (listener.address() == msg.source)
        closed.push_back(conn);
    for (auto conn : closed) {
      st.forget(conn);
      st.core->detach(conn, st.now());
      st.apply();
    }
  });
  // Stopping (the server's shutdown): every holder that held a permit gets
  // its `released` and every wait its shutting_down before the pool goes, so
  // listeners see them before the pool's down message. A kill skips this;
  // the state's destructor still fails the waits.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    auto& st = self->state;
    auto affected = st.core->stop(st.now());
    if (!affected.empty())
      spdlog::info("pool stopping: released or cancelled {} holder(s)",
                   affected.size());
    st.apply();
    self->quit(msg.reason);
  });
  return {
    // -- admission (the hot pair first: handlers are tried in order)
    // -----------
    [self](acquire_atom, acquire_request& req) -> caf::result<grant> {
      auto& st = self->state;
      auto r = st.core->acquire(std::move(req), st.now());
      return answer(self, r);
    },
    [self](release_atom, const std::string& holder, release_reason reason) {
      auto& st = self->state;
      auto released = st.core->release(holder, reason, st.now());
      st.apply();
      return released;
    },
    [self](adopt_atom, adopt_request& req) -> caf::result<grant> {
      auto& st = self->state;
      auto r = st.core->adopt(std::move(req), st.now());
      return answer(self, r);
    },
    [self](bind_atom, const std::string& holder, const std::string& child) {
      auto& st = self->state;
      auto released = st.core->bind(holder, child, st.now());
      st.apply();
      return released;
    },
    [self](start_atom, const std::string& session, const std::string& child) {
      auto& st = self->state;
      return st.core->child_started(session, child, st.now());
    },
    [self](caf::idle_atom, const std::string& session) {
      auto& st = self->state;
      auto released = st.core->idle(session, st.now());
      st.apply();
      return released;
    },
    [self](end_atom, const std::string& session) {
      auto& st = self->state;
      auto affected = st.core->end(session, st.now());
      st.apply();
      return affected;
    },
    [self](status_atom) {
      auto& st = self->state;
      return st.core->status(st.now());
    },
    // -- connections
    // ------------------------------------------------------------
    [self](attach_atom, caf::actor listener) {
      auto& st = self->state;
      auto conn = st.core->attach(listener != nullptr);
      if (listener != nullptr) {
        self->monitor(listener);
        st.listeners.emplace(conn, std::move(listener));
      }
      return conn;
    },
    [self](subscribe_atom, uint64_t conn) {
      return self->state.core->subscribe(conn);
    },
    [self](detach_atom, uint64_t conn) {
      auto& st = self->state;
      // The connection still gets the end of what it held, then is forgotten.
      auto affected = st.core->detach(conn, st.now());
      st.apply();
      st.forget(conn);
      return affected;
    },
    // -- timers
    // -----------------------------------------------------------------
    [self](expired_atom, uint64_t id, uint64_t generation) {
      auto& st = self->state;
      st.core->expire(id, generation, st.now());
      st.apply();
    },
  };
}

pool_actor spawn_pool(caf::actor_system& sys, const pool_config& cfg) {
  auto wd = sys.spawn(watchdog);
  return sys.spawn(pool_behavior, cfg, std::move(wd), true);
}

pool_actor spawn_pool(caf::actor_system& sys, const pool_config& cfg,
                      watchdog_actor wd) {
  return sys.spawn(pool_behavior, cfg, std::move(wd), false);
}

} // namespace taskforce
