#include "src/control/claim.hpp"

#include "src/control/roots.hpp"

namespace taskforce::control {

const char* to_string(lease_kind x) {
  return x == lease_kind::root ? "root" : "lock";
}

std::string run_task_holder(const std::string& run_id,
                            const std::string& task_id) {
  return "run/" + run_id + "/" + task_id;
}

std::string lease_conflict::describe() const {
  const char* what = to_string(kind);
  if (held == wanted)
    return std::string{what} + " " + wanted + " is held by " + holder;
  return std::string{what} + " " + wanted + " overlaps " + what + " " + held
         + " of " + holder;
}

std::optional<lease_conflict>
find_conflict(const std::string& self, const std::vector<std::string>& roots,
              const std::vector<std::string>& locks,
              const std::vector<lease>& held) {
  for (auto& l : held) {
    if (l.holder == self)
      continue;
    if (l.kind == lease_kind::root) {
      for (auto& r : roots)
        if (roots_conflict(r, l.name))
          return lease_conflict{l.holder, lease_kind::root, l.name, r};
    } else {
      for (auto& k : locks)
        if (k == l.name)
          return lease_conflict{l.holder, lease_kind::lock, l.name, k};
    }
  }
  return std::nullopt;
}

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
