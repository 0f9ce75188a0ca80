#include "src/net/line_channel.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <nlohmann/json.hpp>

#include "src/net/endpoint.hpp"
#include "src/text/json_reader.hpp"
#include "src/time/duration.hpp"

namespace taskforce::net {

namespace {

/// The longest response line taken (a status of a big pool fits).
constexpr size_t max_response_bytes = 64 << 20;

} // namespace

bool wait_ready(int fd, short events,
                line_channel::clock::time_point deadline) {
  for (;;) {
    auto left = poll_timeout_ms(deadline - line_channel::clock::now());
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, left);
    if (r < 0 && errno == EINTR)
      continue;
    return r > 0;
  }
}

line_channel::line_channel(int fd, std::string peer)
  : fd_(fd), peer_(std::move(peer)) {}

line_channel::~line_channel() {
  if (fd_ >= 0)
    ::close(fd_);
}

std::string line_channel::who() const {
  return "the server at " + peer_;
}

void line_channel::send_line(std::string line, clock::time_point deadline) {
  line += '\n';
  size_t done = 0;
  while (done < line.size()) {
    auto n = ::send(fd_, line.data() + done, line.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_ready(fd_, POLLOUT, deadline))
        throw endpoint_error(endpoint_errc::timeout,
                             who() + " did not take the request in time");
      continue;
    }
    throw endpoint_error(endpoint_errc::broken,
                         who() + " closed the connection");
  }
}

std::string line_channel::read_line(clock::time_point deadline) {
  for (;;) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      auto line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (buffer_.size() > max_response_bytes)
      throw endpoint_error(endpoint_errc::broken,
                           who() + " sent a line longer than "
                             + std::to_string(max_response_bytes) + " bytes");
    if (!wait_ready(fd_, POLLIN, deadline))
      throw endpoint_error(endpoint_errc::timeout,
                           who() + " did not answer in time");
    char chunk[65536];
    auto n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n <= 0)
      throw endpoint_error(endpoint_errc::broken,
                           who() + " closed the connection");
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

std::string line_channel::read_response(clock::time_point deadline) {
  for (;;) {
    auto line = read_line(deadline);
    nlohmann::json j;
    if (!read_json(line.data(), line.data() + line.size(), j).ok()
        || !j.is_object())
      throw endpoint_error(endpoint_errc::broken,
                           who() + " sent a line that is not a JSON object");
    if (j.contains("id"))
      return line;
  }
}

} // namespace taskforce::net
