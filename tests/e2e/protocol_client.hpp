// A harness's side of the JSON-lines protocol, for end-to-end tests: starts
// `taskforce serve` as a real child process (posix_spawn, pipes) or connects
// to it over loopback TCP, sends request lines and reads response and event
// lines with timeouts. Framework-free: failures throw std::runtime_error.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
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
      if (auto nl = buffer_.find('\n', pos_); nl != std::string::npos) {
        auto line = buffer_.substr(pos_, nl - pos_);
        pos_ = nl + 1;
        // Compact now and then, not per line (bulk reads stay linear).
        if (pos_ >= 65536 && pos_ * 2 >= buffer_.size()) {
          buffer_.erase(0, pos_);
          pos_ = 0;
        }
        return line;
      }
      if (eof_)
        return std::nullopt;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        throw std::runtime_error("timed out waiting for a line (have \""
                                 + buffer_.substr(pos_, 200) + "\")");
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
  /// Where the unread part of `buffer_` starts.
  size_t pos_ = 0;
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

  /// Reads raw lines until `n` responses (lines that start with `{"id":`)
  /// have come, without parsing them (for bulk traffic); events pass by.
  /// Returns the responses counted. Throws on timeout or end of output.
  size_t count_responses(size_t n,
                         std::chrono::milliseconds timeout = patience) {
    size_t seen = 0;
    while (seen < n) {
      auto line = reader_.read_line(timeout);
      if (!line)
        throw std::runtime_error("the server closed the connection after "
                                 + std::to_string(seen) + " responses");
      if (line->rfind("{\"id\":", 0) == 0)
        ++seen;
    }
    return seen;
  }

  /// Reads raw lines until one contains `needle` and returns it parsed;
  /// the lines before it are dropped unparsed (for bulk traffic).
  json skip_until(const std::string& needle,
                  std::chrono::milliseconds timeout = patience) {
    for (;;) {
      auto line = reader_.read_line(timeout);
      if (!line)
        throw std::runtime_error("the server closed the connection before \""
                                 + needle + "\"");
      if (line->find(needle) != std::string::npos) {
        raw.push_back(*line);
        return json::parse(*line);
      }
    }
  }

  /// Every line read so far, as text.
  std::vector<std::string> raw;

  /// The descriptor requests are written to.
  int out_fd() const {
    return out_fd_;
  }

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
  /// Starts `binary serve <args…>` (in `cwd` when given).
  serve_process(const std::string& binary, std::vector<std::string> args,
                const std::string& cwd = {}) {
    proc::spawn_options o;
    // By default outside any repository: a server in one also serves its
    // control plane, in that repository's ledger.
    o.cwd = cwd.empty() ? std::filesystem::temp_directory_path().string() : cwd;
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

  /// Reads what standard error holds now without waiting, so a chatty
  /// server never blocks on a full pipe; keeps the lines.
  void skim_stderr() {
    try {
      while (auto line = err_reader_.read_line(std::chrono::milliseconds(1)))
        err_lines.push_back(*line);
    } catch (const std::runtime_error&) {
      // nothing more for now
    }
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

  /// The exit code (or -signal) once running() or wait() saw the exit.
  int exit_status() const {
    return exit_status_;
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

/// A TCP connection to a server on loopback; the constructor with a token
/// says hello with it first, the other leaves the connection as a stranger's.
class tcp_peer {
 public:
  /// Connects to 127.0.0.1:`port`; throws when refused. A `receive_buffer`
  /// above 0 shrinks the socket's receive buffer (a reader that falls behind
  /// sooner).
  explicit tcp_peer(uint16_t port, int receive_buffer = 0) {
    connect(port, receive_buffer);
  }

  /// Connects and says hello with `token` (the server's, from its endpoint
  /// file) as every TCP client must first; the answer is in peer.raw.
  /// Throws when the server refuses.
  tcp_peer(uint16_t port, const std::string& token, int receive_buffer = 0) {
    connect(port, receive_buffer);
    auto r = peer.call({{"id", "hello"}, {"op", "hello"}, {"token", token}});
    if (r.value("ok", false) != true)
      throw std::runtime_error("the server refused the token: " + r.dump());
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
  void connect(uint16_t port, int receive_buffer) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (receive_buffer > 0)
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer,
                   sizeof receive_buffer);
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

  int fd_ = -1;
};

/// A connection to a server's Unix socket (the per-user server's
/// pool.sock): no hello, the socket's folder is the gate.
class unix_peer {
 public:
  /// Connects to the socket at `path`; throws when nothing answers there.
  explicit unix_peer(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path)
      throw std::runtime_error("socket path too long: " + path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      auto why = std::string{std::strerror(errno)};
      ::close(fd_);
      fd_ = -1;
      throw std::runtime_error("connect to " + path + " failed: " + why);
    }
    peer = protocol_peer{fd_, fd_};
  }

  ~unix_peer() {
    if (fd_ >= 0)
      ::close(fd_);
  }

  unix_peer(const unix_peer&) = delete;
  unix_peer& operator=(const unix_peer&) = delete;

  /// The protocol over the socket.
  protocol_peer peer;

 private:
  int fd_ = -1;
};

/// The token in the endpoint file `file` (`serve --token-file`).
inline std::string token_in(const std::string& file) {
  std::ifstream in(file);
  if (!in)
    throw std::runtime_error("no endpoint file " + file);
  return json::parse(in).at("token").get<std::string>();
}

/// The resident memory of process `pid` in KiB (VmRSS in /proc), 0 when the
/// process is gone.
inline uint64_t vm_rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stoull(line.substr(6));
  return 0;
}

/// Writes `data` to `fd` for as long as the reader on the other side takes
/// it; gives up once the descriptor stayed unwritable for `stall` (the
/// reader stopped reading). Returns how many bytes were written.
inline size_t write_until_stalled(int fd, const std::string& data,
                                  std::chrono::milliseconds stall) {
  auto flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  size_t done = 0;
  while (done < data.size()) {
    auto n = ::write(fd, data.data() + done, data.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      break;
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(stall.count())) == 0)
      break;
  }
  ::fcntl(fd, F_SETFL, flags);
  return done;
}

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
