// One JSON-lines protocol connection seen from a blocking client: whole
// lines out, whole lines in, every wait bounded by a deadline. The TCP
// endpoint client and the per-user server's Unix-socket client both talk
// through it.
#pragma once

#include <chrono>
#include <string>

namespace taskforce::net {

/// A connected socket carrying JSON lines; owns (and closes) the descriptor.
class line_channel {
 public:
  using clock = std::chrono::steady_clock;

  /// Takes `fd`; `peer` names the server in error messages ("the server at
  /// …").
  line_channel(int fd, std::string peer);
  ~line_channel();
  line_channel(const line_channel&) = delete;
  line_channel& operator=(const line_channel&) = delete;

  /// Sends `line` plus a newline before `deadline`. Throws endpoint_error
  /// (timeout, broken).
  void send_line(std::string line, clock::time_point deadline);

  /// The next line without its newline. Throws endpoint_error (timeout;
  /// broken when the server closed or sent an over-long line).
  std::string read_line(clock::time_point deadline);

  /// The next line that is a response (has an "id"); events are skipped.
  /// Throws endpoint_error (broken also for a line that is not a JSON
  /// object).
  std::string read_response(clock::time_point deadline);

  /// "the server at <peer>".
  std::string who() const;

 private:
  int fd_;
  std::string peer_;
  /// Bytes read past the last line returned.
  std::string buffer_;
};

/// Waits until `fd` is ready for `events` (poll(2) flags) or `deadline`
/// passes; false on the deadline.
bool wait_ready(int fd, short events, line_channel::clock::time_point deadline);

} // namespace taskforce::net
