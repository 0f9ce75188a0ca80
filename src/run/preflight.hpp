// The checks before anything starts: mistakes a run would otherwise meet
// only mid-way, after worktrees were made and attempts used up (a shell
// task without `run:`, an unknown agent preset, an agent program that is
// not installed). `run` refuses a file with any of them (exit 2, nothing
// created); `plan` shows them, refusing only those that are wrong wherever
// the file is planned.
//
// Reads preset files and looks programs up on PATH; starts nothing.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "src/config/config.hpp"
#include "src/taskfile/task.hpp"

namespace taskforce::run {

/// One mistake the checks found.
struct preflight_finding {
  /// The line of the task file it is written on; 0 = the file as a whole
  /// (a config key, such as the verifier's preset).
  size_t line = 0;
  std::string message;
  /// Wrong wherever the file is planned (an unknown or broken preset):
  /// `plan` refuses it too. Otherwise (a shell task without `run:`, a
  /// program not installed here) it depends on the worker or the machine
  /// the file is run with, and `plan` only warns.
  bool certain = false;
};

/// What the checks need besides the tasks.
struct preflight_context {
  /// The effective `run` section (command-line overrides applied).
  run_config cfg;
  /// The repository's top folder: its `.taskforce/agents/` presets, and
  /// where a relative program path is looked up.
  std::string root;
  /// The PATH agent programs are looked up in (the run's own).
  std::string path_env;
};

/// Checks the tasks that would run (done ones are skipped) and the
/// verifier. Findings come in line order.
std::vector<preflight_finding> preflight(const std::vector<task_spec>& tasks,
                                         const preflight_context& ctx);

/// The PATH of this process, or the system's default when it has none.
std::string current_path();

} // namespace taskforce::run
