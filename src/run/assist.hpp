// Assist mode's details, as plain file work: the task file's boxes
// (run.flipCheckboxes, run.detectCompletion "checkboxes") and the progress
// file (run.progressFile). The run is the only writer of both; the files
// are written where the repository's main checkout has them, and left
// uncommitted for the user, in either mode.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "src/taskfile/task.hpp"

namespace taskforce::run {

/// Why `progress_file` (run.progressFile, relative to the repository at
/// `root`, or absolute) cannot be written by a run: it leads (symlinks
/// followed) out of the repository, or into `.git` or `.taskforce`, or
/// names a folder. Empty when it can (or when it is empty: no progress
/// file). The repository-relative path goes to `relative` when given.
std::string check_progress_file(const std::filesystem::path& root,
                                const std::string& progress_file,
                                std::string* relative = nullptr);

/// One task's block in the progress file.
struct progress_entry {
  std::string run_id;
  std::string task_id;
  std::string title;
  /// "done", "failed", ...
  std::string state;
  /// The attempt that finished it.
  uint64_t attempt = 0;
  /// Why it is in its state (the worker's summary, the merge); may be empty.
  std::string reason;
  /// Milliseconds since the Unix epoch.
  int64_t time_ms = 0;
};

/// The block appended for `e`: a `## <id>: <title>` heading, then one
/// `- key: value` line each for the state, the time (UTC), the run, the
/// attempt and the reason, and a blank line.
std::string progress_block(const progress_entry& e);

/// Appends `block` to `file` (created, with its folders, when missing).
/// Throws std::runtime_error naming the file when it cannot.
void append_progress(const std::filesystem::path& file,
                     const std::string& block);

/// Checks `task`'s box in `file` as the file is now (a person's edits
/// meanwhile stay; only that box changes), replacing the file atomically.
/// True when the box is checked now (already, or by this call); false when
/// the box cannot be found. Throws std::runtime_error naming the file when
/// it cannot be read or written.
bool check_box_in_file(const std::filesystem::path& file,
                       const task_spec& task);

/// Whether `task`'s box in `file` is checked now; false when it is open,
/// cannot be found, or the file cannot be read.
bool box_checked_in_file(const std::filesystem::path& file,
                         const task_spec& task);

} // namespace taskforce::run
