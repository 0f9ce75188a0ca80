#include "src/plan/graph.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory_resource>
#include <set>

#include "src/scope/glob.hpp"

namespace taskforce::plan {

namespace {

constexpr uint32_t none = std::numeric_limits<uint32_t>::max();

/// One `files` entry of one task, placed in the index.
struct entry {
  size_t task;
  scope::glob pattern;
  /// The next entry in the same directory node.
  uint32_t next = none;
};

/// A directory of the index: its entries and its children, as lists.
struct node {
  uint32_t first_child = none;
  uint32_t next_sibling = none;
  uint32_t first_entry = none;
};

/// A child's name under its parent: the key of the one map of the trie.
struct child_key {
  uint32_t parent;
  std::string_view name;
  bool operator==(const child_key& other) const {
    return parent == other.parent && name == other.name;
  }
};

struct child_key_hash {
  size_t operator()(const child_key& k) const {
    return std::hash<std::string_view>{}(k.name) * 31 + k.parent;
  }
};

/// The scope index: a trie of path segments. Each entry sits at the node of
/// its base (a literal's base is its path). Only entries on the way down to
/// an entry's base (globs), at its base, or below it (for a glob) can share
/// a path with it; everything else is never looked at.
class scope_index {
 public:
  explicit scope_index(const std::vector<task_spec>& tasks)
    : arena_(64 * files_of(tasks) + 1024) {
    // Everything sized up front: growing big arrays while thousands of
    // small blocks are being freed is what makes malloc slow down.
    auto count = files_of(tasks);
    entries_.reserve(count);
    nodes_.reserve(2 * count + 1);
    for (size_t t = 0; t < tasks.size(); ++t)
      if (!tasks[t].done)
        for (const auto& file : tasks[t].files)
          entries_.push_back({t, scope::glob{file}, none});
    // Names are views of the entries' bases: build once entries_ is final.
    nodes_.emplace_back();
    children_.reserve(entries_.size() * 2);
    for (uint32_t i = 0; i < entries_.size(); ++i) {
      auto at = add_path(entries_[i].pattern.base());
      entries_[i].next = nodes_[at].first_entry;
      nodes_[at].first_entry = i;
    }
  }

  const std::vector<entry>& entries() const {
    return entries_;
  }

  /// Calls `f(i)` for every entry that may share a path with entry `e`
  /// (a superset; the caller tests exactly). May repeat an entry.
  template<class F>
  void candidates(const entry& e, F&& f) const {
    // Globs at every directory above the base.
    auto globs_at = [&](uint32_t n) {
      for (auto i = nodes_[n].first_entry; i != none; i = entries_[i].next)
        if (!entries_[i].pattern.is_literal())
          f(i);
    };
    auto at = walk(e.pattern.base(), globs_at);
    if (at == none)
      return;
    if (e.pattern.is_literal()) {
      // The same path, and globs based at it.
      for (auto i = nodes_[at].first_entry; i != none; i = entries_[i].next)
        f(i);
      return;
    }
    // A glob: every entry at or below its base.
    std::vector<uint32_t> stack{at};
    while (!stack.empty()) {
      auto n = stack.back();
      stack.pop_back();
      for (auto i = nodes_[n].first_entry; i != none; i = entries_[i].next)
        f(i);
      for (auto c = nodes_[n].first_child; c != none;
           c = nodes_[c].next_sibling)
        stack.push_back(c);
    }
  }

  /// Calls `f(task)` for every task whose scope covers `path`.
  template<class F>
  void covering(const std::string& path, F&& f) const {
    entry probe{0, scope::glob{path}, none};
    candidates(probe, [&](size_t i) {
      if (intersects(entries_[i].pattern, probe.pattern))
        f(entries_[i].task);
    });
  }

 private:
  static size_t files_of(const std::vector<task_spec>& tasks) {
    size_t count = 0;
    for (const auto& task : tasks)
      count += task.files.size();
    return count;
  }

  /// Follows `base` segment by segment from the root, calling `above(n)`
  /// for each node passed before the last; returns the last node, or
  /// `none` when the path is not in the trie.
  template<class F>
  uint32_t walk(std::string_view base, F&& above) const {
    uint32_t at = 0;
    for_each_segment(base, [&](std::string_view name) {
      if (at == none)
        return;
      above(at);
      auto found = children_.find(child_key{at, name});
      at = found == children_.end() ? none : found->second;
    });
    return at;
  }

  /// The node of `base`, created with its missing ancestors.
  uint32_t add_path(std::string_view base) {
    uint32_t at = 0;
    for_each_segment(base, [&](std::string_view name) {
      auto [it, fresh] = children_.emplace(
        child_key{at, name}, static_cast<uint32_t>(nodes_.size()));
      if (fresh) {
        nodes_.emplace_back();
        nodes_.back().next_sibling = nodes_[at].first_child;
        nodes_[at].first_child = it->second;
      }
      at = it->second;
    });
    return at;
  }

  template<class F>
  static void for_each_segment(std::string_view path, F&& f) {
    size_t start = 0;
    while (start < path.size()) {
      auto end = path.find('/', start);
      if (end == std::string_view::npos)
        end = path.size();
      f(path.substr(start, end - start));
      start = end + 1;
    }
  }

  std::vector<entry> entries_;
  std::vector<node> nodes_;
  /// The trie's nodes come from one arena: built once, freed at once, and
  /// close together in memory.
  std::pmr::monotonic_buffer_resource arena_;
  std::pmr::unordered_map<child_key, uint32_t, child_key_hash> children_{
    &arena_};
};

} // namespace

task_graph::task_graph(std::vector<task_spec> tasks, const graph_options& opts)
  : tasks_(std::move(tasks)), options_(opts) {
  size_t n = tasks_.size();
  by_id_.reserve(n);
  for (size_t i = 0; i < n; ++i)
    by_id_.emplace(tasks_[i].id, i);
  deps_.resize(n);
  dependents_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    for (const auto& dep : tasks_[i].deps) {
      auto found = by_id_.find(dep);
      if (found == by_id_.end() || found->second == i)
        continue;
      deps_[i].push_back(found->second);
      dependents_[found->second].push_back(i);
    }
  }
  build_conflicts(opts);
}

std::optional<size_t> task_graph::find(std::string_view id) const {
  auto found = by_id_.find(std::string{id});
  if (found == by_id_.end())
    return std::nullopt;
  return found->second;
}

void task_graph::build_conflicts(const graph_options& opts) {
  size_t n = tasks_.size();
  no_files_.assign(n, false);
  // Pairs in both directions, sorted into one array at the end.
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  auto add_conflict = [&edges](size_t a, size_t b) {
    edges.emplace_back(static_cast<uint32_t>(a), static_cast<uint32_t>(b));
    edges.emplace_back(static_cast<uint32_t>(b), static_cast<uint32_t>(a));
  };
  for (size_t i = 0; i < n; ++i)
    no_files_[i] = !tasks_[i].done && tasks_[i].files.empty();
  // Files: each entry is tested exactly against the index's candidates
  // only; `seen[u] == t + 1` once t and u are known to conflict.
  scope_index index{tasks_};
  const auto& entries = index.entries();
  std::vector<size_t> seen(n, 0);
  for (const auto& e : entries) {
    auto t = e.task;
    index.candidates(e, [&](size_t i) {
      const auto& other = entries[i];
      auto u = other.task;
      if (u <= t || seen[u] == t + 1)
        return;
      if (intersects(e.pattern, other.pattern)) {
        seen[u] = t + 1;
        add_conflict(t, u);
      }
    });
  }
  // Locks: numbered, and kept as holder lists rather than pairs, so a
  // lock shared by thousands of tasks costs memory linear in them.
  std::unordered_map<std::string, uint32_t> lock_ids;
  lock_ids_.assign(n, {});
  holders_.clear();
  for (size_t i = 0; i < n; ++i) {
    if (tasks_[i].done)
      continue;
    for (const auto& lock : tasks_[i].locks) {
      auto [it, fresh] = lock_ids.emplace(lock, holders_.size());
      if (fresh)
        holders_.emplace_back();
      holders_[it->second].push_back(i);
      lock_ids_[i].push_back(it->second);
    }
    std::sort(lock_ids_[i].begin(), lock_ids_[i].end());
  }
  // Learned co-change pairs: a task covering one file against a task
  // covering the other.
  for (const auto& [x, y] : opts.co_change) {
    std::vector<size_t> xs;
    std::vector<size_t> ys;
    try {
      index.covering(x, [&](size_t t) {
        xs.push_back(t);
      });
      index.covering(y, [&](size_t t) {
        ys.push_back(t);
      });
    } catch (const std::invalid_argument&) {
      continue; // a learned path is a plain path; ignore anything odd
    }
    for (auto a : xs)
      for (auto b : ys)
        if (a != b)
          add_conflict(a, b);
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  offsets_.assign(n + 1, 0);
  partners_.clear();
  partners_.reserve(edges.size());
  for (const auto& [a, b] : edges) {
    ++offsets_[a + 1];
    partners_.push_back(b);
  }
  for (size_t i = 0; i < n; ++i)
    offsets_[i + 1] += offsets_[i];
}

bool task_graph::conflict(size_t a, size_t b) const {
  if (a == b || tasks_[a].done || tasks_[b].done)
    return false;
  if (no_files_[a] || no_files_[b])
    return true;
  // A shared lock: both lists are short and sorted.
  const auto& x = lock_ids_[a];
  const auto& y = lock_ids_[b];
  for (size_t i = 0, j = 0; i < x.size() && j < y.size();) {
    if (x[i] == y[j])
      return true;
    x[i] < y[j] ? ++i : ++j;
  }
  auto first = partners_.begin() + static_cast<ptrdiff_t>(offsets_[a]);
  auto last = partners_.begin() + static_cast<ptrdiff_t>(offsets_[a + 1]);
  return std::binary_search(first, last, static_cast<uint32_t>(b));
}

std::vector<std::pair<size_t, size_t>> task_graph::conflict_pairs() const {
  std::vector<std::pair<size_t, size_t>> pairs;
  size_t n = tasks_.size();
  std::vector<size_t> no_files;
  for (size_t i = 0; i < n; ++i)
    if (no_files_[i])
      no_files.push_back(i);
  std::vector<size_t> later;
  for (size_t i = 0; i < n; ++i) {
    if (tasks_[i].done)
      continue;
    if (no_files_[i]) {
      for (size_t j = i + 1; j < n; ++j)
        if (!tasks_[j].done)
          pairs.emplace_back(i, j);
      continue;
    }
    // The partners after i: by files, without files, and by locks.
    later.clear();
    auto first = partners_.begin() + static_cast<ptrdiff_t>(offsets_[i]);
    auto last = partners_.begin() + static_cast<ptrdiff_t>(offsets_[i + 1]);
    for (auto p = std::upper_bound(first, last, static_cast<uint32_t>(i));
         p != last; ++p)
      later.push_back(*p);
    later.insert(later.end(),
                 std::upper_bound(no_files.begin(), no_files.end(), i),
                 no_files.end());
    for (auto lock : lock_ids_[i]) {
      const auto& holders = holders_[lock];
      later.insert(later.end(),
                   std::upper_bound(holders.begin(), holders.end(), i),
                   holders.end());
    }
    std::sort(later.begin(), later.end());
    later.erase(std::unique(later.begin(), later.end()), later.end());
    for (auto j : later)
      pairs.emplace_back(i, j);
  }
  return pairs;
}

bool task_graph::before(size_t a, size_t b) const {
  if (tasks_[a].priority != tasks_[b].priority)
    return tasks_[a].priority > tasks_[b].priority;
  return a < b;
}

std::vector<size_t> task_graph::ready(const std::vector<bool>& finished,
                                      const std::vector<bool>& running) const {
  std::vector<size_t> running_list;
  for (size_t i = 0; i < tasks_.size(); ++i)
    if (running[i])
      running_list.push_back(i);
  std::vector<size_t> result;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].done || finished[i] || running[i])
      continue;
    bool deps_met
      = std::all_of(deps_[i].begin(), deps_[i].end(), [&](size_t d) {
          return tasks_[d].done || finished[d];
        });
    if (!deps_met)
      continue;
    bool clashes
      = std::any_of(running_list.begin(), running_list.end(), [&](size_t r) {
          return conflict(i, r);
        });
    if (!clashes)
      result.push_back(i);
  }
  std::sort(result.begin(), result.end(), [this](size_t a, size_t b) {
    return before(a, b);
  });
  return result;
}

std::vector<size_t> task_graph::pick(const std::vector<bool>& finished,
                                     const std::vector<bool>& running,
                                     size_t slots) const {
  std::vector<size_t> occupied;
  for (size_t i = 0; i < tasks_.size(); ++i)
    if (running[i])
      occupied.push_back(i);
  return pick(ready(finished, running), occupied, slots);
}

} // namespace taskforce::plan
