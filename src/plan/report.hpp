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
  /// What is probably not meant as it reads, and mistakes that depend on
  /// where the file is run (a missing `run:`, a program not installed).
  std::vector<taskfile::parse_error> warnings;
  /// Conflicting pairs (positions), earlier first, in task order; learned
  /// ones included.
  std::vector<std::pair<size_t, size_t>> conflicts;
  /// The pairs of `conflicts` that only co-change learning made.
  std::vector<std::pair<size_t, size_t>> learned;
  /// The simulated waves (positions).
  std::vector<std::vector<size_t>> waves;
};

/// Builds the graph, its conflicts and waves from a parse result (its
/// warnings kept), with the learned co-change pairs of `opts`.
plan_result make_plan(taskfile::parse_result parsed, size_t max_concurrency,
                      const graph_options& opts = {});

/// The `--json` object: tasks, conflicts, waves, errors, warnings.
std::string plan_json(const plan_result& plan);

/// The human report: a table fitting `width` columns, the conflicts (the
/// learned ones apart), the waves and a summary line.
std::string plan_text(const plan_result& plan, size_t width);

} // namespace taskforce::plan
