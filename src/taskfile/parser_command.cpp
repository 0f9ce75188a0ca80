// Running `run.parserCommand`: the task file on its standard input, its
// standard output read back, in its own process group with a timeout.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "src/proc/spawn.hpp"
#include "src/taskfile/raw_task.hpp"
#include "src/time/duration.hpp"

namespace taskforce::taskfile {

namespace {

/// Output beyond this is refused: a parser printing without end is a bug.
constexpr size_t max_output = 64 * 1024 * 1024;

void close_fd(int& fd) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

} // namespace

std::optional<std::string>
run_parser_command(std::string_view text, const parse_options& opts,
                   std::vector<parse_error>& errors) {
  proc::spawn_options spawn_opts;
  spawn_opts.argv = {"/bin/sh", "-c", opts.parser_command};
  spawn_opts.cwd = opts.working_directory;
  spawn_opts.in = proc::stdio::pipe();
  spawn_opts.out = proc::stdio::pipe();
  spawn_opts.err = proc::stdio::pipe();
  proc::child child;
  try {
    child = proc::spawn(spawn_opts);
  } catch (const proc::spawn_error& e) {
    errors.push_back({0, "run.parserCommand: cannot start \""
                           + opts.parser_command + "\": " + e.what()});
    return std::nullopt;
  }
  for (int fd : {child.stdin_fd, child.stdout_fd, child.stderr_fd})
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  // A parser that exits without reading all of stdin must not kill us with
  // SIGPIPE: block it on this thread and drop any pending one afterwards.
  sigset_t pipe_only;
  sigset_t previous;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_only, &previous);
  // One loop feeds stdin and drains both outputs, so neither side blocks
  // on a full pipe.
  std::string out;
  std::string err;
  size_t written = 0;
  bool timed_out = false;
  bool too_big = false;
  auto deadline = saturating_deadline<std::chrono::steady_clock>(
    std::chrono::steady_clock::now(), saturating_ms(opts.parser_timeout_ms));
  if (text.empty())
    close_fd(child.stdin_fd);
  while (child.stdout_fd >= 0 || child.stderr_fd >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - std::chrono::steady_clock::now())
                  .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[3];
    nfds_t count = 0;
    for (int fd : {child.stdin_fd, child.stdout_fd, child.stderr_fd})
      if (fd >= 0)
        fds[count++] = {
          fd, static_cast<short>(fd == child.stdin_fd ? POLLOUT : POLLIN), 0};
    if (::poll(fds, count, static_cast<int>(std::min<long long>(left, 1000)))
        < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    for (nfds_t i = 0; i < count; ++i) {
      if (fds[i].revents == 0)
        continue;
      if (fds[i].fd == child.stdin_fd) {
        auto n = ::write(child.stdin_fd, text.data() + written,
                         text.size() - written);
        if (n > 0)
          written += static_cast<size_t>(n);
        if ((n < 0 && errno != EAGAIN && errno != EINTR)
            || written == text.size())
          close_fd(child.stdin_fd); // done, or the parser stopped reading
        continue;
      }
      bool is_out = fds[i].fd == child.stdout_fd;
      char buffer[65536];
      auto n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        auto& sink = is_out ? out : err;
        if (sink.size() + static_cast<size_t>(n) > max_output) {
          too_big = true;
        } else {
          sink.append(buffer, static_cast<size_t>(n));
        }
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        close_fd(is_out ? child.stdout_fd : child.stderr_fd);
      }
    }
    if (too_big)
      break;
  }
  close_fd(child.stdin_fd);
  close_fd(child.stdout_fd);
  close_fd(child.stderr_fd);
  timespec no_wait{0, 0};
  while (::sigtimedwait(&pipe_only, nullptr, &no_wait) == SIGPIPE) {
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (timed_out || too_big)
    ::killpg(child.pid, SIGKILL);
  auto status = proc::wait_for(child.pid);
  // Whatever the parser left running in its group goes with it.
  ::killpg(child.pid, SIGKILL);
  std::string prefix = "run.parserCommand \"" + opts.parser_command + "\" ";
  if (timed_out) {
    errors.push_back({0, prefix + "timed out after "
                           + std::to_string(opts.parser_timeout_ms) + " ms"});
    return std::nullopt;
  }
  if (too_big) {
    errors.push_back({0, prefix + "printed more than 64 MiB"});
    return std::nullopt;
  }
  if (!status.success()) {
    auto detail = std::string{trim(err)};
    if (detail.size() > 2000)
      detail = "..." + detail.substr(detail.size() - 2000);
    errors.push_back({0, prefix + "failed (" + proc::to_string(status) + ")"
                           + (detail.empty() ? "" : ": " + detail)});
    return std::nullopt;
  }
  return out;
}

} // namespace taskforce::taskfile
