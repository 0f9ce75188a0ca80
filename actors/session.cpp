#include "actors/session.hpp"

#include <caf/all.hpp>

#include "actors/log_handlers.hpp"

namespace taskforce {

session_actor::behavior_type
session(session_actor::stateful_pointer<session_state> self, std::string name,
        pool_actor pool, uint64_t connection) {
  self->state.session = std::move(name);
  self->state.pool = pool;
  self->state.connection = connection;
  log_instead_of_printing(self);
  // A pool that goes away answers nothing more: every call still waiting
  // fails now, and the session ends with it.
  self->monitor(pool);
  self->set_down_handler([self](caf::down_msg& msg) {
    if (msg.source != self->state.pool.address())
      return;
    auto waiting = std::move(self->state.waiting);
    for (auto& [holder, rp] : waiting)
      rp.deliver(caf::make_error(errc::shutting_down, "the pool is gone"));
    self->quit(msg.reason);
  });
  return {
    // -- calls ---------------------------------------------------------------
    [=](acquire_atom, std::string& holder, holder_kind kind, std::string& tool,
        std::string& parent, std::string& child) -> caf::result<grant> {
      auto& st = self->state;
      acquire_request req{st.session, holder, kind,         child,
                          parent,     tool,   st.connection};
      auto rp = self->make_response_promise<grant>();
      // Remembered while it waits, so disposal cancels the wait too.
      st.holders.emplace(holder, kind);
      st.waiting[holder] = rp;
      if (!child.empty())
        st.children.insert(child);
      self->request(st.pool, caf::infinite, acquire_atom::value, req)
        .then(
          [=](grant& g) mutable {
            if (!g.counted)
              self->state.holders.erase(req.holder);
            self->state.waiting.erase(req.holder);
            rp.deliver(g);
          },
          [=](caf::error& err) mutable {
            self->state.holders.erase(req.holder);
            self->state.waiting.erase(req.holder);
            rp.deliver(err);
          });
      return rp;
    },
    [=](release_atom, std::string& holder, release_reason reason) {
      self->state.holders.erase(holder);
      return self->delegate(self->state.pool, release_atom::value, holder,
                            reason);
    },
    [=](bind_atom, std::string& holder, std::string& child) {
      self->state.children.insert(child);
      return self->delegate(self->state.pool, bind_atom::value, holder, child);
    },
    // -- session life
    // ----------------------------------------------------------
    [=](caf::idle_atom) {
      return self->delegate(self->state.pool, caf::idle_atom::value,
                            self->state.session);
    },
    [=](end_atom) -> caf::result<std::vector<std::string>> {
      auto& st = self->state;
      st.holders.clear();
      st.children.clear();
      auto rp = self->make_response_promise<std::vector<std::string>>();
      // The pool cancels this session's waits before it answers, and their
      // errors come back through this actor: it quits only afterwards.
      self->request(st.pool, caf::infinite, end_atom::value, st.session)
        .then(
          [=](std::vector<std::string>& released) mutable {
            rp.deliver(std::move(released));
            self->quit();
          },
          [=](caf::error& err) mutable {
            rp.deliver(std::move(err));
            self->quit();
          });
      return rp;
    },
  };
}

session_actor spawn_session(caf::actor_system& sys, std::string name,
                            pool_actor pool, uint64_t connection) {
  return sys.spawn(session, std::move(name), std::move(pool), connection);
}

} // namespace taskforce
