// The headings format: `### N. [ ] Title` with bold labels below.
#include <algorithm>
#include <cctype>

#include "src/taskfile/raw_task.hpp"

namespace taskforce::taskfile {

namespace {

/// Labels that schedule the task; their lines leave the prompt.
const std::vector<std::string>& scheduling_fields() {
  static const std::vector<std::string> names{
    "id",    "files", "locks", "priority", "verify", "deps",
    "agent", "model", "risk",  "timeout",  "run"};
  return names;
}

/// Prose labels: known, kept in the prompt, never a gate.
const std::vector<std::string>& prose_fields() {
  static const std::vector<std::string> names{
    "stories",       "tdd",        "out_of_scope", "spec",
    "what_to_build", "acceptance", "how_verified"};
  return names;
}

/// The built-in labels (lower case) and their canonical field.
const std::map<std::string, std::string>& builtin_labels() {
  static const std::map<std::string, std::string> labels{
    {"files", "files"},
    {"risk", "risk"},
    {"stories", "stories"},
    {"tdd", "tdd"},
    {"locks", "locks"},
    {"priority", "priority"},
    {"agent", "agent"},
    {"model", "model"},
    {"verify", "verify"},
    {"deps", "deps"},
    {"depends on", "deps"},
    {"timeout", "timeout"},
    {"run", "run"},
    {"out of scope", "out_of_scope"},
    {"spec & identifiers in scope", "spec"},
    {"what to build", "what_to_build"},
    {"acceptance criteria", "acceptance"},
  };
  return labels;
}

/// A markdown heading's level (1-6), or 0.
size_t heading_level(std::string_view trimmed) {
  size_t level = 0;
  while (level < trimmed.size() && trimmed[level] == '#')
    ++level;
  if (level == 0 || level > 6)
    return 0;
  if (level < trimmed.size() && trimmed[level] != ' ' && trimmed[level] != '\t')
    return 0;
  return level;
}

enum class heading { none, open, checked, malformed };

/// Whether a heading's text (after the #s) is `N. [ ] Title`.
heading task_heading(std::string_view s, std::string& number,
                     std::string_view& title) {
  s = trim(s);
  size_t digits = 0;
  while (digits < s.size()
         && std::isdigit(static_cast<unsigned char>(s[digits])))
    ++digits;
  if (digits == 0)
    return heading::none;
  auto rest = s.substr(digits);
  bool dotted = !rest.empty() && rest[0] == '.';
  auto after = trim(dotted ? rest.substr(1) : rest);
  if (after.empty() || after[0] != '[')
    return heading::none; // "### 2. Background": an ordinary heading
  auto close = after.find(']');
  if (close == std::string_view::npos || close > 3)
    return heading::none;
  auto inside = after.substr(1, close - 1);
  if (!dotted || inside.size() != 1
      || (inside != " " && inside != "x" && inside != "X"))
    return heading::malformed;
  number = std::string{s.substr(0, digits)};
  title = trim(after.substr(close + 1));
  return inside == " " ? heading::open : heading::checked;
}

/// A `**Label:** value` or `**Label**: value` line (after an optional
/// bullet): the label and the value; false otherwise.
bool bold_label(std::string_view s, std::string_view& label,
                std::string_view& value) {
  if (!s.empty() && (s[0] == '-' || s[0] == '*' || s[0] == '+') && s.size() > 1
      && (s[1] == ' ' || s[1] == '\t'))
    s = trim(s.substr(1));
  if (s.substr(0, 2) != "**")
    return false;
  auto close = s.find("**", 2);
  if (close == std::string_view::npos)
    return false;
  auto inner = trim(s.substr(2, close - 2));
  auto rest = s.substr(close + 2);
  if (!inner.empty() && inner.back() == ':') {
    inner.remove_suffix(1);
  } else if (!rest.empty() && rest[0] == ':') {
    rest.remove_prefix(1);
  } else {
    return false;
  }
  label = trim(inner);
  value = trim(rest);
  return !label.empty();
}

/// Removes a `[design]` marker (any case) from `title`.
bool take_design_marker(std::string& title) {
  auto lowered = lower(title);
  auto at = lowered.find("[design]");
  if (at == std::string::npos)
    return false;
  title.erase(at, 8);
  title = std::string{trim(title)};
  // Close a gap left in the middle ("Build  the page").
  auto gap = title.find("  ");
  if (gap != std::string::npos)
    title.erase(gap, 1);
  return true;
}

} // namespace

size_t task_heading_level(std::string_view line) {
  if (indentation(line) >= 4)
    return 0; // indented: a code block, not a heading
  auto trimmed = trim(line);
  auto level = heading_level(trimmed);
  if (level == 0)
    return 0;
  std::string number;
  std::string_view title;
  auto kind = task_heading(trimmed.substr(level), number, title);
  return kind == heading::open || kind == heading::checked ? level : 0;
}

std::vector<raw_task>
read_headings(std::string_view text,
              const std::map<std::string, std::string>& fields,
              std::vector<parse_error>& errors) {
  // Label lookup: built-in labels, then the config's, all lower case.
  auto labels = builtin_labels();
  const auto& scheduling = scheduling_fields();
  const auto& prose = prose_fields();
  for (const auto& [label, field] : fields) {
    auto name = lower(field);
    bool known = std::count(scheduling.begin(), scheduling.end(), name)
                 || std::count(prose.begin(), prose.end(), name);
    if (!known) {
      errors.push_back({0, "run.fields: label \"" + label
                             + "\" maps to unknown field \"" + field + "\""});
      continue;
    }
    labels[lower(trim(label))] = name;
  }
  std::vector<std::string> label_names;
  for (const auto& entry : labels)
    if (entry.first.find(' ') == std::string::npos)
      label_names.push_back(entry.first);

  std::vector<raw_task> tasks;
  raw_task* current = nullptr;
  size_t level = 0;
  bool in_fence = false;
  auto lines = split_lines(text);
  for (size_t n = 0; n < lines.size(); ++n) {
    auto line = lines[n];
    size_t number = n + 1;
    auto trimmed = trim(line);
    auto add_body = [&] {
      current->body += line;
      current->body += '\n';
    };
    if (trimmed.substr(0, 3) == "```" || trimmed.substr(0, 3) == "~~~") {
      in_fence = !in_fence;
      if (current)
        add_body();
      continue;
    }
    if (in_fence) {
      if (current)
        add_body();
      continue;
    }
    if (auto hl = heading_level(trimmed); hl > 0 && indentation(line) < 4) {
      std::string id;
      std::string_view title;
      auto kind = task_heading(trimmed.substr(hl), id, title);
      if (kind == heading::open || kind == heading::checked) {
        raw_task task;
        task.line = number;
        task.title = std::string{title};
        task.done = kind == heading::checked;
        task.design = take_design_marker(task.title);
        task.default_id = id;
        if (task.title.empty())
          errors.push_back({number, "a task needs a title after its checkbox"});
        tasks.push_back(std::move(task));
        current = &tasks.back();
        level = hl;
        continue;
      }
      if (kind == heading::malformed) {
        errors.push_back({number, "malformed task heading \""
                                    + std::string{trimmed}
                                    + "\": write \"### N. [ ] Title\""});
        current = nullptr;
        continue;
      }
      if (current && hl <= level)
        current = nullptr; // a heading at the task's level ends it
      else if (current)
        add_body();
      continue;
    }
    if (!current)
      continue;
    std::string_view label;
    std::string_view value;
    if (!bold_label(trimmed, label, value)) {
      add_body();
      continue;
    }
    auto name = lower(label);
    std::string field;
    if (auto found = labels.find(name); found != labels.end())
      field = found->second;
    else if (name.rfind("how verified", 0) == 0)
      field = "how_verified";
    if (field.empty()) {
      auto suggestion = near_miss(name, label_names);
      if (!suggestion.empty())
        errors.push_back({number, "unknown label \"" + std::string{label}
                                    + "\"; did you mean \"" + suggestion
                                    + "\"?"});
      add_body();
      continue;
    }
    if (std::count(prose.begin(), prose.end(), field)) {
      add_body();
      continue;
    }
    // A scheduling label with its value on the lines below (a nested list),
    // or a command as a block (`**Run:** |`).
    std::string text_value{value};
    size_t value_line = number;
    bool missing_block = false;
    if (takes_block(field) && opens_block(value)) {
      text_value = read_block(lines, n, indentation(line));
      missing_block = text_value.empty();
    } else if (text_value.empty()) {
      auto label_indent = indentation(line);
      while (n + 1 < lines.size() && indentation(lines[n + 1]) > label_indent
             && !trim(lines[n + 1]).empty()) {
        auto item = trim(lines[++n]);
        if (!item.empty()
            && (item[0] == '-' || item[0] == '*' || item[0] == '+'))
          item = trim(item.substr(1));
        if (text_value.empty())
          value_line = n + 1;
        else
          text_value += ", ";
        text_value += item;
      }
    }
    auto existing = current->fields.find(field);
    if (existing != current->fields.end()) {
      errors.push_back({number, std::string{label}
                                  + ": given twice for this task (first on "
                                    "line "
                                  + std::to_string(existing->second.line)
                                  + ")"});
      continue;
    }
    if (missing_block) {
      errors.push_back({number, block_missing(field)});
      continue;
    }
    raw_field raw;
    raw.line = value_line;
    raw.text = std::move(text_value);
    current->fields.emplace(field, std::move(raw));
  }
  return tasks;
}

} // namespace taskforce::taskfile
