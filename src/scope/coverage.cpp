#include "src/scope/coverage.hpp"

namespace taskforce::scope {

coverage::coverage(const std::vector<std::string>& files) {
  globs_.reserve(files.size());
  for (const auto& file : files)
    globs_.emplace_back(file);
}

bool coverage::covers(std::string_view path) const {
  for (const auto& g : globs_)
    if (g.matches(path))
      return true;
  return false;
}

bool in_the_way(const std::vector<std::string>& files, std::string_view path) {
  if (path.empty())
    return false;
  for (std::string_view entry : files) {
    auto literal = entry.substr(0, entry.find_first_of("*?[{\\"));
    if (literal.size() > path.size() && literal[path.size()] == '/'
        && literal.substr(0, path.size()) == path)
      return true;
  }
  return false;
}

bool covers(const std::vector<std::string>& files, std::string_view path) {
  return coverage{files}.covers(path);
}

} // namespace taskforce::scope
