// Running a command to completion on the calling thread: output to a log
// file and a tail in memory, a wall-clock timeout that kills the whole
// process group (SIGTERM, then SIGKILL after a grace period), a cancel handle
// for other threads, and no descendant left behind.
//
// Blocks its thread: call it from a detached actor or a plain thread, never
// on CAF's cooperative scheduler.
//
// No process outlives run(): when the command exits, times out or is
// cancelled, whatever is left of its process group is killed, and
// descendants that left the group (setsid, setpgid) or were orphaned are
// found as children adopted by this process (it makes itself a child
// subreaper) carrying the run's mark in their environment (see mark.hpp),
// then killed and reaped. Every run is in the registry (registry.hpp) from
// before its start: a signal handler can kill them all, and with a record
// folder the next process finds what a crash of this one left running.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/proc/registry.hpp"
#include "src/proc/spawn.hpp"

namespace taskforce::proc {

/// Stops a run from another thread. Copies share one state; a default one is
/// usable. Cancelling before the run starts makes it return at once without
/// starting anything; cancelling after it ended does nothing.
class cancel_handle {
 public:
  /// A fresh handle.
  cancel_handle();
  /// SIGTERM to the process group now, SIGKILL after the run's grace period.
  void cancel() const;
  /// SIGKILL to the process group now.
  void kill() const;
  /// True once cancel() or kill() was called.
  bool cancelled() const;

  /// Shared with run(); not for callers.
  struct state;
  /// The shared state; not for callers.
  const std::shared_ptr<state>& shared() const {
    return state_;
  }

 private:
  std::shared_ptr<state> state_;
};

/// What to run and how to watch it.
struct run_options {
  /// The program and its arguments (argv[0] searched on the caller's PATH).
  std::vector<std::string> argv;
  /// The working directory; empty = the caller's.
  std::string cwd;
  /// Variables set on top of the caller's environment.
  std::vector<std::pair<std::string, std::string>> env;
  /// A file fed as standard input; empty = /dev/null.
  std::string stdin_file;
  /// The log receiving stdout and stderr interleaved; empty = none.
  std::string log_file;
  /// Append to the log instead of emptying it first.
  bool append_log = false;
  /// How much of the end of the output to keep in memory.
  size_t tail_bytes = 64 * 1024;
  /// How much of the start of the output to keep in memory (where a
  /// program prints its banner).
  size_t head_bytes = 0;
  /// The wall-clock limit; zero = none. However large, it is a limit that
  /// far away (it saturates, never wraps).
  std::chrono::milliseconds timeout{0};
  /// Between SIGTERM and SIGKILL on a timeout or cancel() (saturates too).
  std::chrono::milliseconds kill_grace{5000};
  /// Stops the run from another thread.
  cancel_handle cancel;
  /// Called on the run's thread right after the start with the pid (= pgid).
  std::function<void(pid_t)> on_start;
  /// Called on the run's thread as output arrives, at most once per
  /// `output_interval`, with the last `output_bytes` of the output so far;
  /// empty = never.
  std::function<void(const std::string&)> on_output;
  /// The least time between two on_output calls.
  std::chrono::milliseconds output_interval{1000};
  /// How much of the output's end on_output gets.
  size_t output_bytes = 4096;
  /// Called on the run's thread with every piece of output as it is read,
  /// in order, nothing skipped (a wake pattern searched in the stream);
  /// empty = never. Keep it quick: the output waits meanwhile.
  std::function<void(std::string_view)> on_data;
  /// The start of the mark every process of the run carries (in the
  /// environment, with a unique suffix), e.g. "<run>/<task>/":
  /// kill_leftovers(label) finds them.
  std::string label;
  /// The whole mark to use, made by new_mark(label) beforehand, so that the
  /// caller knows it and can kill_running(mark) from another thread;
  /// empty = a fresh one from `label`.
  std::string mark;
  /// A folder where the run is recorded (written and synced before the
  /// command starts, removed when its last process is gone), so that
  /// recover_leftovers(record_folder) finds what survived a crash of this
  /// process; empty = none.
  std::string record_folder;
};

/// How a run ended.
struct run_result {
  /// The exit code, -1 when killed by a signal.
  int exit_code = -1;
  /// The terminating signal, 0 when it exited.
  int signal = 0;
  /// The timeout expired and the group was killed.
  bool timed_out = false;
  /// cancel() or kill() stopped it (or prevented its start).
  bool cancelled = false;
  /// From the start to the last process reaped.
  std::chrono::milliseconds duration{0};
  /// The last `tail_bytes` of the output.
  std::string tail;
  /// True when the output was longer than the tail.
  bool tail_truncated = false;
  /// The first `head_bytes` of the output.
  std::string head;
  /// The pid (= pgid) the command ran as; -1 when it never started.
  pid_t pid = -1;
  /// Exited with code 0, neither timed out nor cancelled.
  bool success() const {
    return exit_code == 0 && signal == 0 && !timed_out && !cancelled;
  }
  /// "exit 3", "signal 9 (Killed)", "timed out after 1000 ms", "cancelled".
  std::string describe() const;
};

/// Runs `opts.argv` to completion. Throws spawn_error when it cannot start
/// (missing program, bad directory, log file or record not writable).
run_result run(const run_options& opts);

} // namespace taskforce::proc
