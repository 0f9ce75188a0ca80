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

bool covers(const std::vector<std::string>& files, std::string_view path) {
  return coverage{files}.covers(path);
}

} // namespace taskforce::scope
