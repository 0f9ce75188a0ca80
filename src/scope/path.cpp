#include "src/scope/path.hpp"

#include <vector>

namespace taskforce::scope {

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
  // Only the literal first segment can be checked: a glob such as `*/x`
  // may match inside .git/, but git never reports such a path as changed.
  if (segments.front() == ".git" || segments.front() == ".taskforce")
    return refuse("points into " + std::string{segments.front()}
                  + "/, which belongs to "
                  + (segments.front() == ".git" ? "git" : "taskforce"));
  std::string out;
  for (auto segment : segments) {
    if (!out.empty())
      out += '/';
    out += segment;
  }
  if (directory)
    out += '/';
  return {out, ""};
}

} // namespace taskforce::scope
