#include "actors/monitor.hpp"

#include <signal.h>

#include <fstream>
#include <map>
#include <memory>
#include <optional>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "src/control/monitor_store.hpp"
#include "src/control/validation.hpp"
#include "src/proc/mark.hpp"
#include "src/store/ledger.hpp"

namespace fs = std::filesystem;

namespace taskforce {

namespace {

using control::monitor_state;

/// A wait not answered yet.
struct pending_wait {
  /// Its timer's generation.
  uint64_t generation = 0;
  caf::typed_response_promise<monitor_wait_result> promise;
};

/// A monitor whose process this actor watches.
struct live_monitor {
  std::string id;
  caf::actor helper;
  /// The mark of its processes (proc::kill_running).
  std::string mark;
  bool started = false;
  bool kill_requested = false;
  bool ready = false;
  std::vector<caf::typed_response_promise<monitor_info>> starts;
  std::vector<pending_wait> waits;
  std::vector<caf::typed_response_promise<monitor_info>> kills;
};

struct monitors_state {
  static inline const char* name = "monitors";

  // -- member functions --------------------------------------------------

  /// A row as the answers show it.
  monitor_info info_of(const control::monitor_row& row) const;
  /// The monitor `id` as it stands; throws control_error when unknown.
  monitor_info info(const std::string& id) const;
  /// Tells every subscriber.
  void publish(const std::string& kind, const monitor_info& m);
  /// Answers every wait of `m` with `reason`.
  void answer_waits(live_monitor& m, const std::string& reason);
  /// Rows of owners that went away become unavailable (and are published).
  void reconcile();

  // -- member variables --------------------------------------------------

  monitors_setup setup;
  std::shared_ptr<store::ledger> db;
  std::unique_ptr<control::monitor_store> store;
  /// This server instance's lock: its monitors are live while it is held.
  std::shared_ptr<control::owner_lock> lock;
  /// By id: the monitors whose processes run under this actor.
  std::map<std::string, live_monitor> live;
  /// The monitor each process helper runs.
  std::map<caf::actor_addr, std::string> by_helper;
  std::vector<caf::actor> subscribers;
  uint64_t generation = 0;

  ~monitors_state();
};

caf::error refusal(const control::control_error& e) {
  control_errc code = control_errc::io;
  from_string(to_string(e.code()), code);
  return caf::make_error(code, std::string{e.what()});
}

caf::error io_failure(const std::exception& e) {
  return caf::make_error(control_errc::io, std::string{e.what()});
}

monitor_info monitors_state::info_of(const control::monitor_row& row) const {
  auto v = store->view(row, setup.owner);
  monitor_info m;
  m.id = row.id;
  m.command = row.command;
  m.cwd = row.cwd;
  m.wake_pattern = row.wake_pattern.value_or("");
  m.timeout_ms = row.timeout_ms;
  m.session = row.session.value_or("");
  m.state = control::to_string(row.state);
  m.exit_code = row.exit_code.value_or(-1);
  m.pid = row.pid.value_or(-1);
  m.live = v.live;
  m.ready = v.ready;
  m.log_file = std::move(v.log_file);
  m.reason = std::move(v.reason);
  m.created_ms = row.created_ms;
  m.updated_ms = row.updated_ms;
  return m;
}

monitor_info monitors_state::info(const std::string& id) const {
  return info_of(store->require(id));
}

void monitors_state::publish(const std::string& kind, const monitor_info& m) {
  for (auto& s : subscribers)
    caf::anon_send(s, monitor_event{kind, m});
}

void monitors_state::answer_waits(live_monitor& m, const std::string& reason) {
  if (m.waits.empty())
    return;
  auto now = info(m.id);
  for (auto& w : m.waits)
    w.promise.deliver(monitor_wait_result{reason, now});
  m.waits.clear();
}

void monitors_state::reconcile() {
  for (auto& row : store->reconcile(setup.owner, setup.now_ms()))
    publish("changed", info_of(row));
}

monitors_state::~monitors_state() {
  // Nothing this actor started outlives it, and nothing is left running in
  // the ledger for a process that is gone.
  auto gone = caf::make_error(control_errc::unavailable,
                              "the server stopped its monitors");
  for (auto& [id, m] : live) {
    if (!m.mark.empty() && setup.killer)
      setup.killer(m.mark);
    for (auto& p : m.starts)
      p.deliver(gone);
    for (auto& w : m.waits)
      w.promise.deliver(gone);
    for (auto& p : m.kills)
      p.deliver(gone);
    try {
      if (store)
        store->finish(id, monitor_state::killed, std::nullopt,
                      setup.now_ms ? setup.now_ms() : 0, "the server stopped");
    } catch (const std::exception& e) {
      spdlog::warn("monitor {}: cannot record its end: {}", id, e.what());
    }
  }
}

/// How a helper's report of the end becomes the monitor's end.
struct end_of_run {
  monitor_state state = monitor_state::done;
  std::optional<int64_t> exit_code;
  std::string reason;
};

end_of_run end_of(const proc_exited& x, bool kill_requested) {
  end_of_run e;
  if (!x.error.empty()) {
    e.state = monitor_state::failed;
    e.reason = "it could not start: " + x.error;
  } else if (kill_requested) {
    e.state = monitor_state::killed;
    e.reason = "killed: " + x.description;
  } else if (x.timed_out) {
    e.state = monitor_state::timeout;
    e.reason = x.description;
  } else {
    e.state = monitor_state::done;
    if (x.signal == 0)
      e.exit_code = x.exit_code;
    else
      e.reason = x.description;
  }
  return e;
}

monitors_actor::behavior_type
monitors(monitors_actor::stateful_pointer<monitors_state> self,
         monitors_setup setup, std::shared_ptr<store::ledger> db,
         std::shared_ptr<control::owner_lock> lock) {
  auto& st = self->state;
  st.setup = std::move(setup);
  st.db = std::move(db);
  st.lock = std::move(lock);
  st.store
    = std::make_unique<control::monitor_store>(*st.db, st.setup.repository);
  try {
    st.reconcile();
  } catch (const std::exception& e) {
    spdlog::warn("monitors: cannot reconcile the ledger: {}", e.what());
  }
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& subs = self->state.subscribers;
    subs.erase(std::remove_if(subs.begin(), subs.end(),
                              [&](const caf::actor& a) {
                                return a.address() == msg.source;
                              }),
               subs.end());
  });
  return {
    // -- monitor.run ------------------------------------------------------
    [self](start_atom, monitor_spec& spec) -> caf::result<monitor_info> {
      auto& st = self->state;
      control::monitor_row row;
      std::optional<control::wake_matcher> matcher;
      try {
        auto m = control::check_monitor_spec(st.setup.repository, spec.command,
                                             spec.cwd, spec.wake_pattern,
                                             spec.timeout_ms, spec.session);
        if (m.wake_pattern)
          matcher.emplace(*m.wake_pattern);
        st.reconcile();
        row = st.store->create(m, st.setup.owner, st.setup.max_monitors,
                               st.setup.now_ms());
      } catch (const control::control_error& e) {
        return refusal(e);
      } catch (const std::exception& e) {
        return io_failure(e);
      }
      auto log = control::monitor_log_file(st.setup.repository, row.id);
      process_job job;
      job.run.argv = {"/bin/sh", "-c", row.command};
      auto top = fs::canonical(st.setup.repository);
      job.run.cwd = (row.cwd == "." ? top : top / row.cwd).string();
      job.run.log_file = log.string();
      job.run.tail_bytes = 4096;
      job.run.timeout = std::chrono::milliseconds(row.timeout_ms);
      job.run.kill_grace = st.setup.kill_grace;
      job.run.label = "monitor/" + row.id + "/";
      job.run.mark = proc::new_mark(job.run.label);
      if (matcher) {
        // Searched on the helper's thread as the output arrives; the
        // first match is told once.
        auto shared = std::make_shared<control::wake_matcher>(*matcher);
        auto me = caf::actor_cast<caf::actor>(self);
        job.run.on_data = [shared, me, id = row.id](std::string_view piece) {
          if (!shared->matched() && shared->feed(piece))
            caf::anon_send(me, ready_atom::value, id);
        };
      }
      job.owner = caf::actor_cast<caf::actor>(self);
      live_monitor m;
      m.id = row.id;
      m.mark = job.run.mark;
      m.helper = st.setup.spawner(self->system(), std::move(job));
      st.by_helper.emplace(m.helper.address(), row.id);
      auto promise = self->make_response_promise<monitor_info>();
      m.starts.push_back(promise);
      st.live.emplace(row.id, std::move(m));
      return promise;
    },
    // -- monitor.status ---------------------------------------------------
    [self](status_atom, std::string& id) -> caf::result<monitor_info> {
      try {
        self->state.reconcile();
        return self->state.info(id);
      } catch (const control::control_error& e) {
        return refusal(e);
      } catch (const std::exception& e) {
        return io_failure(e);
      }
    },
    [self](status_atom) -> caf::result<std::vector<monitor_info>> {
      try {
        auto& st = self->state;
        st.reconcile();
        std::vector<monitor_info> all;
        for (auto& row : st.store->list())
          all.push_back(st.info_of(row));
        return all;
      } catch (const std::exception& e) {
        return io_failure(e);
      }
    },
    // -- monitor.read -----------------------------------------------------
    [self](read_atom, std::string& id, int64_t offset,
           int64_t max) -> caf::result<monitor_output> {
      auto& st = self->state;
      try {
        auto m = st.info(id);
        auto cap = static_cast<int64_t>(st.setup.max_output_bytes);
        auto piece = control::read_log(m.log_file, offset,
                                       max <= 0 || max > cap ? cap : max,
                                       m.state != "running");
        return monitor_output{
          id,         piece.offset,          piece.next_offset,
          piece.size, std::move(piece.data), piece.eof};
      } catch (const control::control_error& e) {
        return refusal(e);
      } catch (const std::exception& e) {
        return io_failure(e);
      }
    },
    // -- monitor.wait -----------------------------------------------------
    [self](wait_atom, std::string& id,
           int64_t timeout_ms) -> caf::result<monitor_wait_result> {
      auto& st = self->state;
      try {
        st.reconcile();
        auto m = st.info(id);
        auto i = st.live.find(id);
        if (i == st.live.end()) {
          if (m.state == "unavailable")
            return monitor_wait_result{"unavailable", m};
          if (m.state != "running")
            return monitor_wait_result{"exit", m};
          if (m.ready)
            return monitor_wait_result{"ready", m};
          return caf::make_error(control_errc::unavailable,
                                 "monitor " + id
                                   + " is run by another process; wait for "
                                     "it with `taskforce monitor wait "
                                   + id + "`");
        }
        if (i->second.ready || m.ready)
          return monitor_wait_result{"ready", m};
        if (timeout_ms <= 0)
          return monitor_wait_result{"timeout", m};
        auto promise = self->make_response_promise<monitor_wait_result>();
        auto gen = ++st.generation;
        i->second.waits.push_back(pending_wait{gen, promise});
        self->delayed_send(self, std::chrono::milliseconds(timeout_ms),
                           wait_atom::value, id, gen);
        return promise;
      } catch (const control::control_error& e) {
        return refusal(e);
      } catch (const std::exception& e) {
        return io_failure(e);
      }
    },
    [self](wait_atom, const std::string& id, uint64_t gen) {
      auto& st = self->state;
      auto i = st.live.find(id);
      if (i == st.live.end())
        return; // it ended: every wait was answered then
      auto& waits = i->second.waits;
      auto w = std::find_if(waits.begin(), waits.end(), [&](auto& x) {
        return x.generation == gen;
      });
      if (w == waits.end())
        return;
      try {
        w->promise.deliver(monitor_wait_result{"timeout", st.info(id)});
      } catch (const std::exception& e) {
        w->promise.deliver(io_failure(e));
      }
      waits.erase(w);
    },
    // -- monitor.kill -----------------------------------------------------
    [self](kill_atom, std::string& id) -> caf::result<monitor_info> {
      auto& st = self->state;
      try {
        st.reconcile();
        auto m = st.info(id);
        auto i = st.live.find(id);
        if (i != st.live.end()) {
          auto& lm = i->second;
          lm.kill_requested = true;
          st.setup.killer(lm.mark);
          auto promise = self->make_response_promise<monitor_info>();
          lm.kills.push_back(promise);
          return promise;
        }
        if (m.state == "unavailable")
          return caf::make_error(
            control_errc::unavailable,
            "monitor " + id
              + " cannot be killed: it was running when its owner went "
                "away, and its process is not controllable from here ("
              + m.reason + ")");
        if (m.state != "running")
          return m; // it ended already
        return caf::make_error(control_errc::unavailable,
                               "monitor " + id
                                 + " is run by another process; kill it "
                                   "with `taskforce monitor kill "
                                 + id + "`");
      } catch (const control::control_error& e) {
        return refusal(e);
      } catch (const std::exception& e) {
        return io_failure(e);
      }
    },
    // -- events -----------------------------------------------------------
    [self](subscribe_atom, caf::actor& who) {
      self->monitor(who);
      self->state.subscribers.push_back(std::move(who));
    },
    // -- process helpers --------------------------------------------------
    [self](proc_started& x) {
      auto& st = self->state;
      auto h = st.by_helper.find(
        caf::actor_cast<caf::actor_addr>(self->current_sender()));
      if (h == st.by_helper.end())
        return;
      auto& m = st.live.at(h->second);
      m.started = true;
      if (m.kill_requested)
        st.setup.killer(m.mark); // asked before the group was registered
      try {
        auto row = st.store->set_pid(m.id, x.pid, st.setup.now_ms());
        auto now = st.info_of(row);
        for (auto& p : m.starts)
          p.deliver(now);
        m.starts.clear();
        st.publish("changed", now);
      } catch (const std::exception& e) {
        // Nobody could find this process again: it must not run on.
        spdlog::warn("monitor {}: cannot record its start, killing it: {}",
                     m.id, e.what());
        m.kill_requested = true;
        st.setup.killer(m.mark);
        auto err = caf::make_error(control_errc::io,
                                   "monitor " + m.id
                                     + " was stopped: its start could not "
                                       "be recorded: "
                                     + e.what());
        for (auto& p : m.starts)
          p.deliver(err);
        m.starts.clear();
      }
    },
    [](proc_output&) {
      // Not asked for: the wake pattern is searched on the helper's thread.
    },
    [self](ready_atom, const std::string& id) {
      auto& st = self->state;
      auto i = st.live.find(id);
      if (i == st.live.end() || i->second.ready)
        return;
      i->second.ready = true;
      try {
        st.store->mark_ready(id, st.setup.now_ms());
        st.answer_waits(i->second, "ready");
        st.publish("ready", st.info(id));
      } catch (const std::exception& e) {
        spdlog::warn("monitor {}: cannot record its wake-up: {}", id, e.what());
      }
    },
    [self](proc_exited& x) {
      auto& st = self->state;
      auto h = st.by_helper.find(
        caf::actor_cast<caf::actor_addr>(self->current_sender()));
      if (h == st.by_helper.end())
        return;
      auto id = h->second;
      st.by_helper.erase(h);
      auto node = st.live.extract(id);
      auto& m = node.mapped();
      auto end = end_of(x, m.kill_requested);
      try {
        st.store->finish(id, end.state, end.exit_code, st.setup.now_ms(),
                         end.reason);
        auto now = st.info(id);
        for (auto& p : m.starts)
          p.deliver(now);
        for (auto& w : m.waits)
          w.promise.deliver(monitor_wait_result{"exit", now});
        for (auto& p : m.kills)
          p.deliver(now);
        st.publish("changed", now);
      } catch (const std::exception& e) {
        auto err = io_failure(e);
        for (auto& p : m.starts)
          p.deliver(err);
        for (auto& w : m.waits)
          w.promise.deliver(err);
        for (auto& p : m.kills)
          p.deliver(err);
      }
    },
  };
}

} // namespace

monitors_actor spawn_monitors(caf::actor_system& sys, monitors_setup setup,
                              bool detached) {
  if (!setup.spawner)
    setup.spawner = spawn_process;
  if (!setup.killer)
    setup.killer = [](const std::string& mark) {
      proc::kill_running(mark);
    };
  if (!setup.now_ms)
    setup.now_ms = store::wall_clock_ms;
  // Opened (and locked) here, so a failure is the caller's exception; moved
  // through shared_ptrs: spawn arguments must be copyable.
  auto db = std::make_shared<store::ledger>(store::ledger::open(setup.ledger));
  auto lock = std::make_shared<control::owner_lock>(setup.repository,
                                                    setup.owner, ::getpid());
  if (!detached)
    return sys.spawn(monitors, std::move(setup), db, lock);
  return sys.spawn<caf::detached>(monitors, std::move(setup), db, lock);
}

} // namespace taskforce
