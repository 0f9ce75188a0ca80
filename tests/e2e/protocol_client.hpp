// A harness's side of the JSON-lines protocol, for end-to-end tests: starts
// `taskforce serve` as a real child process (posix_spawn, pipes) or connects
// to it over loopback TCP, sends request lines and reads response and event
// lines with timeouts. Framework-free: failures throw std::runtime_error.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/proc/spawn.hpp"

namespace taskforce::test {

using json = nlohmann::json;

/// Reads `\n`-terminated lines from a descriptor with a timeout.
class line_reader {
 public:
  explicit line_reader(int fd = -1) : fd_(fd) {}

  /// The next line without its newline; nullopt at end of input. Throws on
  /// timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
        auto line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      if (eof_)
        return std::nullopt;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        throw std::runtime_error("timed out waiting for a line (have \""
                                 + buffer_ + "\")");
      pollfd p{fd_, POLLIN, 0};
      auto rc = ::poll(&p, 1, static_cast<int>(left.count()));
      if (rc < 0 && errno == EINTR)
        continue;
      if (rc <= 0)
        continue;
      char chunk[65536];
      auto n = ::read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        eof_ = true;
      else
        buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  /// Whether the other side closed and every line was read.
  bool at_end(std::chrono::milliseconds timeout) {
    try {
      return !read_line(timeout).has_value();
    } catch (const std::runtime_error&) {
      return false;
    }
  }

 private:
  int fd_;
  std::string buffer_;
  bool eof_ = false;
};

/// One protocol connection: requests out, responses and events in.
class protocol_peer {
 public:
  /// Default wait for one line.
  static constexpr std::chrono::milliseconds patience{5000};

  protocol_peer() = default;

  protocol_peer(int in_fd, int out_fd) : out_fd_(out_fd), reader_(in_fd) {}

  /// Writes `line` plus a newline.
  void send_line(const std::string& line) {
    std::string data = line + "\n";
    size_t done = 0;
    while (done < data.size()) {
      auto n = ::write(out_fd_, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        throw std::runtime_error("write failed: "
                                 + std::string{std::strerror(errno)});
      done += static_cast<size_t>(n);
    }
  }

  /// Sends one request object.
  void send(const json& request) {
    send_line(request.dump());
  }

  /// The next line from the server, parsed; throws on timeout or EOF.
  json next(std::chrono::milliseconds timeout = patience) {
    return next_unbuffered(timeout);
  }

  /// Reads until the response with `id` arrives; lines read on the way are
  /// kept for later next() calls (events also go to `events`).
  json response(const json& id, std::chrono::milliseconds timeout = patience) {
    std::deque<json> skipped;
    for (;;) {
      auto x = next_unbuffered(timeout);
      if (x.contains("id") && x["id"] == id) {
        for (auto i = skipped.rbegin(); i != skipped.rend(); ++i)
          pending_.push_front(*i);
        return x;
      }
      skipped.push_back(x);
    }
  }

  /// Reads until an event of `kind` for `holder` arrives; other lines are
  /// kept for later.
  json event(const std::string& kind, const std::string& holder,
             std::chrono::milliseconds timeout = patience) {
    std::deque<json> skipped;
    for (auto i = pending_.begin(); i != pending_.end(); ++i)
      if (i->value("event", "") == kind && i->value("holder", "") == holder) {
        auto x = *i;
        pending_.erase(i);
        return x;
      }
    for (;;) {
      auto x = next_unbuffered(timeout);
      if (x.value("event", "") == kind && x.value("holder", "") == holder) {
        for (auto i = skipped.rbegin(); i != skipped.rend(); ++i)
          pending_.push_front(*i);
        return x;
      }
      skipped.push_back(x);
    }
  }

  /// Sends a request and waits for its response.
  json call(const json& request, std::chrono::milliseconds timeout = patience) {
    send(request);
    return response(request["id"], timeout);
  }

  /// Whether nothing more arrives within `quiet`.
  bool silent(std::chrono::milliseconds quiet) {
    if (!pending_.empty())
      return false;
    try {
      auto line = reader_.read_line(quiet);
      if (line) {
        raw.push_back(*line);
        pending_.push_back(json::parse(*line));
      }
      return !line.has_value();
    } catch (const std::runtime_error&) {
      return true;
    }
  }

  /// Every line read so far, as text.
  std::vector<std::string> raw;

 private:
  json next_unbuffered(std::chrono::milliseconds timeout) {
    if (!pending_.empty()) {
      auto x = pending_.front();
      pending_.pop_front();
      return x;
    }
    auto line = reader_.read_line(timeout);
    if (!line)
      throw std::runtime_error("the server closed the connection");
    raw.push_back(*line);
    return json::parse(*line);
  }

  int out_fd_ = -1;
  line_reader reader_;
  std::deque<json> pending_;
};

/// `taskforce serve` as a child process with pipes on all three streams.
class serve_process {
 public:
  /// Starts `binary serve <args…>`.
  serve_process(const std::string& binary, std::vector<std::string> args) {
    proc::spawn_options o;
    o.argv.push_back(binary);
    for (auto& a : args)
      o.argv.push_back(a);
    o.in = proc::stdio::pipe();
    o.out = proc::stdio::pipe();
    o.err = proc::stdio::pipe();
    child_ = proc::spawn(o);
    peer = protocol_peer{child_.stdout_fd, child_.stdin_fd};
    err_reader_ = line_reader{child_.stderr_fd};
  }

  ~serve_process() {
    if (!reaped_) {
      ::kill(child_.pid, SIGKILL);
      ::waitpid(child_.pid, nullptr, 0);
    }
    close_input();
    for (int fd : {child_.stdout_fd, child_.stderr_fd})
      if (fd >= 0)
        ::close(fd);
  }

  serve_process(const serve_process&) = delete;
  serve_process& operator=(const serve_process&) = delete;

  /// Closes the child's standard input (end of input for --stdio).
  void close_input() {
    if (child_.stdin_fd >= 0) {
      ::close(child_.stdin_fd);
      child_.stdin_fd = -1;
    }
  }

  /// The next line on the child's standard error.
  std::optional<std::string> stderr_line(std::chrono::milliseconds timeout
                                         = protocol_peer::patience) {
    auto line = err_reader_.read_line(timeout);
    if (line)
      err_lines.push_back(*line);
    return line;
  }

  /// Whether the child is still running (not exited, not reaped).
  bool running() {
    if (reaped_)
      return false;
    int status = 0;
    auto rc = ::waitpid(child_.pid, &status, WNOHANG);
    if (rc == child_.pid) {
      reaped_ = true;
      exit_status_
        = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      return false;
    }
    return true;
  }

  /// Everything left on standard error until it closes.
  std::string drain_stderr() {
    std::string all;
    for (auto& l : err_lines)
      all += l + "\n";
    try {
      while (auto line = stderr_line())
        all += *line + "\n";
    } catch (const std::runtime_error&) {
    }
    return all;
  }

  /// Sends `signal` to the child.
  void signal(int sig) {
    ::kill(child_.pid, sig);
  }

  /// Waits for the child to exit; its exit code, or -signal; throws after
  /// `timeout`.
  int wait(std::chrono::milliseconds timeout = protocol_peer::patience) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (reaped_)
        return exit_status_;
      int status = 0;
      auto rc = ::waitpid(child_.pid, &status, WNOHANG);
      if (rc == child_.pid) {
        reaped_ = true;
        exit_status_
          = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
        return exit_status_;
      }
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("the server did not exit in time");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  /// The child's pid.
  pid_t pid() const {
    return child_.pid;
  }

  /// The protocol over the child's stdin and stdout.
  protocol_peer peer;

  /// Lines read from standard error so far.
  std::vector<std::string> err_lines;

 private:
  proc::child child_;
  line_reader err_reader_;
  bool reaped_ = false;
  int exit_status_ = 0;
};

/// A TCP connection to a server on loopback.
class tcp_peer {
 public:
  /// Connects to 127.0.0.1:`port`; throws when refused.
  explicit tcp_peer(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      throw std::runtime_error("connect failed: "
                               + std::string{std::strerror(errno)});
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    peer = protocol_peer{fd_, fd_};
  }

  ~tcp_peer() {
    close();
  }

  tcp_peer(const tcp_peer&) = delete;
  tcp_peer& operator=(const tcp_peer&) = delete;

  /// Closes the connection, as a harness that dies does.
  void close() {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }

  /// The protocol over the socket.
  protocol_peer peer;

 private:
  int fd_ = -1;
};

/// An acquire request.
inline json acquire(const json& id, const std::string& session,
                    const std::string& holder,
                    const std::string& kind = "foreground") {
  return json{{"id", id},
              {"op", "acquire"},
              {"session", session},
              {"holder", holder},
              {"kind", kind}};
}

/// A release request.
inline json release(const json& id, const std::string& holder,
                    const std::string& reason = "completed") {
  return json{
    {"id", id}, {"op", "release"}, {"holder", holder}, {"reason", reason}};
}

} // namespace taskforce::test
