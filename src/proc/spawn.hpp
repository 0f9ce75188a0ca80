// Starting a child process with posix_spawn: its own process group, default
// signal dispositions, an empty signal mask, and each standard stream wired
// to the caller's choice. The one place that creates processes.
#pragma once

#include <sys/types.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace taskforce::proc {

/// What one standard stream of the child is connected to.
struct stdio {
  /// The kinds of connection.
  enum class kind {
    inherit,   ///< the caller's own stream
    null,      ///< /dev/null
    truncate,  ///< `path`, created or emptied
    append,    ///< `path`, created or appended to
    pipe,      ///< a new pipe; the caller's end is returned in `child`
    to_stdout, ///< (stderr only) wherever stdout goes
  };
  /// How the stream is connected.
  kind how = kind::inherit;
  /// The file for `truncate` and `append`, relative to the caller's working
  /// directory (not the child's).
  std::string path;

  /// The caller's own stream.
  static stdio inherit() {
    return {kind::inherit, {}};
  }
  /// /dev/null.
  static stdio null() {
    return {kind::null, {}};
  }
  /// A file, emptied first unless `append`.
  static stdio file(std::string path, bool append = false) {
    return {append ? kind::append : kind::truncate, std::move(path)};
  }
  /// A new pipe.
  static stdio pipe() {
    return {kind::pipe, {}};
  }
  /// For stderr: the same place as stdout (one interleaved stream).
  static stdio to_stdout() {
    return {kind::to_stdout, {}};
  }
};

/// What to start.
struct spawn_options {
  /// The program and its arguments; argv[0] without a '/' is searched on
  /// the caller's PATH (not one set in `env`).
  std::vector<std::string> argv;
  /// The child's working directory; empty = the caller's.
  std::string cwd;
  /// Variables set (or replaced) on top of the caller's environment.
  std::vector<std::pair<std::string, std::string>> env;
  /// Standard input, output and error.
  stdio in = stdio::inherit();
  /// Standard output.
  stdio out = stdio::inherit();
  /// Standard error.
  stdio err = stdio::inherit();
};

/// A started child. Its pid is also its process-group id. The pipe ends
/// (close-on-exec) belong to the caller, -1 when the stream is no pipe.
struct child {
  /// The child's pid = its process-group id.
  pid_t pid = -1;
  /// The write end of the child's stdin pipe.
  int stdin_fd = -1;
  /// The read end of the child's stdout pipe.
  int stdout_fd = -1;
  /// The read end of the child's stderr pipe.
  int stderr_fd = -1;
};

/// A process could not be started; what() names the program (or the file)
/// and the errno text, code() is the errno.
class spawn_error : public std::runtime_error {
 public:
  /// Builds the error.
  spawn_error(const std::string& what, int code)
    : std::runtime_error(what), code_(code) {}
  /// The errno value (ENOENT for a missing program).
  int code() const noexcept {
    return code_;
  }

 private:
  int code_;
};

/// Starts `opts.argv` in a new process group (pgid = pid) with default
/// signal dispositions and an empty signal mask. Thread-safe. Throws
/// spawn_error when the program or a redirection file cannot be opened.
child spawn(const spawn_options& opts);

/// How a child ended.
struct exit_status {
  /// The exit code, -1 when killed by a signal.
  int code = -1;
  /// The terminating signal, 0 when it exited.
  int signal = 0;
  /// True when it exited with code 0.
  bool success() const {
    return signal == 0 && code == 0;
  }
};

/// Decodes a waitpid status.
exit_status decode_wait_status(int status);

/// Waits for child `pid` (retrying on EINTR) and reaps it.
exit_status wait_for(pid_t pid);

/// "exit 3" or "signal 9 (Killed)".
std::string to_string(const exit_status& status);

} // namespace taskforce::proc
