// One request to the control plane (managed background tasks and monitors),
// as the protocol's `bg.*` and `monitor.*` operations and the `taskforce bg`
// and `taskforce monitor` commands carry it. Pure data: decoded from a
// protocol line by wire.hpp, handled by a control service in the server or,
// when no server runs, in the command itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskforce::control {

/// The operations, by their protocol names.
enum class control_op : uint8_t {
  bg_prepare,
  bg_link,
  bg_start,
  bg_status,
  bg_may_write,
  bg_complete,
  bg_continue,
  bg_cancel,
  bg_reconcile,
  monitor_run,
  monitor_status,
  monitor_read,
  monitor_wait,
  monitor_kill,
};

/// The protocol name ("bg.prepare", "monitor.run", …).
const char* to_string(control_op op);

/// The operation named `name`; nullopt when there is none.
std::optional<control_op> control_op_named(std::string_view name);

/// Every operation's name, comma-separated (for "unknown op" messages).
const std::string& control_op_names();

/// Whether `op` concerns monitors.
inline bool is_monitor_op(control_op op) {
  return op >= control_op::monitor_run;
}

/// The fields of every operation; each uses its own (wire.hpp says which).
struct control_request {
  control_op op = control_op::bg_status;

  // -- bg.prepare: the task contract ------------------------------------------
  std::string title;
  std::string agent;
  std::string prompt;
  /// The orchestrating session that prepares the task.
  std::string session;
  std::vector<std::string> roots;
  std::vector<std::string> locks;
  std::vector<std::string> deps;
  std::vector<std::string> validations;

  // -- the other bg.* operations ----------------------------------------------
  /// The task (bg.start: optional; bg.status: optional = all).
  std::string task;
  /// bg.link: the dispatch or continuation token.
  std::string token;
  /// bg.link, bg.may_write: the harness's child session.
  std::string child_session;
  /// bg.may_write: the path the child wants to write.
  std::string path;
  /// bg.complete: `done` or `blocked`.
  std::string status;
  /// bg.complete: the child's result; bg.continue: the continuation text.
  std::string text;
  /// bg.complete: the files the child says it changed.
  std::vector<std::string> files;
  /// bg.reconcile: the child sessions the harness knows to be alive.
  std::vector<std::string> sessions;

  // -- monitor.*
  // ----------------------------------------------------------------
  /// monitor.status (optional = all), read, wait, kill.
  std::string monitor;
  /// monitor.run: the shell command.
  std::string command;
  /// monitor.run: its working folder, inside the repository ("" = the top).
  std::string cwd;
  /// monitor.run: a regular expression whose first match in the output
  /// wakes a monitor.wait.
  std::string wake_pattern;
  /// monitor.run: the command's limit; monitor.wait: how long to wait
  /// (0 = the default).
  uint64_t timeout_ms = 0;
  /// monitor.read: where to start in the output.
  uint64_t offset = 0;
  /// monitor.read: at most this many bytes (0 = control.maxOutputBytes).
  uint64_t max_bytes = 0;
};

} // namespace taskforce::control
