// Shared checks of the fuzz targets: a parse result is either tasks or
// located errors, and a clean result plans without trouble.
#pragma once

#include <cstdlib>
#include <string_view>

#include "src/plan/graph.hpp"
#include "src/taskfile/parse.hpp"

namespace taskforce::fuzz {

/// Aborts (a finding) unless `r` is consistent for a text of `lines` lines.
inline void check_result(const taskfile::parse_result& r, size_t lines,
                         bool lines_known = true) {
  if (!r.errors.empty() && !r.tasks.empty())
    std::abort();
  for (const auto& e : r.errors)
    if (e.message.empty() || (lines_known && e.line > lines))
      std::abort();
  if (!r.ok())
    return;
  for (size_t i = 0; i < r.tasks.size(); ++i)
    if (r.tasks[i].index != i + 1)
      std::abort();
  plan::task_graph g{r.tasks};
  for (size_t i = 0; i < g.size(); ++i)
    if (g.deps(i).size() != g.task(i).deps.size())
      std::abort(); // every dep resolved
  auto pairs = g.conflict_pairs();
  for (const auto& [a, b] : pairs)
    if (a >= b || !g.conflict(a, b) || !g.conflict(b, a))
      std::abort();
  auto waves = plan::simulate_waves(g, 3);
  size_t scheduled = 0;
  for (const auto& wave : waves) {
    if (wave.empty() || wave.size() > 3)
      std::abort();
    scheduled += wave.size();
  }
  size_t open = 0;
  for (const auto& t : g.tasks())
    open += !t.done;
  if (scheduled != open)
    std::abort(); // no cycles survive validation, so every task runs
}

/// The number of lines of `text` as the readers count them.
inline size_t count_lines(std::string_view text) {
  size_t lines = 0;
  for (char c : text)
    lines += c == '\n';
  return lines + (text.empty() || text.back() == '\n' ? 0 : 1);
}

} // namespace taskforce::fuzz
