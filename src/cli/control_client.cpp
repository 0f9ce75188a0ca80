#include "src/cli/control_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>

#include "src/net/unix_socket.hpp"
#include "src/run/control_wire.hpp"

namespace taskforce::cli {

namespace {

/// How long the driver may take to make the change durable and answer.
constexpr int verdict_timeout_ms = 10000;

struct socket_fd {
  int fd = -1;
  ~socket_fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

bool wait_for(int fd, short events, int64_t deadline_ms) {
  using namespace std::chrono;
  for (;;) {
    auto now
      = duration_cast<milliseconds>(steady_clock::now().time_since_epoch())
          .count();
    if (now >= deadline_ms)
      return false;
    pollfd pfd{fd, events, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(deadline_ms - now));
    if (r < 0 && errno == EINTR)
      continue;
    return r > 0;
  }
}

int64_t clock_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch())
    .count();
}

/// Connects to the driver `info` names; false when nothing listens there or
/// the process listening is not that driver of this user (a file a killed
/// driver left): then nothing may be sent.
bool connect_driver(socket_fd& s, const run::driver_info& info) {
  int err = 0;
  std::string why;
  s.fd = net::connect_unix(info.socket, err, why);
  if (s.fd < 0)
    return false;
  auto peer = net::peer_of(s.fd);
  return peer && peer->uid == ::getuid() && peer->pid == info.pid;
}

} // namespace

std::optional<run::steer_verdict>
steer_live(const std::filesystem::path& root,
           const run::steer_request& request) {
  // No file, or one a killed driver left whose socket nothing (or another
  // process) listens on now: no driver.
  auto info = run::read_driver_file(run::driver_file(root));
  if (!info)
    return std::nullopt;
  socket_fd s;
  if (!connect_driver(s, *info))
    return std::nullopt;
  auto line = run::encode_request({info->token, request});
  auto deadline = clock_ms() + verdict_timeout_ms;
  size_t off = 0;
  while (off < line.size()) {
    if (!wait_for(s.fd, POLLOUT, deadline))
      return std::nullopt;
    auto n = ::send(s.fd, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n <= 0)
      return std::nullopt;
    off += static_cast<size_t>(n);
  }
  std::string reply;
  char buf[4096];
  for (;;) {
    if (!wait_for(s.fd, POLLIN, deadline)) {
      run::steer_verdict v;
      v.outcome = run::steer_outcome::failed;
      v.live = true;
      v.message = "the driver of run " + info->run_id
                  + " did not answer within "
                  + std::to_string(verdict_timeout_ms / 1000)
                  + " s; see `taskforce status` for whether it took effect";
      return v;
    }
    auto n = ::recv(s.fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n <= 0)
      break;
    reply.append(buf, static_cast<size_t>(n));
    if (reply.find('\n') != std::string::npos
        || reply.size() > run::max_control_line)
      break;
  }
  auto nl = reply.find('\n');
  auto verdict = run::decode_verdict(
    nl == std::string::npos ? reply : reply.substr(0, nl));
  // Not a driver of this run (another run, a wrong token: a stale file).
  if (!verdict || verdict->first == run::control_answer::elsewhere
      || verdict->first == run::control_answer::unauthorized)
    return std::nullopt;
  run::steer_verdict v;
  v.live = true;
  v.message = verdict->second;
  switch (verdict->first) {
    case run::control_answer::accepted:
      v.outcome = run::steer_outcome::accepted;
      break;
    case run::control_answer::refused:
      v.outcome = run::steer_outcome::refused;
      break;
    default: v.outcome = run::steer_outcome::failed; break;
  }
  return v;
}

} // namespace taskforce::cli
