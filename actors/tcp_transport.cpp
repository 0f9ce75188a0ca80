#include "actors/tcp_transport.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <stdexcept>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/log_handlers.hpp"
#include "messages/interfaces.hpp"
#include "src/net/hello_gate.hpp"
#include "src/net/hello_limiter.hpp"
#include "src/net/listen_address.hpp"
#include "src/time/duration.hpp"

namespace taskforce {

namespace {

/// The most one read hands to the bridge.
constexpr size_t read_chunk = 64 * 1024;

/// How long a connection the server closes (its bridge finished, e.g. at
/// shutdown) may take to read its last answers before the socket is shut
/// down under them; a client that never reads would otherwise keep the
/// server from exiting.
constexpr auto close_linger = std::chrono::seconds(2);

/// How often the acceptor closes connections whose time for a hello is up
/// (net::hello_limits: 10 s, 1 s under pressure).
constexpr auto hello_sweep = std::chrono::milliseconds(250);

/// How long accepting pauses when the process is out of descriptors.
constexpr auto out_of_descriptors_pause = std::chrono::milliseconds(100);

/// How many waiting connections are closed when the process is out of
/// descriptors.
constexpr size_t out_of_descriptors_room = 16;

/// Connections accepted in one go before the accept loop looks at its wake
/// pipe again.
constexpr int accept_batch = 64;

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
                             caf::actor acceptor, uint64_t id) {
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
  // Tells the acceptor once that this connection no longer waits for its
  // hello (admitted, refused or gone).
  auto settled = std::make_shared<bool>(false);
  auto settle = [=] {
    if (!*settled) {
      *settled = true;
      self->send(acceptor, caf::ok_atom::value, id);
    }
  };
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
    settle();
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
      // From the acceptor: this connection's time for a hello is up.
      if (*bridge || *closing)
        return;
      spdlog::warn("connection from {}: no hello with the token in time; "
                   "closing it",
                   peer);
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
      settle();
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

// The acceptor: takes each socket the accept loop hands it, as a
// connection broker of its own, and keeps the connections that have not
// said hello within net::hello_limiter's bounds, closing the ones it says.
caf::behavior tcp_acceptor(caf::io::broker* self, bridge_factory make_bridge,
                           tcp_gate gate, int wake_fd,
                           net::hello_limits limits) {
  log_instead_of_printing(self);
  auto limiter = std::make_shared<net::hello_limiter>(limits);
  // The connections waiting for their hello, with their descriptors.
  struct waiter {
    caf::actor broker;
    int fd;
  };
  auto waiting = std::make_shared<std::map<uint64_t, waiter>>();
  // Whether a waiting connection has bytes not read yet (its hello).
  auto sent = [waiting](uint64_t id) {
    auto i = waiting->find(id);
    char c;
    return i != waiting->end()
           && ::recv(i->second.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  };
  // When the acceptor ends, so does the loop that accepts for it.
  self->attach_functor([wake_fd] {
    char c = 0;
    [[maybe_unused]] auto n = ::write(wake_fd, &c, 1);
    ::close(wake_fd);
  });
  auto close_waiting = [=](uint64_t id) {
    if (auto i = waiting->find(id); i != waiting->end()) {
      self->send(i->second.broker, hello_atom_v);
      waiting->erase(i);
    }
  };
  self->delayed_send(self, hello_sweep, caf::tick_atom::value);
  return {
    [=](caf::connect_atom, int fd, const std::string& peer) {
      auto a = limiter->admit(peer, std::chrono::steady_clock::now(), sent);
      for (auto id : a.evicted)
        close_waiting(id);
      auto hdl = self->add_scribe(fd);
      auto conn = self->fork(tcp_connection, hdl, make_bridge, gate,
                             caf::actor_cast<caf::actor>(self), a.id);
      waiting->emplace(a.id, waiter{conn, fd});
    },
    [=](caf::ok_atom, uint64_t id) {
      limiter->settled(id);
      waiting->erase(id);
    },
    [=](caf::delete_atom) {
      // Out of descriptors: the silent connections that waited longest go.
      for (auto id : limiter->oldest(out_of_descriptors_room, sent))
        close_waiting(id);
    },
    [=](caf::tick_atom) {
      for (auto id : limiter->expired(std::chrono::steady_clock::now()))
        close_waiting(id);
      self->delayed_send(self, hello_sweep, caf::tick_atom::value);
    },
  };
}

/// The peer's address without its port ("127.0.0.1", "::1").
std::string address_of(const sockaddr_storage& ss) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr,
                text, sizeof text);
  else if (ss.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr,
                text, sizeof text);
  return text;
}

// The accept loop (detached: it blocks in poll): accepts every connection
// and hands it to the acceptor. Out of descriptors, it has the acceptor
// close the silent connections that waited longest for their hello, and
// stops polling the listening socket for a moment (the pending connection
// would wake it at once, for ever); the pending connections wait in the
// kernel's queue meanwhile. Ends when `wake_fd` becomes readable.
void accept_loop(caf::blocking_actor* self, int listen_fd, int wake_fd,
                 caf::actor acceptor) {
  using clock = std::chrono::steady_clock;
  auto paused_until = clock::time_point::min();
  for (;;) {
    auto now = clock::now();
    bool accepting = now >= paused_until;
    pollfd fds[2]
      = {{accepting ? listen_fd : -1, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    int rc
      = ::poll(fds, 2, accepting ? -1 : poll_timeout_ms(paused_until - now));
    if (rc < 0 && errno == EINTR)
      continue;
    if (rc < 0 || fds[1].revents != 0)
      break;
    if ((fds[0].revents & POLLIN) == 0)
      continue;
    for (int i = 0; i < accept_batch; ++i) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len,
                         SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) {
        self->send(acceptor, caf::connect_atom::value, fd, address_of(ss));
        continue;
      }
      if (errno == EINTR)
        continue;
      if (errno == EMFILE || errno == ENFILE) {
        self->send(acceptor, caf::delete_atom::value);
        spdlog::warn("out of file descriptors: closing silent connections; "
                     "accepting again in {} ms",
                     out_of_descriptors_pause.count());
        paused_until = clock::now() + out_of_descriptors_pause;
      }
      break; // EAGAIN: all taken
    }
  }
  ::close(listen_fd);
  ::close(wake_fd);
}

} // namespace

tcp_server start_tcp_server(caf::actor_system& sys, const std::string& host,
                            uint16_t port, bridge_factory make_bridge,
                            tcp_gate gate) {
  listen_address where{host, port};
  std::string problem;
  int fd = listen_tcp(where, problem);
  if (fd < 0)
    throw std::runtime_error("cannot listen on " + to_string(where) + ": "
                             + problem);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot listen on " + to_string(where)
                             + ": cannot make a pipe");
  }
  rlimit nofile{};
  ::getrlimit(RLIMIT_NOFILE, &nofile);
  auto acceptor = sys.middleman().spawn_broker(
    tcp_acceptor, std::move(make_bridge), std::move(gate), wake[1],
    net::limits_for(nofile.rlim_cur));
  sys.spawn(accept_loop, fd, wake[0], acceptor);
  tcp_server result;
  result.acceptor = acceptor;
  result.port = bound.ss_family == AF_INET6
                  ? ntohs(reinterpret_cast<sockaddr_in6&>(bound).sin6_port)
                  : ntohs(reinterpret_cast<sockaddr_in&>(bound).sin_port);
  return result;
}

} // namespace taskforce
