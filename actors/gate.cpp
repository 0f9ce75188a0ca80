#include "actors/gate.hpp"

#include <chrono>
#include <stdexcept>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/log_handlers.hpp"
#include "src/net/secret.hpp"

namespace taskforce {

namespace {

/// How long a join waits for the gate's answer.
constexpr auto join_timeout = std::chrono::seconds(10);

gate_actor::behavior_type gate(gate_actor::pointer self, pool_actor pool,
                               std::string token) {
  log_instead_of_printing(self);
  return {
    [=](join_atom, const std::string& given) -> caf::result<caf::actor> {
      if (!net::same_token(given, token)) {
        spdlog::warn("a process asked for the published pool with a wrong "
                     "token");
        return caf::make_error(errc::unauthorized,
                               std::string{"wrong token for the published "
                                           "pool"});
      }
      spdlog::info("a process joined the published pool");
      return caf::actor_cast<caf::actor>(pool);
    },
  };
}

} // namespace

gate_actor spawn_gate(caf::actor_system& sys, pool_actor pool,
                      std::string token) {
  return sys.spawn(gate, std::move(pool), std::move(token));
}

pool_actor join_pool(caf::actor_system& sys, const std::string& host,
                     uint16_t port, const std::string& token) {
  auto where = host + ":" + std::to_string(port);
  auto remote = sys.middleman().remote_actor<gate_actor>(host, port);
  if (!remote)
    throw std::runtime_error("cannot join the pool at " + where + ": "
                             + sys.render(remote.error()));
  caf::scoped_actor self{sys};
  pool_actor pool;
  std::string problem;
  self->request(*remote, join_timeout, join_atom_v, token)
    .receive(
      [&](caf::actor& handle) {
        pool = caf::actor_cast<pool_actor>(handle);
      },
      [&](caf::error& err) {
        problem = err == errc::unauthorized
                    ? "unauthorized: the token is not the publishing "
                      "server's"
                    : sys.render(err);
      });
  if (!pool)
    throw std::runtime_error("cannot join the pool at " + where + ": "
                             + (problem.empty() ? "no pool" : problem));
  return pool;
}

} // namespace taskforce
