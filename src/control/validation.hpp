// The validations of a managed task's completion gate: shell commands run
// one after the other in the repository, each in its own process group
// under proc::run (a wall-clock limit whose SIGTERM → SIGKILL escalation
// reaches descendants that ignore SIGTERM or left the group), stopping at
// the first that does not succeed. Each command's output is kept whole in
// a log file and returned capped.
//
// Blocks its thread for as long as the commands run: call it from a
// detached actor or a plain thread. Abort from another thread through the
// cancel handle.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "src/proc/run.hpp"

namespace taskforce::control {

/// How one validation command ended.
enum class validation_status : uint8_t {
  /// Exit code 0.
  success,
  /// A non-zero exit, a signal, or it could not start.
  failure,
  /// The time limit killed it.
  timeout,
  /// The cancel handle stopped it (or it never started because of it).
  aborted,
};

/// The lowercase name ("success", "failure", "timeout", "aborted").
const char* to_string(validation_status x);

/// One command's result.
struct validation_result {
  /// The command as given.
  std::string command;
  validation_status status = validation_status::failure;
  /// The exit code; -1 when killed by a signal or never started.
  int exit_code = -1;
  /// From the start to the last process reaped.
  int64_t duration_ms = 0;
  /// The end of the output, at most `max_output_bytes`.
  std::string output;
  /// The output was longer than what `output` carries.
  bool output_truncated = false;
  /// The log file with all of the output (absolute).
  std::string log_file;
  /// "exit 7", "timed out after 30 ms", "cancelled", or why it could not
  /// start.
  std::string description;
};

/// What a run of validations was told.
struct validation_options {
  /// The repository's top folder.
  std::filesystem::path repository;
  /// The task they validate: logs go to
  /// `.taskforce/logs/bg/<task>/validation-<n>.log`, n counting on from
  /// the task's earlier logs (nothing is overwritten).
  std::string task_id;
  /// Where the commands run (see resolve_cwd); empty = the top folder.
  std::string cwd;
  /// Each command's wall-clock limit (control.validationTimeoutMs); zero =
  /// none.
  std::chrono::milliseconds timeout{600000};
  /// Between SIGTERM and SIGKILL on a timeout or abort.
  std::chrono::milliseconds kill_grace{2000};
  /// How much output a result carries (control.maxOutputBytes).
  size_t max_output_bytes = 65536;
  /// Aborts the run from another thread: the running command's group is
  /// stopped and no further command starts.
  proc::cancel_handle cancel;
};

/// The results of one run of validations.
struct validation_report {
  /// One per command that ran (or was stopped), in order; the last is the
  /// first that did not succeed, if any.
  std::vector<validation_result> results;

  /// Every command succeeded (also true for no commands).
  bool passed() const;
  /// Empty when passed; else "validation 2 of 3 (`make test`) failed: exit
  /// 7" and the like.
  std::string reason() const;
  /// The output end of the command that did not succeed; empty when passed.
  std::string tail() const;
};

/// Runs `commands` (each by /bin/sh -c) in order as described above.
/// Throws control::control_error (bad_request) when the cwd is refused;
/// a command that cannot start is a failure, not an exception.
validation_report run_validations(const std::vector<std::string>& commands,
                                  const validation_options& opts);

/// The folder `cwd` names, resolved physically (symlinks followed) inside
/// the repository whose top is `repository`: repository-relative or
/// absolute; empty or "." = the top. Throws control::control_error
/// (bad_request, "cwd \"../x\" must be inside the repository: …") when it
/// leads outside (also through a symlink), into .git or .taskforce, or is
/// not an existing folder.
std::filesystem::path resolve_cwd(const std::filesystem::path& repository,
                                  std::string_view cwd);

/// `dir` relative to the repository's (physical) top, "." for the top.
std::string repository_relative(const std::filesystem::path& repository,
                                const std::filesystem::path& dir);

} // namespace taskforce::control
