#include "src/plan/report.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <sstream>

#include "src/run/scheduler.hpp"
#include "src/text/join.hpp"

namespace taskforce::plan {

plan_result make_plan(taskfile::parse_result parsed, size_t max_concurrency,
                      const graph_options& opts) {
  plan_result plan;
  plan.errors = std::move(parsed.errors);
  plan.warnings = std::move(parsed.warnings);
  if (!plan.errors.empty())
    return plan;
  if (!opts.co_change.empty()) {
    // The pairs learning adds: those the graph without it lacks.
    auto plain = task_graph{parsed.tasks}.conflict_pairs();
    plan.graph.emplace(std::move(parsed.tasks), opts);
    plan.conflicts = plan.graph->conflict_pairs();
    std::set_difference(plan.conflicts.begin(), plan.conflicts.end(),
                        plain.begin(), plain.end(),
                        std::back_inserter(plan.learned));
  } else {
    plan.graph.emplace(std::move(parsed.tasks));
    plan.conflicts = plan.graph->conflict_pairs();
  }
  plan.waves = run::simulate_waves(*plan.graph, max_concurrency);
  return plan;
}

namespace {

/// Appends `s` as a JSON string; bytes that are not UTF-8 become U+FFFD,
/// so any task file prints (nlohmann's dump would throw instead).
void put_string(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        default:
          if (c < 0x20) {
            char buffer[8];
            std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
            out += buffer;
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    // A multi-byte sequence: its length from the lead byte, then checked.
    size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (c > 0xF4)
      len = 0;
    bool valid = len > 0 && i + len <= s.size();
    for (size_t k = 1; valid && k < len; ++k)
      valid = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (valid && len == 3) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      valid = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);
    } else if (valid && len == 4) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      valid = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (valid) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  out += '"';
}

void put_optional(std::string& out, const std::optional<std::string>& s) {
  if (s)
    put_string(out, *s);
  else
    out += "null";
}

void put_strings(std::string& out, const std::vector<std::string>& items) {
  out += '[';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0)
      out += ", ";
    put_string(out, items[i]);
  }
  out += ']';
}

/// One task on one line, fields in the plan JSON's order.
void put_task(std::string& out, const task_spec& t) {
  out += "{\"id\": ";
  put_string(out, t.id);
  out += ", \"index\": " + std::to_string(t.index);
  out += ", \"line\": " + std::to_string(t.line);
  out += ", \"title\": ";
  put_string(out, t.title);
  out += t.done ? ", \"done\": true" : ", \"done\": false";
  out += ", \"deps\": ";
  put_strings(out, t.deps);
  out += ", \"files\": ";
  put_strings(out, t.files);
  out += ", \"locks\": ";
  put_strings(out, t.locks);
  out += ", \"priority\": " + std::to_string(t.priority);
  out += ", \"verify\": ";
  put_optional(out, t.verify);
  out += ", \"run\": ";
  put_optional(out, t.run);
  out += ", \"agent\": ";
  put_optional(out, t.agent);
  out += ", \"model\": ";
  put_optional(out, t.model);
  out += ", \"risk\": ";
  put_optional(out, t.risk);
  out += ", \"timeout_ms\": ";
  out += t.timeout_ms ? std::to_string(*t.timeout_ms) : "null";
  out += t.held ? ", \"held\": true" : ", \"held\": false";
  out += ", \"hold_reason\": ";
  put_optional(out, t.hold_reason);
  out += '}';
}

} // namespace

std::string plan_json(const plan_result& plan) {
  // Written directly rather than through a JSON tree: a plan of 20k tasks
  // is tens of megabytes as a tree and a few as text.
  std::string out = "{\n  \"tasks\": [";
  if (plan.graph) {
    const auto& g = *plan.graph;
    for (size_t i = 0; i < g.size(); ++i) {
      out += i ? ",\n    " : "\n    ";
      put_task(out, g.task(i));
    }
    if (g.size() > 0)
      out += "\n  ";
  }
  out += "],\n  \"conflicts\": [";
  for (size_t i = 0; i < plan.conflicts.size(); ++i) {
    out += i ? ",\n    [" : "\n    [";
    put_string(out, plan.graph->task(plan.conflicts[i].first).id);
    out += ", ";
    put_string(out, plan.graph->task(plan.conflicts[i].second).id);
    out += ']';
  }
  if (!plan.conflicts.empty())
    out += "\n  ";
  out += "],\n  \"waves\": [";
  for (size_t w = 0; w < plan.waves.size(); ++w) {
    out += w ? ",\n    [" : "\n    [";
    for (size_t k = 0; k < plan.waves[w].size(); ++k) {
      if (k > 0)
        out += ", ";
      put_string(out, plan.graph->task(plan.waves[w][k]).id);
    }
    out += ']';
  }
  if (!plan.waves.empty())
    out += "\n  ";
  auto put_located
    = [&out](const char* key, const std::vector<taskfile::parse_error>& xs) {
        out += "],\n  \"";
        out += key;
        out += "\": [";
        for (size_t i = 0; i < xs.size(); ++i) {
          out += i ? ",\n    " : "\n    ";
          out += "{\"line\": " + std::to_string(xs[i].line) + ", \"message\": ";
          put_string(out, xs[i].message);
          out += '}';
        }
        if (!xs.empty())
          out += "\n  ";
      };
  put_located("errors", plan.errors);
  put_located("warnings", plan.warnings);
  out += "]\n}";
  return out;
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

/// A command for a table cell: its first line, and how many more there are
/// (the whole text is in `--json`).
std::string one_line(const std::string& command) {
  auto end = command.find('\n');
  if (end == std::string::npos)
    return command;
  auto more = std::count(command.begin(), command.end(), '\n');
  return command.substr(0, end) + " (+" + std::to_string(more) + " line"
         + (more == 1 ? "" : "s") + ")";
}

} // namespace

std::string plan_text(const plan_result& plan, size_t width) {
  std::ostringstream out;
  if (!plan.graph)
    return "";
  const auto& g = *plan.graph;
  // Rows first, then fit the columns to the width.
  std::vector<std::vector<std::string>> rows;
  rows.push_back(
    {"ID", "TITLE", "DEPS", "FILES", "LOCKS", "PRI", "RUN", "GATE"});
  size_t done = 0;
  for (const auto& task : g.tasks()) {
    std::string gate = task.verify ? one_line(*task.verify) : "-";
    if (task.needs_approval)
      gate = "[approval] " + gate;
    if (task.held)
      gate = "[held] " + gate;
    std::string title = task.title;
    if (task.done) {
      title = "[x] " + title;
      ++done;
    }
    rows.push_back(
      {task.id, title, task.deps.empty() ? "-" : join(task.deps),
       task.files.empty() ? "(none: runs alone)" : join(task.files),
       task.locks.empty() ? "-" : join(task.locks),
       std::to_string(task.priority), task.run ? one_line(*task.run) : "-",
       gate});
  }
  std::vector<size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c)
      widths[c] = std::max(widths[c], columns(row[c]));
  // Shrink the widest flexible column (title, deps, files, locks, run,
  // gate) until the table fits; ids and priorities are never cut.
  const size_t gaps = 2 * (widths.size() - 1);
  auto total = [&] {
    size_t sum = gaps;
    for (auto w : widths)
      sum += w;
    return sum;
  };
  const size_t flexible[] = {1, 2, 3, 4, 6, 7};
  // The title keeps a head start of ten columns: it says what the task is.
  auto weight = [&](size_t c) {
    return c == 1 ? widths[c] - std::min<size_t>(widths[c], 10) : widths[c];
  };
  // Columns never shrink below six: past that the table overflows.
  while (total() > width) {
    size_t widest = 0;
    for (auto c : flexible)
      if (widths[c] > 6 && (widest == 0 || weight(c) > weight(widest)))
        widest = c;
    if (widest == 0)
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
  bool any_held = false;
  for (const auto& task : g.tasks()) {
    if (!task.held || task.done)
      continue;
    if (!any_held)
      out << "\nheld (they wait when they would start):\n";
    any_held = true;
    out << "  " << task.id << ": " << task.hold_reason.value_or("") << '\n';
  }
  // Each task with its later partners, one line per task.
  auto put_pairs = [&](const std::vector<std::pair<size_t, size_t>>& pairs) {
    for (size_t i = 0; i < pairs.size();) {
      auto first = pairs[i].first;
      std::string line = "  " + g.task(first).id + ":";
      for (; i < pairs.size() && pairs[i].first == first; ++i)
        line += " " + g.task(pairs[i].second).id;
      out << line << '\n';
    }
  };
  std::vector<std::pair<size_t, size_t>> declared;
  std::set_difference(plan.conflicts.begin(), plan.conflicts.end(),
                      plan.learned.begin(), plan.learned.end(),
                      std::back_inserter(declared));
  out << "\nconflicts (never at the same time):\n";
  if (declared.empty())
    out << "  none\n";
  put_pairs(declared);
  if (!plan.learned.empty()) {
    out << "\nlearned conflicts (their files changed together in earlier "
           "tasks):\n";
    put_pairs(plan.learned);
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
      << (plan.conflicts.size() == 1 ? "" : "s") << ", " << plan.waves.size()
      << " wave" << (plan.waves.size() == 1 ? "" : "s") << '\n';
  return out.str();
}

} // namespace taskforce::plan
