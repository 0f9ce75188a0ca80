// What a run's scheduler starts from: its rules from the run config, and
// its view of the tasks from the ledger's states and the task file.
#pragma once

#include <string>
#include <vector>

#include "src/config/config.hpp"
#include "src/plan/graph.hpp"
#include "src/run/scheduler.hpp"

namespace taskforce {

/// The scheduler's rules for a run config: autoMerge false keeps passing
/// work for review (with worktrees); assist leaves it in the checkout. In
/// place (assist mode or no worktrees) the bound is the same: tasks run
/// together only with disjoint scopes, as everywhere.
run::rules rules_of(const run_config& cfg);

/// The scheduler's view of tasks as the ledger has them: `states` one per
/// task of `graph`, with the file's holds and the risks that need approval.
std::vector<run::task_record>
records_of(const plan::task_graph& graph, const std::vector<task_state>& states,
           const std::vector<std::string>& reasons);

} // namespace taskforce
