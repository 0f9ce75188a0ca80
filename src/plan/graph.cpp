#include "src/plan/graph.hpp"

#include <algorithm>
#include <set>

#include "src/scope/glob.hpp"

namespace taskforce::plan {

namespace {

/// One `files` entry of one task, placed in the index.
struct entry {
  /// The base (or the literal path) with '/' as '\0', so that a directory
  /// and everything below it sort together: "a", "a\0b", "a\0c", "a-b".
  std::string key;
  size_t task;
  scope::glob pattern;
};

std::string sort_key(const std::string& path) {
  std::string key = path;
  std::replace(key.begin(), key.end(), '/', '\0');
  return key;
}

/// The scope index: literals by path, globs by base, all entries by key.
class scope_index {
public:
  explicit scope_index(const std::vector<task_spec>& tasks) {
    for (size_t t = 0; t < tasks.size(); ++t) {
      if (tasks[t].done)
        continue;
      for (const auto& file : tasks[t].files) {
        scope::glob pattern{file};
        auto key = sort_key(pattern.base());
        entries_.push_back({std::move(key), t, std::move(pattern)});
      }
    }
    std::sort(entries_.begin(), entries_.end(),
              [](const entry& a, const entry& b) { return a.key < b.key; });
    for (size_t i = 0; i < entries_.size(); ++i) {
      const auto& e = entries_[i];
      if (e.pattern.is_literal())
        literals_[e.key].push_back(i);
      else
        globs_[e.key].push_back(i);
    }
  }

  const std::vector<entry>& entries() const {
    return entries_;
  }

  /// Calls `f(i)` for every entry that may share a path with entry `e`
  /// (a superset; the caller tests exactly). May repeat an entry.
  template <class F>
  void candidates(const entry& e, F&& f) const {
    // Globs based at the entry's base or any of its ancestors.
    const auto& key = e.key;
    auto visit_globs_at = [&](const std::string& prefix) {
      if (auto found = globs_.find(prefix); found != globs_.end())
        for (auto i : found->second)
          f(i);
    };
    visit_globs_at("");
    for (size_t i = 0; i < key.size(); ++i)
      if (key[i] == '\0')
        visit_globs_at(key.substr(0, i));
    if (!key.empty())
      visit_globs_at(key);
    if (e.pattern.is_literal()) {
      if (auto found = literals_.find(key); found != literals_.end())
        for (auto i : found->second)
          f(i);
      return;
    }
    // A glob: every entry at or below its base.
    auto first = std::lower_bound(
      entries_.begin(), entries_.end(), key,
      [](const entry& x, const std::string& k) { return x.key < k; });
    for (auto it = first; it != entries_.end(); ++it) {
      const auto& other = it->key;
      bool below = key.empty()
                   || (other.compare(0, key.size(), key) == 0
                       && (other.size() == key.size()
                           || other[key.size()] == '\0'));
      if (!below)
        break;
      f(static_cast<size_t>(it - entries_.begin()));
    }
  }

  /// Calls `f(task)` for every task whose scope covers `path`.
  template <class F>
  void covering(const std::string& path, F&& f) const {
    entry probe{sort_key(path), 0, scope::glob{path}};
    candidates(probe, [&](size_t i) {
      if (intersects(entries_[i].pattern, probe.pattern))
        f(entries_[i].task);
    });
  }

private:
  std::vector<entry> entries_;
  std::unordered_map<std::string, std::vector<size_t>> literals_;
  std::unordered_map<std::string, std::vector<size_t>> globs_;
};

} // namespace

task_graph::task_graph(std::vector<task_spec> tasks,
                       const graph_options& opts)
  : tasks_(std::move(tasks)) {
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

void task_graph::add_conflict(size_t a, size_t b) {
  conflicts_[a].push_back(b);
  conflicts_[b].push_back(a);
}

void task_graph::build_conflicts(const graph_options& opts) {
  size_t n = tasks_.size();
  conflicts_.assign(n, {});
  no_files_.assign(n, false);
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
  // Locks: every pair of holders.
  std::unordered_map<std::string, std::vector<size_t>> holders;
  for (size_t i = 0; i < n; ++i)
    if (!tasks_[i].done)
      for (const auto& lock : tasks_[i].locks)
        holders[lock].push_back(i);
  for (const auto& [lock, tasks] : holders)
    for (size_t a = 0; a < tasks.size(); ++a)
      for (size_t b = a + 1; b < tasks.size(); ++b)
        add_conflict(tasks[a], tasks[b]);
  // Learned co-change pairs: a task covering one file against a task
  // covering the other.
  for (const auto& [x, y] : opts.co_change) {
    std::vector<size_t> xs;
    std::vector<size_t> ys;
    try {
      index.covering(x, [&](size_t t) { xs.push_back(t); });
      index.covering(y, [&](size_t t) { ys.push_back(t); });
    } catch (const std::invalid_argument&) {
      continue; // a learned path is a plain path; ignore anything odd
    }
    for (auto a : xs)
      for (auto b : ys)
        if (a != b)
          add_conflict(a, b);
  }
  for (auto& partners : conflicts_) {
    std::sort(partners.begin(), partners.end());
    partners.erase(std::unique(partners.begin(), partners.end()),
                   partners.end());
  }
}

bool task_graph::conflict(size_t a, size_t b) const {
  if (a == b || tasks_[a].done || tasks_[b].done)
    return false;
  if (no_files_[a] || no_files_[b])
    return true;
  const auto& partners = conflicts_[a];
  return std::binary_search(partners.begin(), partners.end(), b);
}

std::vector<std::pair<size_t, size_t>> task_graph::conflict_pairs() const {
  std::vector<std::pair<size_t, size_t>> pairs;
  size_t n = tasks_.size();
  std::vector<size_t> no_files;
  for (size_t i = 0; i < n; ++i)
    if (no_files_[i])
      no_files.push_back(i);
  for (size_t i = 0; i < n; ++i) {
    if (tasks_[i].done)
      continue;
    if (no_files_[i]) {
      for (size_t j = i + 1; j < n; ++j)
        if (!tasks_[j].done)
          pairs.emplace_back(i, j);
      continue;
    }
    // Merge the partners after i with the file-less tasks after i.
    const auto& partners = conflicts_[i];
    auto p = std::upper_bound(partners.begin(), partners.end(), i);
    auto q = std::upper_bound(no_files.begin(), no_files.end(), i);
    while (p != partners.end() || q != no_files.end()) {
      size_t next;
      if (q == no_files.end() || (p != partners.end() && *p < *q))
        next = *p++;
      else if (p == partners.end() || *q < *p)
        next = *q++;
      else {
        next = *p++;
        ++q;
      }
      pairs.emplace_back(i, next);
    }
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
    bool deps_met = std::all_of(deps_[i].begin(), deps_[i].end(), [&](size_t d) {
      return tasks_[d].done || finished[d];
    });
    if (!deps_met)
      continue;
    bool clashes = std::any_of(running_list.begin(), running_list.end(),
                               [&](size_t r) { return conflict(i, r); });
    if (!clashes)
      result.push_back(i);
  }
  std::sort(result.begin(), result.end(),
            [this](size_t a, size_t b) { return before(a, b); });
  return result;
}

std::vector<size_t> task_graph::pick(const std::vector<bool>& finished,
                                     const std::vector<bool>& running,
                                     size_t slots) const {
  std::vector<size_t> chosen;
  for (auto candidate : ready(finished, running)) {
    if (chosen.size() >= slots)
      break;
    bool clashes = std::any_of(chosen.begin(), chosen.end(), [&](size_t c) {
      return conflict(candidate, c);
    });
    if (!clashes)
      chosen.push_back(candidate);
  }
  return chosen;
}

std::vector<std::vector<size_t>> simulate_waves(const task_graph& g,
                                                size_t max_concurrency) {
  max_concurrency = std::max<size_t>(max_concurrency, 1);
  size_t n = g.size();
  // Deps still to finish per task; ready tasks kept in scheduling order.
  std::vector<size_t> waiting(n, 0);
  auto order = [&g](size_t a, size_t b) { return g.before(a, b); };
  std::set<size_t, decltype(order)> ready(order);
  for (size_t i = 0; i < n; ++i) {
    if (g.task(i).done)
      continue;
    for (auto d : g.deps(i))
      if (!g.task(d).done)
        ++waiting[i];
    if (waiting[i] == 0)
      ready.insert(i);
  }
  std::vector<std::vector<size_t>> waves;
  while (!ready.empty()) {
    std::vector<size_t> wave;
    for (auto it = ready.begin();
         it != ready.end() && wave.size() < max_concurrency; ++it) {
      bool clashes = std::any_of(wave.begin(), wave.end(), [&](size_t c) {
        return g.conflict(*it, c);
      });
      if (clashes)
        continue;
      wave.push_back(*it);
      if (g.task(*it).files.empty())
        break; // a task without files excludes everything else
    }
    for (auto t : wave)
      ready.erase(t);
    // Unit durations: the whole wave finishes before the next starts.
    for (auto t : wave)
      for (auto d : g.dependents(t))
        if (--waiting[d] == 0 && !g.task(d).done)
          ready.insert(d);
    waves.push_back(std::move(wave));
  }
  return waves;
}

} // namespace taskforce::plan
