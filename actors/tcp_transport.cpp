#include "actors/tcp_transport.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <sys/socket.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/log_handlers.hpp"
#include "messages/interfaces.hpp"
#include "src/net/hello_gate.hpp"
#include "src/net/listen_address.hpp"

namespace taskforce {

namespace {

/// The most one read hands to the bridge.
constexpr size_t read_chunk = 64 * 1024;

/// How long a connection the server closes (its bridge finished, e.g. at
/// shutdown) may take to read its last answers before the socket is shut
/// down under them; a client that never reads would otherwise keep the
/// server from exiting.
constexpr auto close_linger = std::chrono::seconds(2);

/// How long a new connection may take to present its token; one that says
/// nothing (or too little) is closed after this.
constexpr auto hello_deadline = std::chrono::seconds(10);

// One connection: the socket is read one chunk at a time, and read again
// only once the bridge answered `ok` for the last one (it withholds that
// while the connection does not read its answers). Every write is
// acknowledged by CAF (ack_writes), and the bridge learns how many bytes
// left the buffer.
//
// Until its first line proved the token, a connection has no bridge: the
// bytes wait here (at most net::max_hello_bytes); a good hello spawns the
// bridge and hands it everything read so far (the hello first, which it
// answers as any hello); anything else gets `unauthorized` and the
// connection is closed once that line is out.
caf::behavior tcp_connection(caf::io::broker* self,
                             caf::io::connection_handle hdl,
                             bridge_factory make_bridge, tcp_gate gate,
                             caf::actor acceptor) {
  log_instead_of_printing(self);
  self->configure_read(hdl, caf::io::receive_policy::at_most(read_chunk));
  self->ack_writes(hdl, true);
  self->trigger(hdl, 1);
  auto peer
    = self->remote_addr(hdl) + ":" + std::to_string(self->remote_port(hdl));
  spdlog::info("connection from {}", peer);
  // The bridge, once the connection presented the token.
  auto bridge = std::make_shared<caf::actor>();
  // Input read before the token was checked.
  auto early = std::make_shared<std::string>();
  // Output handed to CAF and not yet written to the socket.
  auto unsent = std::make_shared<uint64_t>(0);
  auto closing = std::make_shared<bool>(false);
  // Closes once the output is out, or after close_linger by shutting the
  // socket down (CAF's own close waits for the output forever).
  auto close = [=] {
    if (*unsent == 0) {
      self->quit();
    } else if (!*closing) {
      *closing = true;
      self->delayed_send(self, close_linger, caf::timeout_atom::value);
    }
  };
  auto write = [=](const std::string& chunk) {
    *unsent += chunk.size();
    self->write(hdl, chunk.size(), chunk.data());
    self->flush(hdl);
  };
  // CAF 0.17 loses a trigger given in the event-loop round that paused the
  // socket (the pause is applied at the round's end): resume in a later
  // round.
  auto read_more = [=] {
    self->backend().post([me = caf::actor{self}] {
      caf::anon_send(me, read_atom_v);
    });
  };
  auto to_bridge = [=](std::string chunk) {
    self->request(*bridge, caf::infinite, std::move(chunk))
      .then(
        [=](caf::ok_atom) {
          read_more();
        },
        [](caf::error&) {});
  };
  // The first line decides: a bridge, or `unauthorized` and the end.
  auto judge = [=] {
    auto nl = early->find('\n');
    if (nl == std::string::npos && early->size() <= net::max_hello_bytes) {
      read_more();
      return;
    }
    auto verdict = nl == std::string::npos
                     ? net::hello_verdict{false, net::hello_too_long(gate.hint)}
                     : net::check_hello(std::string_view{*early}.substr(0, nl),
                                        gate.token, gate.hint);
    if (!verdict.admitted) {
      spdlog::warn("connection from {}: refused (no hello with the token)",
                   peer);
      early->clear();
      write(verdict.refusal);
      close();
      return;
    }
    *bridge = make_bridge(caf::actor{self});
    self->monitor(*bridge);
    to_bridge(std::move(*early));
    early->clear();
  };
  self->delayed_send(self, hello_deadline, hello_atom_v);
  // A bridge that is gone (server shutdown) closes the socket; so does the
  // server's stop for a connection that has no bridge yet.
  self->monitor(acceptor);
  self->set_down_handler([=](caf::down_msg& msg) {
    if (msg.source != acceptor.address())
      close();
    else if (!*bridge)
      self->quit();
  });
  return {
    [=](const caf::io::new_data_msg& msg) {
      if (*closing)
        return;
      if (*bridge) {
        to_bridge(std::string(msg.buf.begin(), msg.buf.end()));
        return;
      }
      early->append(msg.buf.begin(), msg.buf.end());
      judge();
    },
    [=](read_atom) {
      self->trigger(hdl, 1);
    },
    [=](hello_atom) {
      if (*bridge || *closing)
        return;
      spdlog::warn("connection from {}: no hello with the token within {} s; "
                   "closing it",
                   peer, hello_deadline.count());
      early->clear();
      write(net::hello_too_slow(gate.hint));
      close();
    },
    [](const caf::io::connection_passivated_msg&) {
      // Reading paused until the bridge takes more.
    },
    [=](const caf::io::data_transferred_msg& msg) {
      *unsent -= std::min<uint64_t>(msg.written, *unsent);
      if (*closing && *unsent == 0)
        self->quit();
      else if (*bridge)
        self->send(*bridge, written_atom_v, msg.written);
    },
    [=](const caf::io::connection_closed_msg&) {
      spdlog::info("connection from {} closed", peer);
      // The bridge releases what the connection holds, then finishes.
      if (*bridge)
        self->send(*bridge, caf::close_atom::value);
      self->quit();
    },
    [=](const std::string& chunk) {
      write(chunk);
    },
    [=](caf::close_atom) {
      close();
    },
    [=](caf::timeout_atom) {
      spdlog::info("connection from {}: {} bytes of output unread after {} "
                   "s; closing it",
                   peer, *unsent, close_linger.count());
      ::shutdown(static_cast<int>(hdl.id()), SHUT_RDWR);
      self->quit();
    },
  };
}

caf::behavior tcp_acceptor(caf::io::broker* self, bridge_factory make_bridge,
                           tcp_gate gate) {
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
      self->fork(tcp_connection, msg.handle, make_bridge, gate,
                 caf::actor_cast<caf::actor>(self));
    },
    [=](const caf::io::acceptor_closed_msg&) {
      self->quit();
    },
  };
}

} // namespace

tcp_server start_tcp_server(caf::actor_system& sys, const std::string& host,
                            uint16_t port, bridge_factory make_bridge,
                            tcp_gate gate) {
  auto acceptor = sys.middleman().spawn_broker(
    tcp_acceptor, std::move(make_bridge), std::move(gate));
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
    listen_address where{host, port};
    // CAF's text is long and technical; the system's reason is one line.
    if (auto why = bind_problem(where); !why.empty())
      problem = why;
    throw std::runtime_error("cannot listen on " + to_string(where) + ": "
                             + problem);
  }
  result.acceptor = acceptor;
  return result;
}

} // namespace taskforce
