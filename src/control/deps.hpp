// Dependencies between managed background tasks, as pure functions over
// the graph and the prerequisites' states: cycles, and whether a task may
// start, must wait, or is blocked by a prerequisite that failed or was
// cancelled.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/control/bg_state.hpp"

namespace taskforce::control {

/// Task id → the ids of its prerequisites.
using dependency_graph = std::map<std::string, std::vector<std::string>>;

/// A cycle through `graph`, as the ids along it with the first repeated at
/// the end (["a", "b", "a"]); nullopt when there is none.
std::optional<std::vector<std::string>>
find_cycle(const dependency_graph& graph);

/// Where a task stands with its prerequisites.
struct dependency_status {
  /// Every prerequisite is done.
  bool ready = true;
  /// Prerequisites not done yet (and not failed or cancelled), in the order
  /// given.
  std::vector<std::string> pending;
  /// The first prerequisite that failed or was cancelled, with its state.
  std::optional<std::pair<std::string, bg_state>> blocker;

  /// "dependency bg-1 is failed" when blocked; empty otherwise.
  std::string reason() const;
};

/// The status given the prerequisites and their states, in order.
dependency_status
status_of(const std::vector<std::pair<std::string, bg_state>>& prerequisites);

} // namespace taskforce::control
