#include "src/worker/scope_check.hpp"

#include "src/scope/coverage.hpp"
#include "src/scope/physical.hpp"
#include "src/text/join.hpp"

namespace taskforce {

resolved_scope resolve_scope(const std::filesystem::path& checkout,
                             const std::vector<std::string>& files) {
  resolved_scope out;
  try {
    scope::physical_root disk{checkout};
    for (auto& entry : files) {
      auto where = disk.resolve_entry(entry);
      if (!where.error.empty()) {
        out.error = "files: " + where.error;
        out.entries.clear();
        return out;
      }
      out.entries.push_back(where.path);
    }
  } catch (const std::exception& e) {
    out.error = "files: " + std::string{e.what()};
    out.entries.clear();
  }
  return out;
}

std::string judge_changes(const std::filesystem::path& checkout,
                          const resolved_scope& scope, bool enforce,
                          const std::vector<std::string>& changed,
                          changed_by who) {
  auto name = std::string{who == changed_by::gate ? "the gate" : "the worker"};
  scope::physical_root disk{checkout};
  scope::coverage cover{scope.entries};
  bool judge = enforce && !scope.entries.empty();
  std::vector<std::string> refused;
  std::vector<std::string> outside;
  for (auto& path : changed) {
    auto where = disk.locate_changed(path);
    if (!where.error.empty())
      refused.push_back(where.error);
    else if (judge && !cover.covers(where.path))
      outside.push_back(path);
  }
  if (!refused.empty())
    return name + " left paths no task may write: " + join(refused);
  if (outside.empty())
    return {};
  if (who == changed_by::gate)
    return "the gate left changes outside the task's scope: " + join(outside)
           + " (files a gate generates belong in .gitignore)";
  return "changed files outside its scope: " + join(outside);
}

} // namespace taskforce
