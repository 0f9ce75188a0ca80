// Small text helpers shared by the task-file readers.
#include <algorithm>
#include <limits>

#include "src/taskfile/raw_task.hpp"
#include "src/text/edit_distance.hpp"

namespace taskforce::taskfile {

const std::vector<std::string>& checklist_keys() {
  static const std::vector<std::string> keys{
    "id",    "files", "locks", "priority", "verify", "deps",
    "agent", "model", "risk",  "timeout",  "run"};
  return keys;
}

std::string near_miss(std::string_view word,
                      const std::vector<std::string>& keys) {
  auto lowered = lower(word);
  std::string best;
  size_t best_distance = 3;
  for (const auto& key : keys) {
    size_t allowed = key == "id" ? 0 : key.size() > 5 ? 2 : 1;
    auto distance = edit_distance(lowered, key);
    if (distance > 0 && distance <= allowed && distance < best_distance) {
      best = key;
      best_distance = distance;
    }
  }
  return best;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos)
      end = text.size();
    auto line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

std::string_view trim(std::string_view s) {
  auto blank = [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f'
           || c == '\v';
  };
  while (!s.empty() && blank(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && blank(s.back()))
    s.remove_suffix(1);
  return s;
}

std::string_view strip_backticks(std::string_view s) {
  s = trim(s);
  if (s.size() >= 2 && s.front() == '`' && s.back() == '`'
      && s.find('`', 1) == s.size() - 1)
    return trim(s.substr(1, s.size() - 2));
  return s;
}

size_t indentation(std::string_view line) {
  size_t columns = 0;
  for (char c : line) {
    if (c == ' ')
      ++columns;
    else if (c == '\t')
      columns += 4;
    else
      break;
  }
  return columns;
}

std::string dedent(std::string_view text) {
  auto lines = split_lines(text);
  size_t common = std::numeric_limits<size_t>::max();
  for (auto line : lines) {
    if (trim(line).empty())
      continue;
    size_t spaces = 0;
    while (spaces < line.size()
           && (line[spaces] == ' ' || line[spaces] == '\t'))
      ++spaces;
    common = std::min(common, spaces);
  }
  size_t first = 0;
  size_t last = lines.size();
  while (first < last && trim(lines[first]).empty())
    ++first;
  while (last > first && trim(lines[last - 1]).empty())
    --last;
  std::string out;
  for (size_t i = first; i < last; ++i) {
    auto line = lines[i];
    line.remove_prefix(std::min(common, line.size()));
    if (i > first)
      out += '\n';
    out += line;
  }
  return out;
}

bool opens_block(std::string_view value) {
  return trim(value) == "|";
}

bool takes_block(std::string_view field) {
  return field == "run" || field == "verify";
}

std::string read_block(const std::vector<std::string_view>& lines, size_t& n,
                       size_t indent) {
  // Blank lines belong to the block only when deeper lines follow them.
  size_t last = n;
  for (size_t i = n + 1; i < lines.size(); ++i) {
    if (trim(lines[i]).empty())
      continue;
    if (indentation(lines[i]) <= indent)
      break;
    last = i;
  }
  std::string block;
  for (size_t i = n + 1; i <= last; ++i) {
    block += lines[i];
    block += '\n';
  }
  n = last;
  return dedent(block);
}

std::string block_missing(std::string_view field) {
  return std::string{field}
         + ": \"|\" needs the command on the lines below it, "
           "indented deeper than \""
         + std::string{field} + ":\"";
}

} // namespace taskforce::taskfile
