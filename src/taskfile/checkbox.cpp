#include "src/taskfile/checkbox.hpp"

#include <vector>

namespace taskforce::taskfile {

namespace {

std::string_view trim_view(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty()
         && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

/// The box on `line` (its offset within the line) when the line is a list
/// item or a heading whose first box is followed by `title`.
std::optional<checkbox_place> box_on(std::string_view line,
                                     const std::string& title) {
  auto s = trim_view(line);
  if (s.empty())
    return std::nullopt;
  bool heading = s.front() == '#';
  bool item = s.front() == '-' || s.front() == '*' || s.front() == '+'
              || (s.front() >= '0' && s.front() <= '9');
  if (!heading && !item)
    return std::nullopt;
  auto open = line.find('[');
  if (open == std::string_view::npos || open + 2 >= line.size()
      || line[open + 2] != ']')
    return std::nullopt;
  auto mark = line[open + 1];
  if (mark != ' ' && mark != 'x' && mark != 'X')
    return std::nullopt;
  auto rest = trim_view(line.substr(open + 3));
  // The parser may keep markers such as `[design]` in the title or drop
  // them: the title must be what follows, or be contained in it.
  if (title.empty() || rest.find(title) == std::string_view::npos)
    return std::nullopt;
  return checkbox_place{open + 1, 0, mark != ' '};
}

} // namespace

std::optional<checkbox_place> find_checkbox(std::string_view text, size_t line,
                                            const std::string& title) {
  std::vector<checkbox_place> found;
  std::optional<checkbox_place> at_line;
  size_t start = 0;
  for (size_t n = 1; start <= text.size(); ++n) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos)
      end = text.size();
    if (auto box = box_on(text.substr(start, end - start), title)) {
      box->offset += start;
      box->line = n;
      found.push_back(*box);
      if (n == line)
        at_line = box;
    }
    if (end == text.size())
      break;
    start = end + 1;
  }
  if (at_line)
    return at_line;
  if (found.size() == 1)
    return found.front();
  return std::nullopt;
}

std::optional<std::string> check_box(const std::string& text,
                                     const task_spec& task) {
  auto box = find_checkbox(text, task.line, task.title);
  if (!box)
    return std::nullopt;
  if (box->checked)
    return text;
  auto out = text;
  out[box->offset] = 'x';
  return out;
}

} // namespace taskforce::taskfile
