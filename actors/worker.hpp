// The worker: one per task attempt. It leases the task's worktree from the
// git service, runs the worker backend there (its own process group, the
// task's timeout), reads the report, checks that everything the attempt
// brings (its branch's commits and its working tree, or in place what
// changed since a snapshot) lies in the task's scope with HEAD where it
// belongs, runs the gate (its own process group, the verify timeout) and
// checks again after it, steers a failed gate back to the same backend up
// to `run.maxRepairs` times without counting an attempt, and reports one
// `attempt_outcome` to the orchestrator.
//
// It blocks on processes, so it runs detached. The orchestrator cancels it
// through the shared cancel handle, which kills the running process group
// at once; the worker then reports `interrupted`.
//
//   lease -> run backend -> report? -> scope check -> gate --pass--> scope check -> done
//               ^                                      |
//               +------------- repair (fail) ----------+--> failed
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include <caf/fwd.hpp>

#include "actors/orchestrator.hpp"
#include "messages/interfaces.hpp"
#include "src/config/config.hpp"
#include "src/proc/run.hpp"

namespace taskforce {

/// One attempt, as the worker gets it.
struct worker_job {
  /// The run.
  std::string run_id;
  /// The task (a copy: the orchestrator's may change meanwhile).
  run_task task;
  /// The attempt number (from the ledger).
  uint64_t attempt = 1;
  /// Start from a clean worktree.
  bool fresh = false;
  /// The effective run config.
  run_config cfg;
  /// The repository's top folder.
  std::filesystem::path root;
  /// The `taskforce` executable (for the scripted backend).
  std::string self_exe;
  /// The git service.
  git_actor git;
  /// Receives progress and the outcome.
  caf::actor orchestrator;
  /// Shared with the orchestrator: kills the running process group.
  proc::cancel_handle cancel;
};

/// Spawns the worker for `job` (detached).
caf::actor spawn_worker(caf::actor_system& sys, worker_job job);

/// How one round of a worker backend is started.
struct backend_call {
  /// The program and its arguments.
  std::vector<std::string> argv;
  /// Extra environment.
  std::vector<std::pair<std::string, std::string>> env;
  /// A file for standard input; empty = /dev/null.
  std::string stdin_file;
};

/// What one round of the backend needs beyond the job.
struct backend_round {
  /// `shell`, `scripted`, or `agent` (with `preset`).
  std::string backend;
  /// The agent preset's name.
  std::string preset;
  /// Where the backend runs.
  std::filesystem::path cwd;
  /// The attempt's log folder (the prompt file goes there).
  std::filesystem::path log_dir;
  /// 1-based: the how-many-th time the backend runs for this task.
  uint64_t invocation = 1;
  /// 0 on a first round; k on the k-th repair.
  uint64_t repair = 0;
  /// On a repair: how the gate ended, and its output's end.
  std::string gate_result;
  /// On a repair: the end of the gate's output.
  std::string gate_tail;
  /// On a retry: why the previous attempt failed.
  std::string previous_failure;
};

/// The command of one backend round (`sh -c run`, the scripted worker, or
/// the agent preset with the composed prompt). Throws std::runtime_error
/// when the backend cannot run the task.
backend_call backend_command(const worker_job& job, const backend_round& r);

/// Where the workers and gates of the repository at `root` are recorded
/// while they run (`.taskforce/procs/`, see proc::run_options).
std::filesystem::path worker_records(const std::filesystem::path& root);

/// Kills whatever the workers and gates of a killed driver of this
/// repository left running, in their groups or out of them, found by the
/// marks recorded before they started. Returns how many processes it
/// killed. Call it holding the run lock.
size_t kill_leftover_workers(const std::filesystem::path& root);

} // namespace taskforce
