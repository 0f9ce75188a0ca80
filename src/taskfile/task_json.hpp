// A task in the plan JSON's shape (`taskforce plan --json`).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "src/taskfile/task.hpp"

namespace taskforce::taskfile {

/// The task as one object of the plan's `tasks` array: id, index, line,
/// title, done, deps, files, locks, priority, verify, run, agent, model,
/// risk, timeout_ms, held, hold_reason (absent values are null), in
/// that order.
nlohmann::ordered_json task_to_json(const task_spec& task);

} // namespace taskforce::taskfile
