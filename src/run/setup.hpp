// What a run's scheduler starts from: its rules from the run config, its
// view of the tasks from the ledger's states and the task file, and what
// the orchestrator remembers of each task besides its state. Pure: shared
// by the run layer (src/run/run_setup.hpp) and the orchestrator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/config/config.hpp"
#include "src/plan/graph.hpp"
#include "src/run/scheduler.hpp"

namespace taskforce::run {

/// What the orchestrator remembers of a task besides its state (which the
/// scheduler owns): loaded from the ledger, updated by attempts.
struct task_memory {
  std::string worktree;
  std::string branch;
  std::string merge_commit;
  std::string session;
  std::string previous_failure;
  /// Backend runs so far (turns of every attempt, repairs included).
  uint64_t invocations = 0;
  /// The latest attempt number the ledger gave the task.
  uint64_t attempt = 0;
  /// A person's answer waiting for the task's next attempt.
  std::string answer;
  /// Failed attempts of the task in this run (across resumes): which
  /// fallback model the next attempt runs on.
  uint64_t failed = 0;
  /// The model its latest attempt was started on ("" = the agent's own
  /// default, or no agent).
  std::string model;
  /// The gate failed on the merge result: how, and the end of its output,
  /// for the repair the task's next attempt starts with.
  std::string merge_gate_result;
  std::string merge_gate_tail;
};

/// The scheduler's rules for a run config: autoMerge false keeps passing
/// work for review (with worktrees); assist leaves it in the checkout. In
/// place (assist mode or no worktrees) the bound is the same: tasks run
/// together only with disjoint scopes, as everywhere.
rules rules_of(const run_config& cfg);

/// The scheduler's view of tasks as the ledger has them: `states` and
/// `reasons` one per task of `graph` (or fewer: pending, no reason), with
/// the file's holds (except where `hold_lifted` says a person lifted one)
/// and the risks that need approval.
std::vector<task_record> records_of(const plan::task_graph& graph,
                                    const std::vector<task_state>& states,
                                    const std::vector<std::string>& reasons,
                                    const std::vector<bool>& hold_lifted = {});

} // namespace taskforce::run
