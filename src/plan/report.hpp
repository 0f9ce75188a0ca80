// `taskforce plan`'s output: the plan JSON object and the human table.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/plan/graph.hpp"
#include "src/taskfile/parse.hpp"

namespace taskforce::plan {

/// A parsed file with its schedule (empty when there are errors).
struct plan_result {
  /// The parsed tasks (those are in `graph`) and the errors.
  std::vector<taskfile::parse_error> errors;
  /// Present when the file parsed cleanly.
  std::optional<task_graph> graph;
  /// Conflicting pairs (positions), earlier first, in task order.
  std::vector<std::pair<size_t, size_t>> conflicts;
  /// The simulated waves (positions).
  std::vector<std::vector<size_t>> waves;
};

/// Builds the graph, its conflicts and waves from a parse result.
plan_result make_plan(taskfile::parse_result parsed, size_t max_concurrency);

/// The `--json` object: tasks, conflicts, waves, errors.
std::string plan_json(const plan_result& plan);

/// The human report: a table fitting `width` columns, the conflicts, the
/// waves and a summary line.
std::string plan_text(const plan_result& plan, size_t width);

} // namespace taskforce::plan
