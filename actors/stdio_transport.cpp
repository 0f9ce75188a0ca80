#include "actors/stdio_transport.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <string>

#include <poll.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "messages/type_ids.hpp"

namespace taskforce {

namespace {

constexpr size_t chunk_bytes = 64 * 1024;

/// The most one write hands to the kernel: a pipe that polls writable
/// takes this much without blocking.
constexpr size_t write_piece = PIPE_BUF;

/// Writes all of `data` to `fd`, waiting for it to become writable; false
/// once the reader is gone, or when `wake_fd` turns readable (shutdown)
/// while the reader does not take more.
bool write_all(int fd, int wake_fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    pollfd fds[2] = {{fd, POLLOUT, 0}, {wake_fd, POLLIN, 0}};
    auto rc = ::poll(fds, wake_fd >= 0 ? 2 : 1, -1);
    if (rc < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    if ((fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0)
      return false;
    if ((fds[0].revents & POLLOUT) == 0) {
      if (wake_fd >= 0 && (fds[1].revents & POLLIN) != 0)
        return false;
      continue;
    }
    auto n = ::write(fd, data.data() + done,
                     std::min(write_piece, data.size() - done));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN)
        continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

caf::behavior fd_writer(caf::event_based_actor* self, int fd, int wake_fd) {
  auto broken = std::make_shared<bool>(false);
  self->set_default_handler(caf::drop);
  return {
    [=](const std::string& chunk) {
      if (!*broken && !write_all(fd, wake_fd, chunk)) {
        *broken = true;
        spdlog::info("output closed by the reader (or abandoned at "
                     "shutdown); dropping further output");
      }
      // The sender counts what waits here: tell it this chunk is gone.
      if (auto to = caf::actor_cast<caf::actor>(self->current_sender()))
        self->send(to, written_atom_v, static_cast<uint64_t>(chunk.size()));
    },
    [=](caf::close_atom) {
      self->quit();
    },
  };
}

void fd_reader(caf::blocking_actor* self, int fd, int wake_fd,
               caf::actor bridge) {
  std::string buffer(chunk_bytes, '\0');
  bool bridge_alive = true;
  while (bridge_alive) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    auto rc = ::poll(fds, wake_fd >= 0 ? 2 : 1, -1);
    if (rc < 0) {
      if (errno == EINTR)
        continue;
      spdlog::error("poll on input failed: errno {}", errno);
      break;
    }
    if (wake_fd >= 0 && (fds[1].revents & POLLIN))
      return; // shutting down: the pool's exit finishes the bridge
    auto n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n <= 0)
      break;
    self->request(bridge, caf::infinite, buffer.substr(0, n))
      .receive([](caf::ok_atom) {},
               [&](caf::error&) {
                 bridge_alive = false;
               });
  }
  if (bridge_alive)
    self->send(bridge, caf::close_atom::value);
}

} // namespace

caf::actor spawn_fd_writer(caf::actor_system& sys, int fd, int wake_fd) {
  return sys.spawn<caf::detached>(fd_writer, fd, wake_fd);
}

caf::actor spawn_fd_reader(caf::actor_system& sys, int fd, int wake_fd,
                           caf::actor bridge) {
  return sys.spawn(fd_reader, fd, wake_fd, std::move(bridge));
}

} // namespace taskforce
