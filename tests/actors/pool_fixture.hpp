// The deterministic fixture of the pool actor suites: a pool on the test
// coordinator with its own watchdog, and harness-like clients that attach as
// connections, send acquires and record answers and events. Include it after
// caf/test/dsl.hpp. Time moves only when a test advances it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/pool.hpp"
#include "actors/watchdog.hpp"

namespace taskforce::test {

struct registered_config : caf::actor_system_config {
  registered_config() {
    add_message_types<caf::id_block::taskforce>();
  }
};

/// What one client saw.
struct client_log {
  std::vector<pool_event> events;
  std::map<std::string, grant> grants;
  std::map<std::string, caf::error> errors;
  /// Answers in arrival order: the holder, "!holder" for an error.
  std::vector<std::string> answers;
  /// Answers and events in arrival order: "answer:holder", "error:holder",
  /// "<event kind>:holder".
  std::vector<std::string> timeline;

  /// The position of `entry` in the timeline, or -1.
  long position(const std::string& entry) const {
    for (size_t i = 0; i < timeline.size(); ++i)
      if (timeline[i] == entry)
        return static_cast<long>(i);
    return -1;
  }

  /// The events of `kind` for `holder`.
  std::vector<pool_event> of(pool_event_kind kind,
                             const std::string& holder) const {
    std::vector<pool_event> result;
    for (auto& ev : events)
      if (ev.kind == kind && ev.holder == holder)
        result.push_back(ev);
    return result;
  }

  /// The error code of `holder`'s acquire, if it failed.
  errc error_of(const std::string& holder) const {
    auto i = errors.find(holder);
    if (i == errors.end() || i->second.category() != caf::atom("taskforce"))
      return static_cast<errc>(0);
    return static_cast<errc>(i->second.code());
  }

  /// The error message of `holder`'s acquire.
  std::string message_of(const std::string& holder) const {
    auto i = errors.find(holder);
    if (i == errors.end() || i->second.context().empty())
      return {};
    return i->second.context().get_as<std::string>(0);
  }
};

/// A harness connection: acquires on request of the test, records all.
inline caf::behavior client(caf::event_based_actor* self, pool_actor pool,
                            std::shared_ptr<client_log> log) {
  auto on_answer = [=](const std::string& name) {
    return std::make_pair(
      [=](grant& g) {
        log->grants[name] = g;
        log->answers.push_back(name);
        log->timeline.push_back("answer:" + name);
      },
      [=](caf::error& e) {
        log->errors[name] = e;
        log->answers.push_back("!" + name);
        log->timeline.push_back("error:" + name);
      });
  };
  return {
    [=](acquire_atom, acquire_request& req) {
      auto [ok, err] = on_answer(req.holder);
      self->request(pool, caf::infinite, acquire_atom_v, std::move(req))
        .then(ok, err);
    },
    [=](adopt_atom, adopt_request& req) {
      auto [ok, err] = on_answer(req.holder);
      self->request(pool, caf::infinite, adopt_atom_v, std::move(req))
        .then(ok, err);
    },
    [=](event_atom, pool_event& ev) {
      log->timeline.push_back(std::string{to_string(ev.kind)} + ":"
                              + ev.holder);
      log->events.push_back(std::move(ev));
    },
  };
}

/// One attached client.
struct connection {
  caf::actor actor;
  std::shared_ptr<client_log> log;
  uint64_t id = 0;
};

/// A pool with its own watchdog on the test coordinator.
struct pool_fixture : test_coordinator_fixture<registered_config> {
  ~pool_fixture() override {
    for (auto& c : clients)
      caf::anon_send_exit(c, caf::exit_reason::kill);
    if (pool)
      caf::anon_send_exit(pool, caf::exit_reason::kill);
    if (wd)
      caf::anon_send_exit(wd, caf::exit_reason::kill);
    sched.run();
  }

  /// Spawns the pool (its default config unless given).
  void start(pool_config c = {}) {
    cfg = c;
    wd = sys.spawn(watchdog);
    pool = spawn_pool(sys, cfg, wd);
    sched.run();
  }

  /// Stops the running pool (and its watchdog) and starts a fresh one.
  void restart(pool_config c) {
    caf::anon_send_exit(pool, caf::exit_reason::kill);
    caf::anon_send_exit(wd, caf::exit_reason::kill);
    sched.run();
    start(std::move(c));
  }

  /// A request to the pool answered at once (never an acquire that queues).
  template<class T, class... Ts>
  T ask(Ts... xs) {
    T result{};
    auto answer = self->request(pool, caf::infinite, std::move(xs)...);
    sched.run();
    answer.receive(
      [&](T& x) {
        result = std::move(x);
      },
      [&](caf::error& e) {
        CAF_FAIL("unexpected error: " << sys.render(e));
      });
    return result;
  }

  /// A fresh client attached as a connection.
  connection connect(bool subscribe = false) {
    connection c;
    c.log = std::make_shared<client_log>();
    c.actor = sys.spawn(client, pool, c.log);
    clients.push_back(c.actor);
    sched.run();
    c.id = ask<uint64_t>(attach_atom_v, c.actor);
    if (subscribe)
      CAF_CHECK(ask<bool>(subscribe_atom_v, c.id));
    return c;
  }

  /// Sends an acquire through `c` and runs until nothing moves.
  void acquire(const connection& c, const std::string& session,
               const std::string& holder,
               holder_kind kind = holder_kind::foreground,
               const std::string& parent = "", const std::string& tool = "",
               const std::string& child = "") {
    acquire_request req{session, holder, kind, child, parent, tool, c.id};
    self->send(c.actor, acquire_atom_v, std::move(req));
    sched.run();
  }

  /// Sends an adopt through `c` and runs until nothing moves.
  void adopt(const connection& c, const std::string& session,
             const std::string& holder, const std::string& child) {
    self->send(c.actor, adopt_atom_v,
               adopt_request{session, holder, child, c.id});
    sched.run();
  }

  bool release(const std::string& holder,
               release_reason reason = release_reason::completed) {
    return ask<bool>(release_atom_v, holder, reason);
  }

  pool_status status() {
    return ask<pool_status>(status_atom_v);
  }

  /// Moves the test clock; due timers fire and everything runs.
  void advance(caf::timespan x) {
    advance_time(x);
    sched.run();
  }

  pool_config cfg;
  watchdog_actor wd;
  pool_actor pool;
  std::vector<caf::actor> clients;
};

} // namespace taskforce::test
