#include "actors/unix_transport.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/stdio_transport.hpp"
#include "src/net/user_server.hpp"
#include "src/time/duration.hpp"

namespace taskforce {

namespace {

using clock_type = std::chrono::steady_clock;

/// How often the acceptor looks at the idle clock.
constexpr auto idle_tick = std::chrono::milliseconds(200);

/// How long the pool may take to say whether anything is held.
constexpr auto status_patience = std::chrono::seconds(5);

// One connection: a writer and a reader on its descriptor around a bridge.
// The bridge ends with `close` to the writer; a writer that is gone shuts
// the socket down so the reader sees the end too; once both are gone the
// descriptor is closed.
caf::behavior unix_connection(caf::event_based_actor* self, int fd, int wake_fd,
                              bridge_factory make_bridge) {
  auto& sys = self->system();
  auto writer = spawn_fd_writer(sys, fd, wake_fd);
  auto bridge = make_bridge(writer);
  auto reader = spawn_fd_reader(sys, fd, wake_fd, bridge);
  self->monitor(writer);
  self->monitor(reader);
  auto gone = std::make_shared<int>(0);
  self->set_down_handler([=](caf::down_msg& msg) {
    if (msg.source == writer.address())
      ::shutdown(fd, SHUT_RDWR);
    if (++*gone == 2) {
      ::close(fd);
      spdlog::info("connection {} closed", fd);
      self->quit();
    }
  });
  return {
    [](caf::ok_atom) {
      // Nothing is asked of a connection; it lives by its monitors.
    },
  };
}

/// Whether the pool holds or queues anything (true when it cannot say: an
/// idle exit must never drop a permit).
bool pool_busy(caf::blocking_actor* self, const pool_actor& pool) {
  bool busy = true;
  self->request(pool, status_patience, status_atom_v)
    .receive(
      [&](const pool_status& st) {
        busy = false;
        for (auto& p : st.pools)
          if (!p.running.empty() || !p.queued.empty())
            busy = true;
      },
      [&](caf::error&) {
        // The pool is gone (shutdown): nothing is left to keep.
        busy = false;
      });
  return busy;
}

/// Forgets the connections that ended (their down messages).
void forget_ended(caf::blocking_actor* self,
                  std::map<caf::actor_addr, caf::actor>& open) {
  bool more = true;
  while (more)
    self->receive(
      [&](caf::down_msg& msg) {
        open.erase(msg.source);
      },
      caf::after(std::chrono::seconds(0)) >>
        [&] {
          more = false;
        });
}

void unix_acceptor(caf::blocking_actor* self, unix_server_setup setup) {
  // The connections being served. The handles keep them alive: an actor
  // nobody refers to is ended by CAF.
  std::map<caf::actor_addr, caf::actor> open;
  auto last_busy = clock_type::now();
  for (;;) {
    forget_ended(self, open);
    pollfd fds[2] = {{setup.listen_fd, POLLIN, 0}, {setup.wake_fd, POLLIN, 0}};
    auto rc = ::poll(fds, setup.wake_fd >= 0 ? 2 : 1,
                     static_cast<int>(idle_tick.count()));
    if (rc < 0 && errno != EINTR) {
      spdlog::error("poll on the socket failed: errno {}", errno);
      break;
    }
    if (setup.wake_fd >= 0 && (fds[1].revents & POLLIN) != 0)
      break;
    if ((fds[0].revents & POLLIN) != 0) {
      int fd;
      while ((fd = ::accept4(setup.listen_fd, nullptr, nullptr, SOCK_CLOEXEC))
             >= 0) {
        if (!net::peer_is_same_user(fd)) {
          spdlog::warn("refused a connection of another user");
          ::close(fd);
          continue;
        }
        spdlog::info("connection {} opened", fd);
        auto conn = self->system().spawn(unix_connection, fd, setup.wake_fd,
                                         setup.make_bridge);
        self->monitor(conn);
        open.emplace(conn.address(), conn);
      }
      last_busy = clock_type::now();
      continue;
    }
    if (!open.empty()) {
      last_busy = clock_type::now();
      continue;
    }
    if (clock_type::now() - last_busy < setup.idle_exit)
      continue;
    if (pool_busy(self, setup.pool)) {
      last_busy = clock_type::now();
      continue;
    }
    spdlog::info("idle for {} ms with nothing held: exiting",
                 setup.idle_exit.count());
    break;
  }
  ::close(setup.listen_fd);
}

} // namespace

caf::actor start_unix_server(caf::actor_system& sys, unix_server_setup setup) {
  return sys.spawn(unix_acceptor, std::move(setup));
}

} // namespace taskforce
