// The worker backends as commands: what the worker actor runs in a worktree
// for one round (a first run or a repair) of a task, whichever backend the
// task uses. Pure: nothing is started or written here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/report/report.hpp"
#include "src/worker/agent_preset.hpp"

namespace taskforce {

/// Which backend (and, for `agent`, which preset) a task runs with.
struct backend_choice {
  /// shell, agent or scripted.
  worker_backend backend = worker_backend::shell;
  /// The preset name, for `agent`.
  std::string preset;
};

/// Resolves a task's `agent:` against `run.worker` and `run.agentPreset`:
/// empty keeps the run's backend; "shell", "agent" or "scripted" picks that
/// backend; any other value is a preset name for the `agent` backend.
/// Throws std::invalid_argument when `run_worker` is no backend name.
backend_choice choose_backend(const std::string& task_agent,
                              const std::string& run_worker,
                              const std::string& run_agent_preset);

/// What a backend needs to know about the task.
struct worker_task {
  /// The task id.
  std::string id;
  /// The title.
  std::string title;
  /// The body.
  std::string body;
  /// The declared write scope.
  std::vector<std::string> files;
  /// The `run:` command (shell backend).
  std::string run;
  /// The gate command, mentioned in the prompt.
  std::string verify;
  /// The task's `model:`; empty = the run's.
  std::string model;
};

/// The run-wide settings of the backends.
struct worker_settings {
  /// The taskforce executable that runs `scripted-worker`.
  std::string taskforce_binary;
  /// The script of the `scripted` backend, absolute.
  std::string script_file;
  /// The loaded preset, for `agent`.
  std::optional<agent_preset> preset;
  /// `run.workerModel`.
  std::string model;
  /// `run.workerInstructions`.
  std::string instructions;
  /// The contents of `run.workerInstructionsFile`.
  std::string instructions_file_text;
  /// Include the worker contract in prompts.
  bool contract = true;
};

/// One round of a worker.
struct worker_round {
  /// The worktree (working directory).
  std::string worktree;
  /// For `scripted`: the k-th time the worker runs for this task, across
  /// attempts and repairs (1-based).
  uint64_t invocation = 1;
  /// 0 on a first run, k on the k-th repair.
  int repair_round = 0;
  /// On a repair: how the gate ended.
  std::string gate_result;
  /// On a repair: the end of the gate's output.
  std::string gate_tail;
  /// On a retry: why the previous attempt failed.
  std::string previous_failure;
  /// For `agent`: where the prompt file goes, outside the worktree (the
  /// attempt's log folder).
  std::string prompt_file;
};

/// A round ready to run.
struct worker_command {
  /// The program and its arguments.
  std::vector<std::string> argv;
  /// Variables to set.
  std::vector<std::pair<std::string, std::string>> env;
  /// Standard input; empty = /dev/null.
  std::string stdin_file;
  /// For `agent`: the prompt; write it to the round's prompt_file before
  /// running.
  std::string prompt;
};

/// `sh -c COMMAND`, for `run:` and `verify:`.
std::vector<std::string> shell_argv(const std::string& command);

/// Builds the command of one round. Throws std::invalid_argument when the
/// backend lacks what it needs (a shell task without `run:`, no script, no
/// preset) and preset_error when the preset cannot be expanded.
worker_command prepare_worker_command(worker_backend backend,
                                      const worker_settings& settings,
                                      const worker_task& task,
                                      const worker_round& round);

} // namespace taskforce
