// The checklist format: `- [ ] title` lines with `key: value` metadata below.
#include <algorithm>
#include <cctype>

#include "src/taskfile/raw_task.hpp"

namespace taskforce::taskfile {

namespace {

/// A list item's marker (`-`, `*`, `+`, `12.`, `12)`) at the start of `s`:
/// its length, or 0.
size_t list_marker(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '*' || s[0] == '+'))
    return 1;
  size_t digits = 0;
  while (digits < s.size() && digits < 9
         && std::isdigit(static_cast<unsigned char>(s[digits])))
    ++digits;
  if (digits > 0 && digits < s.size() && (s[digits] == '.' || s[digits] == ')'))
    return digits + 1;
  return 0;
}

/// What a line holds, for the checkbox question.
enum class box { none, open, checked, malformed };

/// Whether `s` (trimmed) is a checkbox item; sets `title`.
box checkbox(std::string_view s, std::string_view& title) {
  auto marker = list_marker(s);
  if (marker == 0)
    return box::none;
  auto rest = s.substr(marker);
  auto after = trim(rest);
  // Something that wants to be a checkbox: `[`, at most two characters, `]`.
  if (after.size() < 2 || after[0] != '[')
    return box::none;
  auto close = after.find(']');
  if (close == std::string_view::npos || close > 3)
    return box::none;
  if (close + 1 < after.size() && after[close + 1] == '(')
    return box::none; // a markdown link such as `- [x](url)`
  auto inside = after.substr(1, close - 1);
  bool spaced = !rest.empty() && (rest[0] == ' ' || rest[0] == '\t');
  bool followed = close + 1 == after.size() || after[close + 1] == ' '
                  || after[close + 1] == '\t';
  if (!spaced || !followed || inside.size() != 1
      || (inside != " " && inside != "x" && inside != "X"))
    return box::malformed;
  title = trim(after.substr(close + 1));
  return inside == " " ? box::open : box::checked;
}

bool is_fence(std::string_view trimmed) {
  return trimmed.substr(0, 3) == "```" || trimmed.substr(0, 3) == "~~~";
}

/// A `key: value` line: the key as written, and the value; false otherwise.
bool key_value(std::string_view s, std::string_view& key,
               std::string_view& value) {
  if (!s.empty() && (s[0] == '-' || s[0] == '*' || s[0] == '+') && s.size() > 1
      && (s[1] == ' ' || s[1] == '\t'))
    s = trim(s.substr(1));
  size_t i = 0;
  while (i < s.size()
         && (std::isalpha(static_cast<unsigned char>(s[i]))
             || (i > 0 && (s[i] == '_' || s[i] == '-'))))
    ++i;
  if (i == 0 || i >= s.size() || s[i] != ':')
    return false;
  key = s.substr(0, i);
  value = trim(s.substr(i + 1));
  return true;
}

} // namespace

std::vector<raw_task> read_checklist(std::string_view text,
                                     std::vector<parse_error>& errors,
                                     std::vector<parse_error>& warnings) {
  std::vector<raw_task> tasks;
  raw_task* current = nullptr;
  size_t current_indent = 0;
  bool in_fence = false;
  // Inside a headings-format task (its heading's level), and the first
  // such heading with how many there are, for the warning.
  size_t heading_task = 0;
  size_t first_heading = 0;
  std::string first_heading_text;
  size_t headings = 0;
  auto lines = split_lines(text);
  // A task takes a few lines; reserving avoids moving them all as it grows.
  tasks.reserve(lines.size() / 4 + 1);
  for (size_t n = 0; n < lines.size(); ++n) {
    auto line = lines[n];
    size_t number = n + 1;
    auto trimmed = trim(line);
    auto indent = indentation(line);
    auto add_body = [&] {
      current->body += line;
      current->body += '\n';
    };
    if (is_fence(trimmed)) {
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
    if (auto level = task_heading_level(line); level > 0) {
      if (headings++ == 0) {
        first_heading = number;
        first_heading_text = std::string{trimmed};
      }
      heading_task = level;
      current = nullptr;
      continue;
    }
    if (heading_task > 0 && !trimmed.empty() && trimmed[0] == '#') {
      auto level = trimmed.find_first_not_of('#');
      if (level != std::string_view::npos && level <= heading_task
          && (trimmed[level] == ' ' || trimmed[level] == '\t'))
        heading_task = 0; // a section of its own ends the task's
    }
    std::string_view title;
    auto kind = checkbox(trimmed, title);
    if (heading_task > 0 && kind != box::none)
      continue; // an acceptance criterion of the heading's task
    bool nested = current && indent > current_indent;
    if ((kind == box::open || kind == box::checked) && !nested) {
      raw_task task;
      task.line = number;
      task.title = std::string{title};
      task.done = kind == box::checked;
      task.default_id = "t" + std::to_string(tasks.size() + 1);
      if (title.empty())
        errors.push_back({number, "a task needs a title after its checkbox"});
      tasks.push_back(std::move(task));
      current = &tasks.back();
      current_indent = indent;
      continue;
    }
    if (kind == box::malformed && !nested) {
      errors.push_back({number, "malformed checkbox \"" + std::string{trimmed}
                                  + "\": write \"- [ ] title\" or "
                                    "\"- [x] title\""});
      continue;
    }
    if (!current)
      continue; // text before the first task
    if (trimmed.empty()) {
      add_body();
      continue;
    }
    if (indent < current_indent
        || (trimmed[0] == '#' && indent <= current_indent)) {
      current = nullptr; // a heading or outdented text ends the task
      continue;
    }
    std::string_view key;
    std::string_view value;
    if (!nested || kind == box::none) {
      if (key_value(trimmed, key, value)) {
        auto name = lower(key);
        const auto& keys = checklist_keys();
        if (std::find(keys.begin(), keys.end(), name) != keys.end()) {
          auto found = current->fields.find(name);
          if (found != current->fields.end()) {
            errors.push_back({number, name
                                        + ": given twice for this task "
                                          "(first on line "
                                        + std::to_string(found->second.line)
                                        + ")"});
          } else {
            raw_field field;
            field.line = number;
            field.text = std::string{value};
            if (takes_block(name) && opens_block(value))
              field.text = read_block(lines, n, indent);
            if (field.text.empty() && opens_block(value))
              errors.push_back({number, block_missing(name)});
            else
              current->fields.emplace(name, std::move(field));
          }
          continue;
        }
        auto suggestion = near_miss(key, keys);
        if (!suggestion.empty()) {
          errors.push_back({number, "unknown key \"" + std::string{key}
                                      + "\"; did you mean \"" + suggestion
                                      + "\"?"});
          continue;
        }
      }
    }
    add_body();
  }
  if (headings > 0)
    warnings.push_back(
      {first_heading,
       "\"" + first_heading_text + "\" is a task of the headings format"
         + (headings > 1 ? " (like " + std::to_string(headings - 1)
                             + " more headings here)"
                         : std::string{})
         + "; read as a checklist, the checkboxes under it are not tasks: "
           "use --format headings (or run.taskFormat \"headings\")"});
  return tasks;
}

} // namespace taskforce::taskfile
