// Driving a run from the command line: the shared core of `run`, `resume`
// and `demo`. Takes the run lock, recovers what a killed run left (stale git
// locks, a half-updated checkout, interrupted attempts), creates or loads
// the run in the ledger, starts the actors, shows the live table, handles
// Ctrl-C, and returns the exit status.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "src/config/config.hpp"

namespace taskforce::cli {

/// What to drive.
struct drive_options {
  /// The repository's top folder.
  std::filesystem::path root;
  /// The task file (as given); empty = resume the latest unfinished run.
  std::string file;
  /// The effective config (command-line overrides applied).
  config cfg;
  /// `--events FILE`; empty = none.
  std::string events_file;
  /// Force plain output (no live table) even on a terminal.
  bool plain = false;
};

/// Runs or resumes; returns the exit status (0 completed with every task
/// done, 1 paused/failed/aborted, 2 bad input). Throws usage_error for bad
/// input.
int drive_run(const drive_options& opts);

/// The `.taskforce` folder of a repository.
std::filesystem::path state_dir(const std::filesystem::path& root);

} // namespace taskforce::cli
