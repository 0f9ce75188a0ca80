// The `scripted` worker: a JSON script says what a worker does for each
// task, so tests and the demo exercise every path without a model. It runs
// as a real process (`taskforce scripted-worker --script FILE --task ID
// --invocation N`, in the worktree), so timeouts, kills and crashes are real.
//
//   {
//     "tasks": {
//       "t1": [
//         {"write": {"src/a.txt": "first try\n"}, "report": {"status":
//         "done"}},
//         {"write": {"src/a.txt": "fixed\n"}, "marker": "done"}
//       ],
//       "t2": [{"sleep_ms": 100, "hang": true, "hang_children": 1}]
//     },
//     "default": [{"marker": "done"}]
//   }
//
// Invocation k of a task (1-based: the k-th time the worker runs for it,
// across attempts and repairs) performs entry k of its list; the last entry
// repeats. A task without an entry uses "default"; without either the worker
// fails (exit 2, saying so). An entry's steps, all optional, run in this
// order:
//   write {path: text}, append {path: text}, delete [path]   (relative,
//       inside the working directory)
//   print "text" (stdout), stderr "text"
//   sleep_ms N
//   report {...} (printed as a fenced json block), marker "done"|"blocked"
//       with reason "..." (printed as "[task:blocked] reason")
//   crash true (abort: SIGABRT, no core file)
//   hang true: ignore SIGTERM and never exit; hang_children N starts N
//       children that do the same, escape_group true puts them in a new
//       session (out of the process group)
//   exit N (default 0)
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace taskforce {

/// A refused script: names the file, the key path and the rule.
class script_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One invocation of the scripted worker.
struct script_step {
  /// Files to create or replace: path -> content.
  std::vector<std::pair<std::string, std::string>> write;
  /// Files to append to: path -> content.
  std::vector<std::pair<std::string, std::string>> append;
  /// Files to delete.
  std::vector<std::string> remove;
  /// Text for standard output.
  std::string print;
  /// Text for standard error.
  std::string print_stderr;
  /// How long to sleep.
  uint64_t sleep_ms = 0;
  /// A report printed as a fenced json block (serialized JSON text).
  std::string report_json;
  /// "done" or "blocked": printed as a marker line.
  std::string marker;
  /// The text after the marker.
  std::string reason;
  /// Abort.
  bool crash = false;
  /// Ignore SIGTERM and never exit.
  bool hang = false;
  /// Hanging children to start first.
  uint64_t hang_children = 0;
  /// The children leave the process group (setsid).
  bool escape_group = false;
  /// The exit code.
  int exit_code = 0;
};

/// A validated script.
struct worker_script {
  /// Task id -> its invocations.
  std::map<std::string, std::vector<script_step>> tasks;
  /// For tasks without an entry; empty = none.
  std::vector<script_step> fallback;
  /// The step for invocation `n` (1-based) of `task`; nullptr when the
  /// script has nothing for it.
  const script_step* step_for(const std::string& task, uint64_t n) const;
};

/// Parses and validates script JSON; `origin` names it in errors. Throws
/// script_error.
worker_script parse_worker_script(const std::string& text,
                                  const std::string& origin);

/// Reads and validates a script file. Throws script_error.
worker_script load_worker_script(const std::string& path);

/// The command that runs invocation `n` of `task`: `binary` is the
/// taskforce executable (the one running, or TASKFORCE_BINARY in tests).
std::vector<std::string> scripted_worker_argv(const std::string& binary,
                                              const std::string& script,
                                              const std::string& task,
                                              uint64_t invocation);

/// The path of the running executable (/proc/self/exe); "taskforce" when
/// it cannot be read.
std::string current_executable();

/// Performs `step` in the current directory, as the scripted-worker
/// subcommand does; returns the exit code (unless it hangs or crashes).
/// `self` is the executable to start hanging children with.
int perform_script_step(const script_step& step, const std::string& self);

/// The hidden child mode: ignore SIGTERM, optionally leave the group, and
/// sleep forever.
[[noreturn]] void hang_forever(bool escape_group);

} // namespace taskforce
