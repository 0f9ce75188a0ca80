#include "actors/control_plane.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/log_handlers.hpp"
#include "src/control/service.hpp"
#include "src/store/ledger.hpp"

namespace taskforce {

namespace {

using json = nlohmann::ordered_json;

/// How often expired dispatch tokens are looked for (they are also expired
/// by every claim, so this only makes the queue move without one).
constexpr auto expiry_sweep = std::chrono::seconds(30);

json monitor_json(const monitor_info& m) {
  return json{
    {"id", m.id},
    {"command", m.command},
    {"cwd", m.cwd},
    {"wake_pattern",
     m.wake_pattern.empty() ? json(nullptr) : json(m.wake_pattern)},
    {"timeout_ms", m.timeout_ms},
    {"session", m.session.empty() ? json(nullptr) : json(m.session)},
    {"state", m.state},
    {"exit_code",
     m.exit_code < 0 && m.state != "done" ? json(nullptr) : json(m.exit_code)},
    {"pid", m.pid < 0 ? json(nullptr) : json(m.pid)},
    {"live", m.live},
    {"ready", m.ready},
    {"log_file", m.log_file},
    {"reason", m.reason.empty() ? json(nullptr) : json(m.reason)},
    {"created_ms", m.created_ms},
    {"updated_ms", m.updated_ms},
  };
}

std::string dump(const json& x) {
  return x.dump(-1, ' ', false, json::error_handler_t::replace);
}

control_answer fields_answer(const json& fields) {
  control_answer a;
  a.fields = dump(fields);
  return a;
}

control_answer refusal(std::string code, std::string message) {
  control_answer a;
  a.ok = false;
  a.code = std::move(code);
  a.message = std::move(message);
  return a;
}

/// A monitors actor's refusal as the protocol answers it.
control_answer refusal(caf::actor_system& sys, const caf::error& err) {
  if (err.category() == caf::atom(control_errc_category)) {
    std::string message = to_string(static_cast<control_errc>(err.code()));
    if (err.context().match_elements<std::string>())
      message = err.context().get_as<std::string>(0);
    return refusal(to_string(static_cast<control_errc>(err.code())), message);
  }
  return refusal("unavailable",
                 "the monitors are not available (" + sys.render(err) + ")");
}

struct control_plane_state {
  static inline const char* name = "taskforce.control_plane";

  /// Opened by spawn_control_plane (so that a failure reaches its caller);
  /// only this actor uses it.
  std::shared_ptr<control::bg_service> service;
  control_plane_setup setup;
  std::vector<caf::actor> subscribers;
  /// Completions whose validations run, by ticket.
  struct checking {
    control::pending_validation pending;
    caf::response_promise promise;
    proc::cancel_handle cancel;
  };
  std::map<uint64_t, checking> checks;
  uint64_t next_ticket = 1;
};

using plane_ptr = control_plane_actor::stateful_pointer<control_plane_state>;

void publish(plane_ptr self, const std::string& kind, std::string fields) {
  control_event ev{kind, std::move(fields)};
  for (auto& s : self->state.subscribers)
    caf::anon_send(s, event_atom_v, ev);
}

void publish(plane_ptr self, const std::vector<control::bg_change>& changes) {
  for (const auto& change : changes)
    publish(self, "bg.changed", control::bg_service::event_fields(change));
}

control_answer to_answer(plane_ptr self, control::service_reply reply) {
  publish(self, reply.changes);
  if (!reply.ok)
    return refusal(std::move(reply.code), std::move(reply.message));
  control_answer a;
  a.fields = std::move(reply.fields);
  return a;
}

/// Runs a completion's validations on a helper of their own; the verdict
/// comes back as validation_done.
void start_validations(plane_ptr self, control::pending_validation pending,
                       caf::response_promise promise) {
  auto ticket = self->state.next_ticket++;
  auto opts = pending.options;
  auto commands = pending.commands;
  opts.cancel = proc::cancel_handle{};
  self->state.checks.emplace(
    ticket, control_plane_state::checking{std::move(pending),
                                          std::move(promise), opts.cancel});
  self->system().spawn<caf::detached>(
    [plane = caf::actor_cast<caf::actor>(self), ticket, commands,
     opts](caf::event_based_actor* helper) {
      validation_done done;
      done.ticket = ticket;
      try {
        auto report = control::run_validations(commands, opts);
        auto outcome = control::outcome_of(report);
        done.passed = outcome.passed;
        done.reason = outcome.reason;
        done.tail = outcome.tail;
        done.results = control::validation_results_json(report);
      } catch (const std::exception& e) {
        done.passed = false;
        done.reason = std::string{"the validations could not run: "} + e.what();
        done.results = "[]";
      }
      helper->send(plane, std::move(done));
    });
}

/// Hands a monitor.* request to the monitors actor.
caf::result<control_answer> to_monitors(plane_ptr self,
                                        const control::control_request& req) {
  auto& monitors = self->state.setup.monitors;
  if (!monitors)
    return refusal("unavailable", "this server runs no monitors");
  auto promise = self->make_response_promise<control_answer>();
  auto fail = [self, promise](caf::error& err) mutable {
    promise.deliver(refusal(self->system(), err));
  };
  using control::control_op;
  switch (req.op) {
    case control_op::monitor_run: {
      monitor_spec spec{req.command, req.cwd, req.wake_pattern,
                        static_cast<int64_t>(req.timeout_ms), req.session};
      self->request(monitors, caf::infinite, start_atom_v, std::move(spec))
        .then(
          [promise](monitor_info& m) mutable {
            promise.deliver(fields_answer({{"monitor", monitor_json(m)}}));
          },
          fail);
      break;
    }
    case control_op::monitor_status:
      if (req.monitor.empty())
        self->request(monitors, caf::infinite, status_atom_v)
          .then(
            [promise](std::vector<monitor_info>& all) mutable {
              json list = json::array();
              for (const auto& m : all)
                list.push_back(monitor_json(m));
              promise.deliver(fields_answer({{"monitors", list}}));
            },
            fail);
      else
        self->request(monitors, caf::infinite, status_atom_v, req.monitor)
          .then(
            [promise](monitor_info& m) mutable {
              promise.deliver(fields_answer({{"monitor", monitor_json(m)}}));
            },
            fail);
      break;
    case control_op::monitor_read:
      self
        ->request(monitors, caf::infinite, read_atom_v, req.monitor,
                  static_cast<int64_t>(req.offset),
                  static_cast<int64_t>(req.max_bytes))
        .then(
          [promise](monitor_output& out) mutable {
            promise.deliver(fields_answer({{"monitor", out.id},
                                           {"offset", out.offset},
                                           {"next_offset", out.next_offset},
                                           {"size", out.size},
                                           {"output", out.data},
                                           {"eof", out.eof}}));
          },
          fail);
      break;
    case control_op::monitor_wait:
      self
        ->request(monitors, caf::infinite, wait_atom_v, req.monitor,
                  static_cast<int64_t>(req.timeout_ms))
        .then(
          [promise](monitor_wait_result& r) mutable {
            promise.deliver(fields_answer(
              {{"reason", r.reason}, {"monitor", monitor_json(r.monitor)}}));
          },
          fail);
      break;
    case control_op::monitor_kill:
      self->request(monitors, caf::infinite, kill_atom_v, req.monitor)
        .then(
          [promise](monitor_info& m) mutable {
            promise.deliver(fields_answer({{"monitor", monitor_json(m)}}));
          },
          fail);
      break;
    default: break;
  }
  return promise;
}

control_plane_actor::behavior_type
control_plane(plane_ptr self, std::shared_ptr<control::bg_service> service,
              control_plane_setup setup) {
  log_instead_of_printing(self);
  auto& st = self->state;
  st.service = std::move(service);
  st.setup = std::move(setup);
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& subs = self->state.subscribers;
    subs.erase(std::remove_if(subs.begin(), subs.end(),
                              [&](const caf::actor& a) {
                                return a.address() == msg.source;
                              }),
               subs.end());
  });
  publish(self, st.service->recover(store::wall_clock_ms()));
  if (st.setup.monitors)
    self->send(st.setup.monitors, subscribe_atom_v,
               caf::actor_cast<caf::actor>(self));
  self->delayed_send(self, expiry_sweep, caf::tick_atom_v);
  return {
    [self](control_atom,
           const control::control_request& req) -> caf::result<control_answer> {
      if (control::is_monitor_op(req.op))
        return to_monitors(self, req);
      auto& st = self->state;
      auto reply = st.service->handle(req, store::wall_clock_ms());
      if (reply.ok && reply.validate) {
        publish(self, reply.changes);
        auto promise = self->make_response_promise<control_answer>();
        start_validations(self, std::move(*reply.validate), promise);
        return promise;
      }
      if (reply.ok && req.op == control::control_op::bg_cancel)
        for (auto& [ticket, check] : st.checks)
          if (check.pending.task_id == req.task)
            check.cancel.cancel();
      return to_answer(self, std::move(reply));
    },
    [self](subscribe_atom, caf::actor& subscriber) {
      self->monitor(subscriber);
      self->state.subscribers.push_back(std::move(subscriber));
      return true;
    },
    [self](end_atom, const std::string& session) {
      publish(self, self->state.service->end_session(session,
                                                     store::wall_clock_ms()));
    },
    [self](caf::tick_atom) {
      publish(self, self->state.service->expire(store::wall_clock_ms()));
      self->delayed_send(self, expiry_sweep, caf::tick_atom_v);
    },
    [self](validation_done& done) {
      auto& st = self->state;
      auto i = st.checks.find(done.ticket);
      if (i == st.checks.end())
        return;
      auto check = std::move(i->second);
      st.checks.erase(i);
      control::validation_outcome outcome;
      outcome.passed = done.passed;
      outcome.reason = done.reason;
      outcome.tail = done.tail;
      auto reply = st.service->finish(check.pending, outcome, done.results,
                                      store::wall_clock_ms());
      check.promise.deliver(to_answer(self, std::move(reply)));
    },
    [self](monitor_event& ev) {
      json fields{{"kind", ev.kind}, {"monitor", monitor_json(ev.monitor)}};
      publish(self, "monitor.changed", dump(fields));
    },
  };
}

} // namespace

control_plane_actor spawn_control_plane(caf::actor_system& sys,
                                        control_plane_setup setup) {
  // Opened here, so a ledger that cannot be opened fails the caller.
  auto service
    = std::make_shared<control::bg_service>(setup.repository, setup.config);
  return sys.spawn<caf::detached>(control_plane, std::move(service),
                                  std::move(setup));
}

} // namespace taskforce
