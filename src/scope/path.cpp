#include "src/scope/path.hpp"

#include <vector>

#include "src/text/strings.hpp"

namespace taskforce::scope {

std::string owned_folder::describe() const {
  if (nested)
    return "into " + folder + "/, a nested repository's git folder, which "
           + "belongs to " + owner;
  return "into " + folder + "/, which belongs to " + owner;
}

owned_folder find_owned_folder(std::string_view path) {
  size_t start = 0;
  bool first = true;
  while (start <= path.size()) {
    auto end = path.find('/', start);
    if (end == std::string_view::npos)
      end = path.size();
    auto part = path.substr(start, end - start);
    if (!part.empty() && part != ".") {
      auto name = lower(part);
      bool git = name == ".git";
      if (git || (first && name == ".taskforce"))
        return {std::string{path.substr(0, end)}, git ? "git" : "taskforce",
                !first};
      first = false;
    }
    start = end + 1;
  }
  return {};
}

normalized_path normalize_path(std::string_view raw) {
  auto refuse = [&](std::string why) {
    return normalized_path{"", "\"" + std::string{raw} + "\" " + why};
  };
  if (raw.empty())
    return refuse("is empty");
  if (raw.front() == '/')
    return refuse("is absolute; write it relative to the repository");
  if (raw.find('\0') != std::string_view::npos)
    return refuse("contains a NUL character");
  bool directory = raw.back() == '/';
  std::vector<std::string_view> segments;
  size_t start = 0;
  while (start <= raw.size()) {
    auto end = raw.find('/', start);
    if (end == std::string_view::npos)
      end = raw.size();
    auto segment = raw.substr(start, end - start);
    start = end + 1;
    if (segment.empty() || segment == ".")
      continue;
    if (segment == "..") {
      if (segments.empty())
        return refuse("escapes the repository");
      segments.pop_back();
      continue;
    }
    segments.push_back(segment);
  }
  if (segments.empty())
    return refuse("names the repository root; write ** to claim everything");
  std::string out;
  for (auto segment : segments) {
    if (!out.empty())
      out += '/';
    out += segment;
  }
  // Only literal segments can be checked: a glob such as `*/x` may match
  // inside .git/, but git never reports such a path as changed.
  if (auto owned = find_owned_folder(out); !owned.folder.empty())
    return refuse("points " + owned.describe());
  if (directory)
    out += '/';
  return {out, ""};
}

} // namespace taskforce::scope
