#include "src/control/deps.hpp"

#include <algorithm>
#include <functional>
#include <set>

namespace taskforce::control {

std::optional<std::vector<std::string>>
find_cycle(const dependency_graph& graph) {
  // Depth-first, colouring each id: on the path now (grey) or finished.
  std::set<std::string> finished;
  std::vector<std::string> path;
  std::set<std::string> on_path;
  std::optional<std::vector<std::string>> found;
  std::function<void(const std::string&)> visit = [&](const std::string& id) {
    if (found || finished.count(id))
      return;
    if (on_path.count(id)) {
      auto from = std::find(path.begin(), path.end(), id);
      std::vector<std::string> cycle(from, path.end());
      cycle.push_back(id);
      found = std::move(cycle);
      return;
    }
    path.push_back(id);
    on_path.insert(id);
    if (auto i = graph.find(id); i != graph.end())
      for (auto& next : i->second)
        visit(next);
    on_path.erase(id);
    path.pop_back();
    finished.insert(id);
  };
  for (auto& [id, _] : graph)
    visit(id);
  return found;
}

std::string dependency_status::reason() const {
  if (!blocker)
    return {};
  return "dependency " + blocker->first + " is " + to_string(blocker->second);
}

dependency_status
status_of(const std::vector<std::pair<std::string, bg_state>>& prerequisites) {
  dependency_status result;
  for (auto& [id, state] : prerequisites) {
    if (state == bg_state::done)
      continue;
    result.ready = false;
    if (state == bg_state::failed || state == bg_state::cancelled) {
      if (!result.blocker)
        result.blocker = std::make_pair(id, state);
    } else {
      result.pending.push_back(id);
    }
  }
  return result;
}

} // namespace taskforce::control
