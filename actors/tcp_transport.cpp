#include "actors/tcp_transport.hpp"

#include <chrono>
#include <stdexcept>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/bridge.hpp"

namespace taskforce {

namespace {

constexpr size_t read_chunk = 64 * 1024;

/// CAF's defaults print unexpected messages and exceptions on standard
/// output; a server logs them instead.
template<class Self>
void log_instead_of_printing(Self* self) {
  self->set_default_handler(
    [](caf::scheduled_actor* ptr,
       caf::message_view& x) -> caf::result<caf::message> {
      spdlog::warn("{}: unexpected message {}", ptr->name(),
                   x.content().stringify());
      return caf::sec::unexpected_message;
    });
  self->set_exception_handler([](std::exception_ptr& eptr) -> caf::error {
    try {
      std::rethrow_exception(eptr);
    } catch (const std::exception& e) {
      spdlog::error("TCP transport: {}", e.what());
    } catch (...) {
      spdlog::error("TCP transport: unknown exception");
    }
    return caf::exit_reason::unhandled_exception;
  });
}

caf::behavior tcp_connection(caf::io::broker* self,
                             caf::io::connection_handle hdl, pool_actor pool,
                             pool_config cfg) {
  log_instead_of_printing(self);
  self->configure_read(hdl, caf::io::receive_policy::at_most(read_chunk));
  auto peer
    = self->remote_addr(hdl) + ":" + std::to_string(self->remote_port(hdl));
  spdlog::info("connection from {}", peer);
  auto bridge = spawn_bridge(self->system(), pool, cfg, caf::actor{self});
  self->monitor(bridge);
  // A bridge that is gone (server shutdown) closes the socket.
  self->set_down_handler([self](caf::down_msg&) {
    self->quit();
  });
  return {
    [=](const caf::io::new_data_msg& msg) {
      self
        ->request(bridge, caf::infinite,
                  std::string(msg.buf.begin(), msg.buf.end()))
        .then([](caf::ok_atom) {}, [](caf::error&) {});
    },
    [=](const caf::io::connection_closed_msg&) {
      spdlog::info("connection from {} closed", peer);
      // The bridge releases what the connection holds, then finishes.
      self->send(bridge, caf::close_atom::value);
      self->quit();
    },
    [=](const std::string& chunk) {
      self->write(hdl, chunk.size(), chunk.data());
      self->flush(hdl);
    },
    [=](caf::close_atom) {
      self->quit();
    },
  };
}

caf::behavior tcp_acceptor(caf::io::broker* self, pool_actor pool,
                           pool_config cfg) {
  log_instead_of_printing(self);
  return {
    [=](caf::open_atom, const std::string& host,
        uint16_t port) -> caf::result<uint16_t> {
      auto bound = self->add_tcp_doorman(port, host.c_str(), true);
      if (!bound)
        return bound.error();
      return bound->second;
    },
    [=](const caf::io::new_connection_msg& msg) {
      self->fork(tcp_connection, msg.handle, pool, cfg);
    },
    [=](const caf::io::acceptor_closed_msg&) {
      self->quit();
    },
  };
}

} // namespace

tcp_server start_tcp_server(caf::actor_system& sys, const std::string& host,
                            uint16_t port, pool_actor pool,
                            const pool_config& cfg) {
  auto acceptor = sys.middleman().spawn_broker(tcp_acceptor, pool, cfg);
  caf::scoped_actor self{sys};
  tcp_server result;
  std::string problem;
  self
    ->request(acceptor, std::chrono::seconds(10), caf::open_atom::value, host,
              port)
    .receive(
      [&](uint16_t bound) {
        result.port = bound;
      },
      [&](caf::error& err) {
        problem = sys.render(err);
      });
  if (!problem.empty()) {
    self->send_exit(acceptor, caf::exit_reason::user_shutdown);
    throw std::runtime_error("cannot listen on " + host + ":"
                             + std::to_string(port) + ": " + problem);
  }
  result.acceptor = acceptor;
  return result;
}

} // namespace taskforce
