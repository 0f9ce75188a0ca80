#include "src/plan/report.hpp"

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

#include "src/taskfile/task_json.hpp"

namespace taskforce::plan {

plan_result make_plan(taskfile::parse_result parsed, size_t max_concurrency) {
  plan_result plan;
  plan.errors = std::move(parsed.errors);
  if (!plan.errors.empty())
    return plan;
  plan.graph.emplace(std::move(parsed.tasks));
  plan.conflicts = plan.graph->conflict_pairs();
  plan.waves = simulate_waves(*plan.graph, max_concurrency);
  return plan;
}

std::string plan_json(const plan_result& plan) {
  using nlohmann::ordered_json;
  ordered_json out;
  out["tasks"] = ordered_json::array();
  out["conflicts"] = ordered_json::array();
  out["waves"] = ordered_json::array();
  out["errors"] = ordered_json::array();
  if (plan.graph) {
    const auto& g = *plan.graph;
    for (const auto& task : g.tasks())
      out["tasks"].push_back(taskfile::task_to_json(task));
    for (const auto& [a, b] : plan.conflicts)
      out["conflicts"].push_back({g.task(a).id, g.task(b).id});
    for (const auto& wave : plan.waves) {
      auto ids = ordered_json::array();
      for (auto t : wave)
        ids.push_back(g.task(t).id);
      out["waves"].push_back(std::move(ids));
    }
  }
  for (const auto& e : plan.errors)
    out["errors"].push_back({{"line", e.line}, {"message", e.message}});
  return out.dump(2);
}

namespace {

/// Display columns of UTF-8 text (one per code point; good enough for a
/// table of ids, paths and titles).
size_t columns(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

/// `s` cut to `width` columns, with "…" when cut, padded with blanks.
std::string fit(const std::string& s, size_t width) {
  std::string out;
  if (columns(s) <= width) {
    out = s;
  } else {
    size_t used = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      bool starts = (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
      if (starts && used + 1 >= width)
        break;
      if (starts)
        ++used;
      out += s[i];
    }
    out += "\u2026";
  }
  out.append(width - std::min(width, columns(out)), ' ');
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty())
      out += ", ";
    out += item;
  }
  return out;
}

} // namespace

std::string plan_text(const plan_result& plan, size_t width) {
  std::ostringstream out;
  if (!plan.graph)
    return "";
  const auto& g = *plan.graph;
  // Rows first, then fit the columns to the width.
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"ID", "TITLE", "DEPS", "FILES", "LOCKS", "PRI", "GATE"});
  size_t done = 0;
  for (const auto& task : g.tasks()) {
    std::string gate = task.verify ? *task.verify : "-";
    if (task.needs_approval)
      gate += " [approval]";
    if (task.held)
      gate += " [held: " + task.hold_reason.value_or("") + "]";
    std::string title = task.title;
    if (task.done) {
      title = "[x] " + title;
      ++done;
    }
    rows.push_back({task.id, title, task.deps.empty() ? "-" : join(task.deps),
                    task.files.empty() ? "(none: runs alone)"
                                       : join(task.files),
                    task.locks.empty() ? "-" : join(task.locks),
                    std::to_string(task.priority), gate});
  }
  std::vector<size_t> widths(7, 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c)
      widths[c] = std::max(widths[c], columns(row[c]));
  // Shrink the widest flexible column (title, deps, files, locks, gate)
  // until the table fits; ids and priorities are never cut.
  const size_t gaps = 2 * (widths.size() - 1);
  auto total = [&] {
    size_t sum = gaps;
    for (auto w : widths)
      sum += w;
    return sum;
  };
  const size_t flexible[] = {1, 2, 3, 4, 6};
  while (total() > width) {
    size_t widest = flexible[0];
    for (auto c : flexible)
      if (widths[c] > widths[widest])
        widest = c;
    if (widths[widest] <= 6)
      break;
    --widths[widest];
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0)
        line += "  ";
      line += fit(row[c], widths[c]);
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out << line << '\n';
  }
  out << "\nconflicts (never at the same time):\n";
  if (plan.conflicts.empty())
    out << "  none\n";
  for (size_t i = 0; i < plan.conflicts.size();) {
    auto first = plan.conflicts[i].first;
    std::string line = "  " + g.task(first).id + ":";
    for (; i < plan.conflicts.size() && plan.conflicts[i].first == first; ++i)
      line += " " + g.task(plan.conflicts[i].second).id;
    out << line << '\n';
  }
  out << "\nwaves:\n";
  if (plan.waves.empty())
    out << "  none (every task is done)\n";
  for (size_t w = 0; w < plan.waves.size(); ++w) {
    std::vector<std::string> ids;
    for (auto t : plan.waves[w])
      ids.push_back(g.task(t).id);
    out << "  " << (w + 1) << ": " << join(ids) << '\n';
  }
  out << '\n'
      << g.size() << " task" << (g.size() == 1 ? "" : "s") << " (" << done
      << " done), " << plan.conflicts.size() << " conflicting pair"
      << (plan.conflicts.size() == 1 ? "" : "s") << ", "
      << plan.waves.size() << " wave" << (plan.waves.size() == 1 ? "" : "s")
      << '\n';
  return out.str();
}

} // namespace taskforce::plan
