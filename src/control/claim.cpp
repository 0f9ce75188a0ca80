#include "src/control/claim.hpp"

#include "src/control/roots.hpp"

namespace taskforce::control {

choice choose(const std::vector<candidate>& candidates,
              const std::vector<lease>& held, size_t free_slots,
              bool enforce_roots, const std::optional<std::string>& only) {
  static const std::vector<std::string> no_roots;
  choice result;
  if (free_slots == 0) {
    result.reason = "no free slot (control.maxConcurrent)";
    return result;
  }
  std::string first_reason;
  for (size_t i = 0; i < candidates.size(); ++i) {
    auto& c = candidates[i];
    if (only && c.id != *only)
      continue;
    std::string why;
    if (!c.deps_done) {
      why = c.id + " " + c.deps_reason;
    } else if (auto conflict = find_conflict(
                 c.id, enforce_roots ? c.roots : no_roots, c.locks, held)) {
      why = c.id + " waits: its " + conflict->describe();
    } else {
      result.index = i;
      return result;
    }
    if (first_reason.empty())
      first_reason = why;
  }
  result.reason = first_reason.empty()
                    ? (only ? *only + " is not queued" : "nothing is queued")
                    : first_reason;
  return result;
}

} // namespace taskforce::control
