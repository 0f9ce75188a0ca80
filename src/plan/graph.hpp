// The task graph: dependency edges, conflicts and the order of ready tasks.
//
// Two not-done tasks conflict (may never run at once) when their files
// intersect, when they share a lock, or when either declares no files.
// Conflicts are found through an index (a trie of path segments holding
// literal paths and the literal base of each glob), so only entries that
// can share a path are compared: near-linear for the usual scopes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/taskfile/task.hpp"

namespace taskforce::plan {

/// Extra inputs to conflict detection.
struct graph_options {
  /// Learned co-change file pairs: a task whose scope covers one and a task
  /// whose scope covers the other conflict.
  std::vector<std::pair<std::string, std::string>> co_change;
};

/// Tasks (validated: every dep resolves) with their edges and conflicts.
class task_graph {
 public:
  /// Builds the graph; tasks must be in file order with `index` 1..n.
  explicit task_graph(std::vector<task_spec> tasks,
                      const graph_options& opts = {});

  /// The number of tasks.
  size_t size() const {
    return tasks_.size();
  }

  /// Task `i` (0-based position).
  const task_spec& task(size_t i) const {
    return tasks_[i];
  }

  /// All tasks in file order.
  const std::vector<task_spec>& tasks() const {
    return tasks_;
  }

  /// The extra inputs it was built with (to build it again with more
  /// tasks).
  const graph_options& options() const {
    return options_;
  }

  /// The position of the task with `id`.
  std::optional<size_t> find(std::string_view id) const;

  /// Positions of the tasks `i` depends on, in the order written.
  const std::vector<size_t>& deps(size_t i) const {
    return deps_[i];
  }

  /// Positions of the tasks that depend on `i`, ascending.
  const std::vector<size_t>& dependents(size_t i) const {
    return dependents_[i];
  }

  /// Whether tasks `a` and `b` may never run at the same time. Done tasks
  /// conflict with nothing; a task never conflicts with itself.
  bool conflict(size_t a, size_t b) const;

  /// Every conflicting pair once, earlier task first, pairs in task order.
  std::vector<std::pair<size_t, size_t>> conflict_pairs() const;

  /// The scheduling order: higher priority first, then file order.
  bool before(size_t a, size_t b) const;

  /// Tasks that could start now, in scheduling order: not done, not
  /// `finished`, not `running`, every dep done or finished, and conflicting
  /// with no running task. (They may conflict with each other; `pick`
  /// chooses a compatible set.) Both vectors have size() entries.
  std::vector<size_t> ready(const std::vector<bool>& finished,
                            const std::vector<bool>& running) const;

  /// Greedily chooses up to `slots` ready tasks that conflict neither with
  /// the running ones nor with each other, in scheduling order.
  std::vector<size_t> pick(const std::vector<bool>& finished,
                           const std::vector<bool>& running,
                           size_t slots) const;

  /// The choice itself: walks `candidates` (positions, in scheduling order)
  /// and takes up to `slots` that conflict neither with `occupied` nor with
  /// each other; a task without files is taken alone. Stops reading
  /// candidates once the slots are full, so the run's scheduler can hand it
  /// its whole ready set.
  template<class Candidates, class Occupied>
  std::vector<size_t> pick(const Candidates& candidates,
                           const Occupied& occupied, size_t slots) const {
    std::vector<size_t> chosen;
    if (slots == 0)
      return chosen;
    for (size_t c : occupied)
      if (no_files_[c])
        return chosen; // a task without files excludes everything
    for (size_t c : candidates) {
      auto clashes = [&](size_t other) {
        return conflict(c, other);
      };
      bool taken = false;
      for (size_t o : occupied)
        taken = taken || clashes(o);
      for (size_t o : chosen)
        taken = taken || clashes(o);
      if (taken)
        continue;
      chosen.push_back(c);
      if (chosen.size() >= slots || no_files_[c])
        break;
    }
    return chosen;
  }

 private:
  void build_conflicts(const graph_options& opts);

  std::vector<task_spec> tasks_;
  graph_options options_;
  std::unordered_map<std::string, size_t> by_id_;
  std::vector<std::vector<size_t>> deps_;
  std::vector<std::vector<size_t>> dependents_;
  /// Conflict partners from files and co-change, sorted, as one
  /// array: task i's are partners_[offsets_[i] .. offsets_[i + 1]). Tasks
  /// without files are kept apart in `no_files_`.
  std::vector<size_t> offsets_;
  std::vector<uint32_t> partners_;
  std::vector<bool> no_files_;
  /// Each task's locks as sorted numbers, and each lock's holders in order.
  std::vector<std::vector<uint32_t>> lock_ids_;
  std::vector<std::vector<size_t>> holders_;
};

} // namespace taskforce::plan
