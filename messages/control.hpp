// The control family: what the monitors actor (actors/monitor.hpp) answers
// about monitored processes, and the error codes of the control plane. A
// monitor is named by its id ("mon-1"); its state is a name of
// control::monitor_state ("running", "done", "killed", "timeout", "failed",
// "unavailable").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/message.hpp>
#include <caf/meta/type_name.hpp>

#include "messages/type_ids.hpp"

namespace taskforce {

/// Why the control plane refused a request, as a CAF error carries it;
/// never 0. The wire form of control::control_error's codes (matched by
/// name, see from_string), plus `io`. Each maps one-to-one onto the
/// protocol's `error.code` string (see to_string).
enum class control_errc : uint8_t {
  /// A field is missing or invalid (a command, a cwd outside the
  /// repository, a wake pattern that does not compile).
  bad_request = 1,
  /// No such task or monitor.
  not_found,
  /// The request does not apply in the current state.
  invalid_state,
  /// A one-use token was used already.
  token_used,
  /// A token's time ran out.
  token_expired,
  /// Write roots or locks overlap those of live work.
  conflict,
  /// A configured limit (control.maxMonitors) is reached.
  limit,
  /// The thing exists but cannot be controlled from here (a monitor left
  /// running by a server that stopped uncleanly).
  unavailable,
  /// The ledger or the file system failed.
  io,
};

/// The protocol's name of a control error code, e.g. "unavailable".
inline const char* to_string(control_errc x) {
  switch (x) {
    case control_errc::bad_request: return "bad_request";
    case control_errc::not_found: return "not_found";
    case control_errc::invalid_state: return "invalid_state";
    case control_errc::token_used: return "token_used";
    case control_errc::token_expired: return "token_expired";
    case control_errc::conflict: return "conflict";
    case control_errc::limit: return "limit";
    case control_errc::unavailable: return "unavailable";
    case control_errc::io: return "io";
  }
  return "unknown";
}

/// Parses a code name (to_string of control::control_errc); false when
/// unknown.
inline bool from_string(const std::string& name, control_errc& out) {
  for (auto x :
       {control_errc::bad_request, control_errc::not_found,
        control_errc::invalid_state, control_errc::token_used,
        control_errc::token_expired, control_errc::conflict,
        control_errc::limit, control_errc::unavailable, control_errc::io})
    if (name == to_string(x)) {
      out = x;
      return true;
    }
  return false;
}

/// The category name of control errors.
constexpr char control_errc_category[] = "control";

/// What `monitor.run` asks for.
struct monitor_spec {
  /// A shell command line (run by /bin/sh -c).
  std::string command;
  /// Where it runs: repository-relative or absolute inside the repository;
  /// empty = the repository's top folder.
  std::string cwd;
  /// An ECMAScript regular expression searched in the output; empty = none.
  std::string wake_pattern;
  /// The wall-clock limit; 0 = none.
  int64_t timeout_ms = 0;
  /// The session that asked (for events); may be empty.
  std::string session;
};

/// A monitor as the answers show it.
struct monitor_info {
  std::string id;
  std::string command;
  /// Repository-relative ("." for the top folder).
  std::string cwd;
  std::string wake_pattern;
  int64_t timeout_ms = 0;
  std::string session;
  /// running, done, killed, timeout, failed, unavailable.
  std::string state;
  /// The exit code once it exited; -1 otherwise (running, killed by a
  /// signal, never started).
  int64_t exit_code = -1;
  /// Its pid (= its process group); -1 before the start.
  int64_t pid = -1;
  /// Whether a process of it may still be running under control of a live
  /// owner (false for unavailable and ended monitors).
  bool live = false;
  /// The wake pattern matched the output.
  bool ready = false;
  /// The log file with all of its output (derived from the id).
  std::string log_file;
  /// Why it failed or could not be controlled; empty when nothing to say.
  std::string reason;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
};

/// A piece of a monitor's output, read from its log file.
struct monitor_output {
  std::string id;
  /// Where the piece starts in the log (bytes).
  int64_t offset = 0;
  /// Where the next read continues.
  int64_t next_offset = 0;
  /// The log's size when read.
  int64_t size = 0;
  /// The bytes, at most control.maxOutputBytes.
  std::string data;
  /// The monitor ended and everything was read.
  bool eof = false;
};

/// Why a wait ended, with the monitor as it stands then.
struct monitor_wait_result {
  /// "exit" (it ended), "ready" (the wake pattern matched), "timeout" (the
  /// wait's time ran out), "unavailable" (nothing to wait for).
  std::string reason;
  monitor_info monitor;
};

/// What subscribers of the monitors actor hear.
struct monitor_event {
  /// "changed" (started, ended, became unavailable) or "ready".
  std::string kind;
  monitor_info monitor;
};

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, monitor_spec& x) {
  return f(caf::meta::type_name("taskforce.monitor_spec"), x.command, x.cwd,
           x.wake_pattern, x.timeout_ms, x.session);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, monitor_info& x) {
  return f(caf::meta::type_name("taskforce.monitor_info"), x.id, x.command,
           x.cwd, x.wake_pattern, x.timeout_ms, x.session, x.state, x.exit_code,
           x.pid, x.live, x.ready, x.log_file, x.reason, x.created_ms,
           x.updated_ms);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, monitor_output& x) {
  return f(caf::meta::type_name("taskforce.monitor_output"), x.id, x.offset,
           x.next_offset, x.size, x.data, x.eof);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, monitor_wait_result& x) {
  return f(caf::meta::type_name("taskforce.monitor_wait_result"), x.reason,
           x.monitor);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, monitor_event& x) {
  return f(caf::meta::type_name("taskforce.monitor_event"), x.kind, x.monitor);
}

inline bool operator==(const monitor_spec& x, const monitor_spec& y) {
  return x.command == y.command && x.cwd == y.cwd
         && x.wake_pattern == y.wake_pattern && x.timeout_ms == y.timeout_ms
         && x.session == y.session;
}

inline bool operator==(const monitor_info& x, const monitor_info& y) {
  return x.id == y.id && x.command == y.command && x.cwd == y.cwd
         && x.wake_pattern == y.wake_pattern && x.timeout_ms == y.timeout_ms
         && x.session == y.session && x.state == y.state
         && x.exit_code == y.exit_code && x.pid == y.pid && x.live == y.live
         && x.ready == y.ready && x.log_file == y.log_file
         && x.reason == y.reason && x.created_ms == y.created_ms
         && x.updated_ms == y.updated_ms;
}

inline bool operator==(const monitor_output& x, const monitor_output& y) {
  return x.id == y.id && x.offset == y.offset && x.next_offset == y.next_offset
         && x.size == y.size && x.data == y.data && x.eof == y.eof;
}

inline bool operator==(const monitor_wait_result& x,
                       const monitor_wait_result& y) {
  return x.reason == y.reason && x.monitor == y.monitor;
}

inline bool operator==(const monitor_event& x, const monitor_event& y) {
  return x.kind == y.kind && x.monitor == y.monitor;
}

} // namespace taskforce

CAF_ERROR_CODE_ENUM(taskforce::control_errc, "control")
