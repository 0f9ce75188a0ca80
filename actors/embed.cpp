// The embedding API (include/taskforce/runtime.hpp) over the actors.
//
// Every call from a harness thread goes to one relay actor per runtime as an
// ordinary message carrying a callback box, so calls from one thread reach
// the pool in order. The relay is a connection of the pool like a bridge: it
// attaches (its connection id marks every holder it creates, so its events
// come back to it and destroying the runtime releases them all) and forwards
// each request, running the callback with the answer.
#include "taskforce/runtime.hpp"

#include <chrono>
#include <functional>
#include <mutex>

#include <caf/all.hpp>

#include "actors/log_handlers.hpp"
#include "actors/pool.hpp"
#include "actors/runtime_config.hpp"
#include "src/config/config.hpp"

namespace taskforce {

namespace {

/// A harness callback travelling inside a local message.
template<class T>
struct call_box {
  std::function<void(caf::expected<T>)> fn;
};

/// An event listener travelling inside a local message.
struct listener_box {
  std::function<void(const holder_event&)> fn;
};

} // namespace

} // namespace taskforce

// Local only: these carry functions and never cross the network.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(taskforce::call_box<taskforce::grant>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(taskforce::call_box<bool>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(taskforce::call_box<std::vector<std::string>>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(taskforce::listener_box)

namespace taskforce {

namespace {

using string_list = std::vector<std::string>;

struct relay_state {
  static inline const char* name = "taskforce.embed";
  pool_actor pool;
  uint64_t connection = 0;
  std::vector<listener_box> listeners;
  bool subscribed = false;
};

using relay_ptr = caf::stateful_actor<relay_state>*;

/// Sends `xs...` to `dest` and hands the answer to `box`.
template<class T, class Handle, class... Ts>
void forward(relay_ptr self, const Handle& dest, call_box<T> box, Ts&&... xs) {
  self->request(dest, caf::infinite, std::forward<Ts>(xs)...)
    .then(
      [box](T& value) {
        box.fn(std::move(value));
      },
      [box](caf::error& err) {
        box.fn(std::move(err));
      });
}

holder_event to_holder_event(const pool_event& ev) {
  holder_event x;
  x.event = to_string(ev.kind);
  x.holder = ev.holder;
  x.session = ev.session;
  x.position = ev.position;
  x.of = ev.of;
  x.running = ev.running;
  x.background = ev.background;
  x.queued_ms = ev.queued_ms;
  x.lent = ev.lent;
  if (ev.kind == pool_event_kind::released)
    x.reason = to_string(ev.reason);
  x.held_ms = ev.held_ms;
  x.waited_ms = ev.waited_ms;
  return x;
}

caf::behavior relay(relay_ptr self, pool_actor pool) {
  self->state.pool = pool;
  log_instead_of_printing(self);
  // Until the pool names this connection, calls wait in the mailbox.
  self->request(pool, caf::infinite, attach_atom::value, caf::actor{self})
    .await(
      [self](uint64_t id) {
        self->state.connection = id;
      },
      [self](caf::error&) {
        self->quit();
      });
  return {
    // -- pool operations
    // -------------------------------------------------------
    [=](acquire_atom, acquire_request& req, call_box<grant>& box) {
      req.connection = self->state.connection;
      forward(self, self->state.pool, box, acquire_atom::value, req);
    },
    [=](adopt_atom, adopt_request& req, call_box<grant>& box) {
      req.connection = self->state.connection;
      forward(self, self->state.pool, box, adopt_atom::value, req);
    },
    [=](release_atom, std::string& holder, release_reason why,
        call_box<bool>& box) {
      forward(self, self->state.pool, box, release_atom::value, holder, why);
    },
    [=](bind_atom, std::string& holder, std::string& child,
        call_box<bool>& box) {
      forward(self, self->state.pool, box, bind_atom::value, holder, child);
    },
    [=](caf::idle_atom, std::string& session, call_box<string_list>& box) {
      forward(self, self->state.pool, box, caf::idle_atom::value, session);
    },
    [=](end_atom, std::string& session, call_box<string_list>& box) {
      forward(self, self->state.pool, box, end_atom::value, session);
    },
    // -- events
    // -------------------------------------------------------------------
    [=](listener_box& box, bool all) {
      self->state.listeners.push_back(std::move(box));
      if (all && !self->state.subscribed) {
        self->state.subscribed = true;
        self
          ->request(self->state.pool, caf::infinite, subscribe_atom::value,
                    self->state.connection)
          .then([](bool) {}, [](caf::error&) {});
      }
    },
    [=](event_atom, const pool_event& ev) {
      auto x = to_holder_event(ev);
      for (auto& l : self->state.listeners)
        l.fn(x);
    },
    // -- shutdown
    // ------------------------------------------------------------------
    [=](caf::close_atom) -> caf::result<bool> {
      // The runtime is being destroyed: listeners may capture objects the
      // harness destroyed before it, so the releases below reach none.
      self->state.listeners.clear();
      auto rp = self->make_response_promise<bool>();
      self
        ->request(self->state.pool, std::chrono::seconds(5), detach_atom::value,
                  self->state.connection)
        .then(
          [=](string_list&) mutable {
            rp.deliver(true);
            self->quit();
          },
          [=](caf::error&) mutable {
            rp.deliver(false);
            self->quit();
          });
      return rp;
    },
  };
}

/// The protocol's code and message of an error from the pool.
std::pair<std::string, std::string> describe(caf::actor_system& sys,
                                             const caf::error& err) {
  if (err.category() == caf::atom("taskforce")) {
    auto code = static_cast<errc>(err.code());
    std::string message = to_string(code);
    if (err.context().match_elements<std::string>())
      message = err.context().get_as<std::string>(0);
    return {to_string(code), message};
  }
  return {"shutting_down",
          "the pool is not available (" + sys.render(err) + ")"};
}

permit_info to_permit(const grant& g) {
  return permit_info{g.counted, g.permit, g.queued_ms, g.lent};
}

release_reason to_reason(call_end how) {
  switch (how) {
    case call_end::completed: return release_reason::completed;
    case call_end::error: return release_reason::error;
    case call_end::aborted: return release_reason::aborted;
  }
  return release_reason::completed;
}

holder_kind to_kind(call_kind k) {
  return k == call_kind::foreground ? holder_kind::foreground
                                    : holder_kind::background;
}

} // namespace

// -- runtime ------------------------------------------------------------------

struct runtime::impl {
  runtime_config cfg;
  caf::actor_system sys;
  pool_actor pool;
  caf::actor relay_actor;

  impl(const runtime_options& opts, const pool_config& pcfg)
    : cfg(opts.threads, false), sys(cfg) {
    pool = spawn_pool(sys, pcfg);
    relay_actor = sys.spawn(relay, pool);
  }

  /// A future and the box that fulfils it; `convert` maps the answer.
  template<class Out, class In, class F>
  std::pair<std::future<Out>, call_box<In>> make_future(F convert) {
    auto promise = std::make_shared<std::promise<Out>>();
    auto future = promise->get_future();
    auto* system = &sys;
    call_box<In> box{[promise, convert, system](caf::expected<In> x) {
      if (x) {
        promise->set_value(convert(*x));
      } else {
        auto [code, message] = describe(*system, x.error());
        promise->set_exception(
          std::make_exception_ptr(pool_error(code, message)));
      }
    }};
    return {std::move(future), std::move(box)};
  }

  ~impl() {
    caf::scoped_actor self{sys};
    // Release what the runtime holds, then stop the pool: pending waits
    // fail with shutting_down and nothing keeps the system alive.
    self->request(relay_actor, std::chrono::seconds(5), caf::close_atom::value)
      .receive([](bool) {}, [](caf::error&) {});
    self->send_exit(relay_actor, caf::exit_reason::user_shutdown);
    self->send_exit(pool, caf::exit_reason::user_shutdown);
  }
};

namespace {

pool_config load_pool_config(const runtime_options& opts) {
  if (opts.config_file.empty())
    return pool_config{};
  try {
    return load_config(opts.config_file).pool;
  } catch (const config_error& e) {
    throw std::invalid_argument(e.what());
  }
}

} // namespace

runtime::runtime(const runtime_options& opts)
  : impl_(std::make_shared<impl>(opts, load_pool_config(opts))) {
  // nop
}

runtime::~runtime() {
  // nop: impl's destructor shuts down
}

// -- pool_handle
// ----------------------------------------------------------------

struct pool_handle::impl {
  runtime::impl* rt = nullptr;
};

pool_handle runtime::pool() {
  auto ptr = std::make_shared<pool_handle::impl>();
  ptr->rt = impl_.get();
  return pool_handle{ptr};
}

std::future<permit_info> pool_handle::acquire(const call_request& req) {
  auto [future, box] = impl_->rt->make_future<permit_info, grant>(to_permit);
  acquire_request x{
    req.session, req.holder, to_kind(req.kind), req.child_session, req.parent,
    req.tool,    0};
  caf::anon_send(impl_->rt->relay_actor, acquire_atom::value, std::move(x),
                 std::move(box));
  return std::move(future);
}

void pool_handle::acquire(const call_request& req,
                          std::function<void(outcome<permit_info>)> done) {
  auto* system = &impl_->rt->sys;
  call_box<grant> box{[done, system](caf::expected<grant> x) {
    outcome<permit_info> out;
    if (x) {
      out.ok = true;
      out.value = to_permit(*x);
    } else {
      std::tie(out.code, out.message) = describe(*system, x.error());
    }
    done(std::move(out));
  }};
  acquire_request x{
    req.session, req.holder, to_kind(req.kind), req.child_session, req.parent,
    req.tool,    0};
  caf::anon_send(impl_->rt->relay_actor, acquire_atom::value, std::move(x),
                 std::move(box));
}

std::future<permit_info> pool_handle::adopt(const std::string& session,
                                            const std::string& holder,
                                            const std::string& child_session) {
  auto [future, box] = impl_->rt->make_future<permit_info, grant>(to_permit);
  adopt_request x{session, holder, child_session, 0};
  caf::anon_send(impl_->rt->relay_actor, adopt_atom::value, std::move(x),
                 std::move(box));
  return std::move(future);
}

std::future<bool> pool_handle::release(const std::string& holder,
                                       call_end how) {
  auto [future, box] = impl_->rt->make_future<bool, bool>([](bool x) {
    return x;
  });
  caf::anon_send(impl_->rt->relay_actor, release_atom::value, holder,
                 to_reason(how), std::move(box));
  return std::move(future);
}

std::future<bool> pool_handle::bind(const std::string& holder,
                                    const std::string& child_session) {
  auto [future, box] = impl_->rt->make_future<bool, bool>([](bool x) {
    return x;
  });
  caf::anon_send(impl_->rt->relay_actor, bind_atom::value, holder,
                 child_session, std::move(box));
  return std::move(future);
}

std::future<string_list> pool_handle::idle(const std::string& session) {
  auto [future, box]
    = impl_->rt->make_future<string_list, string_list>([](string_list& x) {
        return std::move(x);
      });
  caf::anon_send(impl_->rt->relay_actor, caf::idle_atom::value, session,
                 std::move(box));
  return std::move(future);
}

std::future<string_list> pool_handle::end(const std::string& session) {
  auto [future, box]
    = impl_->rt->make_future<string_list, string_list>([](string_list& x) {
        return std::move(x);
      });
  caf::anon_send(impl_->rt->relay_actor, end_atom::value, session,
                 std::move(box));
  return std::move(future);
}

void pool_handle::on_event(std::function<void(const holder_event&)> listener,
                           bool all) {
  caf::anon_send(impl_->rt->relay_actor, listener_box{std::move(listener)},
                 all);
}

// -- session_handle
// ---------------------------------------------------------------

// A session is a name: the pool keeps what each session holds and waits
// for, so its calls go to the pool as they are, as a protocol client's do.
struct session_handle::impl {
  runtime::impl* rt = nullptr;
  std::string name;
};

session_handle runtime::session(const std::string& name) {
  auto ptr = std::make_shared<session_handle::impl>();
  ptr->rt = impl_.get();
  ptr->name = name;
  return session_handle{ptr};
}

std::future<permit_info>
session_handle::call_started(const std::string& call, call_kind kind,
                             const std::string& tool, const std::string& parent,
                             const std::string& child_session) {
  auto [future, box] = impl_->rt->make_future<permit_info, grant>(to_permit);
  acquire_request x{impl_->name, call, to_kind(kind), child_session, parent,
                    tool,        0};
  caf::anon_send(impl_->rt->relay_actor, acquire_atom::value, std::move(x),
                 std::move(box));
  return std::move(future);
}

std::future<bool> session_handle::call_ended(const std::string& call,
                                             call_end how) {
  auto [future, box] = impl_->rt->make_future<bool, bool>([](bool x) {
    return x;
  });
  caf::anon_send(impl_->rt->relay_actor, release_atom::value, call,
                 to_reason(how), std::move(box));
  return std::move(future);
}

std::future<bool>
session_handle::call_returned(const std::string& call,
                              const std::string& child_session) {
  auto [future, box] = impl_->rt->make_future<bool, bool>([](bool x) {
    return x;
  });
  caf::anon_send(impl_->rt->relay_actor, bind_atom::value, call, child_session,
                 std::move(box));
  return std::move(future);
}

std::future<string_list> session_handle::idle() {
  auto [future, box]
    = impl_->rt->make_future<string_list, string_list>([](string_list& x) {
        return std::move(x);
      });
  caf::anon_send(impl_->rt->relay_actor, caf::idle_atom::value, impl_->name,
                 std::move(box));
  return std::move(future);
}

std::future<string_list> session_handle::dispose() {
  auto [future, box]
    = impl_->rt->make_future<string_list, string_list>([](string_list& x) {
        return std::move(x);
      });
  caf::anon_send(impl_->rt->relay_actor, end_atom::value, impl_->name,
                 std::move(box));
  return std::move(future);
}

const std::string& session_handle::name() const {
  return impl_->name;
}

} // namespace taskforce
