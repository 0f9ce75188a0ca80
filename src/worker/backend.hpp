// The worker backends as commands: what the worker actor runs in a worktree
// for one turn of a task (start, repair, answer, message), whichever backend
// the task uses. Pure: nothing is started or written here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/report/report.hpp"
#include "src/worker/agent_preset.hpp"
#include "src/worker/turn.hpp"

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
  /// The model the attempt runs on, as route_model chose it
  /// (src/worker/model_route.hpp); empty = the agent's own default.
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
  /// `run.workerInstructions`.
  std::string instructions;
  /// The contents of `run.workerInstructionsFile`.
  std::string instructions_file_text;
  /// `run.workerSkills`.
  std::vector<std::string> skills;
  /// Include the worker contract in prompts (`run.workerContract`:
  /// generic).
  bool contract = true;
};

/// One turn of a worker, as a command.
struct worker_round {
  /// Who it runs for: the environment of the turn.
  turn_context context;
  /// The worktree (working directory).
  std::string worktree;
  /// For `scripted`: the k-th time the worker runs for this task, across
  /// attempts and turns (1-based).
  uint64_t invocation = 1;
  /// The turn and what it says.
  turn_input turn;
  /// On a retry: why the previous attempt failed.
  std::string previous_failure;
  /// For `agent`: where the prompt goes, outside the worktree (the
  /// attempt's log folder).
  std::string prompt_file;
  /// For `shell` and `scripted`: where the turn's text goes (it is their
  /// standard input), outside the worktree.
  std::string turn_file;
  /// For `agent`: the session the task's agent had so far ("" = none).
  std::string session;
  /// The attempt runs in a checkout of its own (a worktree), so a CLI that
  /// continues the last session of its directory finds the task's own.
  bool own_directory = true;
  /// Start a fresh session even when the turn could continue one (an
  /// earlier try to continue failed).
  bool fresh_session = false;
  /// A new UUID, for a preset whose sessions taskforce names.
  std::string new_session;
};

/// A round ready to run.
struct worker_command {
  /// The program and its arguments.
  std::vector<std::string> argv;
  /// Variables to set: the turn's environment, then the preset's.
  std::vector<std::pair<std::string, std::string>> env;
  /// Standard input; empty = /dev/null.
  std::string stdin_file;
  /// Files to write before it runs: the prompt, the turn's text.
  std::vector<std::pair<std::string, std::string>> inputs;
  /// For `agent`: the session the turn runs in, when known before it runs
  /// (a new UUID, the one it continues, or its directory for a preset that
  /// continues by directory); "" = read it from the output (find_session)
  /// or none.
  std::string session;
  /// For `agent`: the turn continues the session with the preset's
  /// `continue` argv and only the turn's text as its prompt.
  bool continues = false;
};

/// `sh -c COMMAND`, for `run:` and `verify:`.
std::vector<std::string> shell_argv(const std::string& command);

/// Builds the command of one turn. A shell or scripted worker reads the
/// turn's text (if any) on standard input. An agent continues its session
/// when the turn is not a start, the preset can continue and the session
/// is known (by directory: only in a checkout of its own), with only the
/// turn's text as its prompt; otherwise it starts a fresh session with the
/// whole prompt and the turn's text. Throws std::invalid_argument when the
/// backend lacks what it needs (a shell task without `run:`, no script, no
/// preset) and preset_error when the preset cannot be expanded.
worker_command prepare_worker_command(worker_backend backend,
                                      const worker_settings& settings,
                                      const worker_task& task,
                                      const worker_round& round);

} // namespace taskforce
