// The shared validation pass: values, ids, deps, cycles, holds, approvals.
#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <regex>
#include <unordered_map>

#include "src/config/model.hpp"
#include "src/scope/glob.hpp"
#include "src/scope/path.hpp"
#include "src/scope/physical.hpp"
#include "src/taskfile/raw_task.hpp"
#include "src/time/duration.hpp"

namespace taskforce::taskfile {

namespace {

/// Splits a comma-separated list; commas inside `{...}` belong to a glob.
std::vector<std::string> split_list(const raw_field& field) {
  std::vector<std::string> items;
  auto keep = [&](std::string_view item) {
    item = strip_backticks(item);
    if (!item.empty())
      items.emplace_back(item);
  };
  if (field.is_list) {
    for (const auto& item : field.items)
      keep(item);
    return items;
  }
  std::string_view text = field.text;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] == '{')
      ++depth;
    else if (i < text.size() && text[i] == '}' && depth > 0)
      --depth;
    else if (i == text.size() || (text[i] == ',' && depth == 0)) {
      keep(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return items;
}

/// Why `s` cannot be a task id, or "" when it can. An id names the task's
/// branch (`taskforce/<run>/<id>`), its worktree and its log folder, so it
/// must be one valid component of a git ref (git check-ref-format) and a
/// plain file name.
std::string id_problem(std::string_view s) {
  const char* rule = " (letters, digits, '-', '_' and '.', starting with a "
                     "letter or digit, at most 64)";
  if (s.empty() || s.size() > 64
      || !std::isalnum(static_cast<unsigned char>(s[0]))
      || !std::all_of(s.begin(), s.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '-'
                  || c == '_' || c == '.';
         }))
    return std::string{"is not an id"} + rule;
  if (s.find("..") != std::string_view::npos)
    return "is not an id: git refuses \"..\" in a branch name";
  if (s.back() == '.')
    return "is not an id: git refuses a branch name ending in \".\"";
  if (s.size() >= 5 && s.substr(s.size() - 5) == ".lock")
    return "is not an id: git refuses a branch name ending in \".lock\"";
  return "";
}

bool has_blank(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    return std::isspace(static_cast<unsigned char>(c));
  });
}

bool parse_integer(std::string_view s, int64_t& out) {
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || s.size() > 18)
    return false;
  int64_t value = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return false;
    value = value * 10 + (c - '0');
  }
  out = negative ? -value : value;
  return true;
}

std::string in_quotes(std::string_view s) {
  return "\"" + std::string{s} + "\"";
}

/// The line of a task's field, or the task's own line when absent.
size_t line_of(const raw_task& task, const char* key) {
  auto found = task.fields.find(key);
  return found != task.fields.end() ? found->second.line : task.line;
}

/// Finds dependency cycles (Tarjan's algorithm, iterative) and reports
/// each once, at the deps line of its first task in file order.
void report_cycles(const std::vector<raw_task>& raw,
                   const std::vector<std::vector<size_t>>& edges,
                   const std::vector<task_spec>& tasks,
                   std::vector<parse_error>& errors) {
  size_t n = edges.size();
  constexpr size_t unvisited = std::numeric_limits<size_t>::max();
  std::vector<size_t> order(n, unvisited);
  std::vector<size_t> low(n, 0);
  std::vector<size_t> component(n, unvisited);
  std::vector<bool> on_stack(n, false);
  std::vector<size_t> stack;
  std::vector<std::pair<size_t, size_t>> frames; // node, next edge
  size_t counter = 0;
  size_t components = 0;
  for (size_t root = 0; root < n; ++root) {
    if (order[root] != unvisited)
      continue;
    frames.emplace_back(root, 0);
    while (!frames.empty()) {
      auto& [v, next] = frames.back();
      if (next == 0 && order[v] == unvisited) {
        order[v] = low[v] = counter++;
        stack.push_back(v);
        on_stack[v] = true;
      }
      if (next < edges[v].size()) {
        auto w = edges[v][next++];
        if (order[w] == unvisited)
          frames.emplace_back(w, 0);
        else if (on_stack[w])
          low[v] = std::min(low[v], order[w]);
        continue;
      }
      if (low[v] == order[v]) {
        size_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          component[w] = components;
        } while (w != v);
        ++components;
      }
      auto finished = v;
      frames.pop_back();
      if (!frames.empty()) {
        auto parent = frames.back().first;
        low[parent] = std::min(low[parent], low[finished]);
      }
    }
  }
  std::vector<size_t> size(components, 0);
  for (auto c : component)
    ++size[c];
  std::vector<bool> reported(components, false);
  for (size_t start = 0; start < n; ++start) {
    auto c = component[start];
    if (size[c] < 2 || reported[c])
      continue;
    reported[c] = true;
    // A shortest way back to `start` inside its component, by BFS.
    std::vector<size_t> parent(n, unvisited);
    std::vector<size_t> queue{start};
    size_t last = unvisited;
    for (size_t head = 0; head < queue.size() && last == unvisited; ++head) {
      auto v = queue[head];
      for (auto w : edges[v]) {
        if (component[w] != c)
          continue;
        if (w == start) {
          last = v;
          break;
        }
        if (parent[w] == unvisited) {
          parent[w] = v;
          queue.push_back(w);
        }
      }
    }
    std::vector<size_t> path;
    for (auto v = last; v != start; v = parent[v])
      path.push_back(v);
    path.push_back(start);
    std::reverse(path.begin(), path.end());
    std::string text = "dependency cycle: " + tasks[start].id;
    for (size_t i = 1; i < path.size(); ++i)
      text += " -> " + tasks[path[i]].id;
    text += " -> " + tasks[start].id;
    errors.push_back({line_of(raw[start], "deps"), text});
  }
}

} // namespace

std::vector<task_spec> validate(std::vector<raw_task> raw,
                                const parse_options& opts,
                                std::vector<parse_error>& errors) {
  std::vector<task_spec> tasks(raw.size());
  // Scopes are judged where they lie on disk when the repository is known.
  std::optional<scope::physical_root> disk;
  if (!opts.repository.empty()) {
    try {
      disk.emplace(opts.repository);
    } catch (const std::exception& e) {
      errors.push_back({0, "cannot resolve the scopes in " + opts.repository
                             + ": " + e.what()});
    }
  }
  // Ids first: deps refer to them.
  std::unordered_map<std::string, size_t> by_id;
  for (size_t i = 0; i < raw.size(); ++i) {
    auto& task = tasks[i];
    const auto& r = raw[i];
    task.index = i + 1;
    task.line = r.line;
    task.title = std::move(raw[i].title);
    task.done = r.done;
    task.design = r.design;
    if (!r.body.empty())
      task.body = dedent(r.body);
    task.id = r.default_id;
    size_t id_line = r.line;
    if (auto found = r.fields.find("id"); found != r.fields.end()) {
      id_line = found->second.line;
      auto written = std::string{strip_backticks(found->second.text)};
      if (auto why = id_problem(written); !why.empty())
        errors.push_back({id_line, "id: " + in_quotes(written) + " " + why});
      else
        task.id = written;
    } else if (auto why = id_problem(task.id); !why.empty()) {
      // A heading number too long to name a branch.
      errors.push_back(
        {id_line, "the task's number " + in_quotes(task.id) + " " + why});
    }
    auto [at, fresh] = by_id.emplace(task.id, i);
    if (!fresh)
      errors.push_back(
        {id_line, "duplicate id " + in_quotes(task.id) + " (first used on line "
                    + std::to_string(tasks[at->second].line) + ")"});
  }
  std::vector<std::vector<size_t>> edges(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    auto& task = tasks[i];
    const auto& r = raw[i];
    auto field = [&](const char* key) -> const raw_field* {
      auto found = r.fields.find(key);
      return found == r.fields.end() ? nullptr : &found->second;
    };
    auto fail = [&](const raw_field* f, const std::string& message) {
      errors.push_back({f->line, message});
    };
    if (auto f = field("files")) {
      auto items = split_list(*f);
      bool none = items.size() == 1
                  && (lower(items[0]) == "none" || items[0] == "-"
                      || lower(items[0]) == "n/a");
      for (const auto& item : none ? std::vector<std::string>{} : items) {
        auto normal = scope::normalize_path(item);
        if (!normal.error.empty()) {
          fail(f, "files: " + normal.error);
          continue;
        }
        try {
          scope::glob check{normal.path};
        } catch (const std::invalid_argument& e) {
          fail(f, "files: " + in_quotes(item) + ": " + e.what());
          continue;
        }
        if (disk) {
          auto where = disk->resolve_entry(normal.path);
          if (!where.error.empty()) {
            fail(f, "files: " + where.error);
            continue;
          }
          normal.path = std::move(where.path);
        }
        if (std::find(task.files.begin(), task.files.end(), normal.path)
            == task.files.end())
          task.files.push_back(normal.path);
      }
    }
    if (auto f = field("locks")) {
      for (const auto& item : split_list(*f)) {
        if (has_blank(item))
          fail(f, "locks: " + in_quotes(item)
                    + " is not a lock name (no blanks inside)");
        else if (std::find(task.locks.begin(), task.locks.end(), item)
                 == task.locks.end())
          task.locks.push_back(item);
      }
    }
    if (auto f = field("priority")) {
      auto text = strip_backticks(f->text);
      if (!parse_integer(text, task.priority))
        fail(f, "priority: " + in_quotes(text) + " is not an integer");
    }
    if (auto f = field("verify")) {
      auto text = strip_backticks(f->text);
      if (!disables_gate(text))
        task.verify = std::string{text};
    }
    if (auto f = field("run")) {
      auto text = strip_backticks(f->text);
      if (text.empty())
        fail(f, "run: the command is empty");
      else
        task.run = std::string{text};
    }
    if (auto f = field("agent")) {
      auto text = strip_backticks(f->text);
      if (text.empty() || has_blank(text))
        fail(f, "agent: " + in_quotes(text) + " is not an agent id (one word)");
      else {
        task.agent = std::string{text};
        task.agent_line = f->line;
      }
    }
    if (auto f = field("model")) {
      auto text = strip_backticks(f->text);
      if (!is_model(text))
        fail(f, "model: " + in_quotes(text) + " is not " + model_rule);
      else
        task.model = std::string{text};
    }
    if (auto f = field("risk")) {
      auto text = strip_backticks(f->text);
      if (!text.empty())
        task.risk = std::string{text};
    }
    if (auto f = field("timeout")) {
      auto text = strip_backticks(f->text);
      int64_t ms = 0;
      if (!parse_duration(text, ms))
        fail(f, "timeout: " + in_quotes(text)
                  + " is not a duration (30s, 5m, 1h or milliseconds)");
      else
        task.timeout_ms = ms;
    }
    if (auto f = field("deps")) {
      for (const auto& item : split_list(*f)) {
        size_t target = 0;
        if (auto found = by_id.find(item); found != by_id.end()) {
          target = found->second;
        } else {
          int64_t number = 0;
          if (!parse_integer(item, number) || number < 1
              || static_cast<uint64_t>(number) > tasks.size() || item[0] == '+'
              || item[0] == '-') {
            fail(f, "deps: unknown task " + in_quotes(item)
                      + " (neither an id nor an item number 1.."
                      + std::to_string(tasks.size()) + ")");
            continue;
          }
          target = static_cast<size_t>(number - 1);
        }
        if (target == i) {
          fail(f,
               "deps: task " + in_quotes(task.id) + " cannot depend on itself");
          continue;
        }
        if (std::find(edges[i].begin(), edges[i].end(), target)
            == edges[i].end())
          edges[i].push_back(target);
      }
    }
    if (opts.sequential_deps && i > 0
        && std::find(edges[i].begin(), edges[i].end(), i - 1) == edges[i].end())
      edges[i].push_back(i - 1);
    task.held = r.held;
    task.hold_reason = r.hold_reason;
    if (task.risk) {
      auto risk = lower(*task.risk);
      for (const auto& listed : opts.approval_risks)
        if (lower(trim(listed)) == risk)
          task.needs_approval = true;
    }
  }
  for (size_t i = 0; i < tasks.size(); ++i)
    for (auto target : edges[i])
      tasks[i].deps.push_back(tasks[target].id);
  report_cycles(raw, edges, tasks, errors);
  // Holds: one search of the whole text first, so the common case (no
  // task is held) costs one pass per pattern.
  std::string all;
  for (const auto& task : tasks) {
    all += task.title;
    all += '\n';
    all += task.body;
    all += '\n';
  }
  for (const auto& pattern : opts.hold_pattern) {
    std::regex re;
    try {
      re = std::regex{pattern, std::regex::ECMAScript};
    } catch (const std::regex_error& e) {
      errors.push_back({0, "run.holdPattern: " + in_quotes(pattern)
                             + " is not a valid regex (" + e.what() + ")"});
      continue;
    }
    if (!std::regex_search(all, re))
      continue;
    for (auto& task : tasks) {
      if (task.held)
        continue;
      std::smatch match;
      auto text = task.title + "\n" + task.body;
      if (std::regex_search(text, match, re)) {
        // The reason is the whole line the pattern matched on, as a
        // person reads it in the file, not just the matched marker.
        auto at = static_cast<size_t>(match.position(0));
        auto begin = text.rfind('\n', at);
        begin = begin == std::string::npos ? 0 : begin + 1;
        auto end = text.find('\n', at);
        task.held = true;
        task.hold_reason = std::string{trim(std::string_view{text}.substr(
          begin, end == std::string::npos ? std::string::npos : end - begin))};
      }
    }
  }
  return tasks;
}

bool parse_duration(std::string_view text, int64_t& ms) {
  text = trim(text);
  size_t digits = 0;
  while (digits < text.size()
         && std::isdigit(static_cast<unsigned char>(text[digits])))
    ++digits;
  if (digits == 0 || digits > max_safe_digits)
    return false;
  int64_t value = 0;
  for (size_t i = 0; i < digits; ++i)
    value = value * 10 + (text[i] - '0');
  auto unit = lower(trim(text.substr(digits)));
  int64_t scale = 0;
  if (unit.empty() || unit == "ms")
    scale = 1;
  else if (unit == "s")
    scale = 1000;
  else if (unit == "m")
    scale = 60 * 1000;
  else if (unit == "h")
    scale = 3600 * 1000;
  else
    return false;
  // Any safe integer of milliseconds (the unit's product too).
  if (value == 0 || value > max_safe_integer / scale)
    return false;
  ms = value * scale;
  return true;
}

bool disables_gate(std::string_view value) {
  auto v = lower(trim(value));
  return v.empty() || v == "false" || v == "no" || v == "none" || v == "-";
}

} // namespace taskforce::taskfile
