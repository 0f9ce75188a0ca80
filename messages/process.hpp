// The process family: what a process helper tells the worker that owns it
// about the one command it runs (actors/process.hpp). Only the sender tells
// which command a message is about.
#pragma once

#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>

#include "messages/type_ids.hpp"

namespace taskforce {

/// The command started, in its own process group.
struct proc_started {
  /// Its pid (= its process group).
  int64_t pid = -1;
  /// The mark its processes carry: proc::kill_running(mark) kills them.
  std::string mark;
};

/// How the command's output goes: at most one per interval.
struct proc_output {
  /// The end of the output so far (bounded).
  std::string tail;
};

/// The command ended (or never started: `error`).
struct proc_exited {
  /// The exit code, -1 when killed by a signal or never started.
  int64_t exit_code = -1;
  /// The terminating signal, 0 when it exited.
  int32_t signal = 0;
  /// The timeout expired and the group was killed.
  bool timed_out = false;
  /// From the start to the last process reaped.
  int64_t duration_ms = 0;
  /// The start of the output (see run_options::head_bytes).
  std::string head;
  /// The end of the output.
  std::string tail;
  /// Why it could not start (a missing program, an unwritable log); empty
  /// when it ran.
  std::string error;
  /// "exit 3", "signal 9 (Killed)", "timed out after 1000 ms", or the error.
  std::string description;

  /// Exited with code 0, neither timed out nor failed to start.
  bool success() const {
    return error.empty() && exit_code == 0 && signal == 0 && !timed_out;
  }
};

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, proc_started& x) {
  return f(caf::meta::type_name("taskforce.proc_started"), x.pid, x.mark);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, proc_output& x) {
  return f(caf::meta::type_name("taskforce.proc_output"), x.tail);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, proc_exited& x) {
  return f(caf::meta::type_name("taskforce.proc_exited"), x.exit_code, x.signal,
           x.timed_out, x.duration_ms, x.head, x.tail, x.error, x.description);
}

inline bool operator==(const proc_started& x, const proc_started& y) {
  return x.pid == y.pid && x.mark == y.mark;
}

inline bool operator==(const proc_output& x, const proc_output& y) {
  return x.tail == y.tail;
}

inline bool operator==(const proc_exited& x, const proc_exited& y) {
  return x.exit_code == y.exit_code && x.signal == y.signal
         && x.timed_out == y.timed_out && x.head == y.head && x.tail == y.tail
         && x.error == y.error && x.description == y.description;
}

} // namespace taskforce
