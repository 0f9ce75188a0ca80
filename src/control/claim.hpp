// Which queued task gets the next slot: pure functions over the live leases
// and the candidates, so the rule is tested without a ledger.
//
// A task may be claimed when a slot is free, every prerequisite is done, and
// none of its roots or locks conflicts with a lease another holder has (a
// root conflicts with the same root, its ancestors and its descendants; a
// lock with the same name). Work is handed out oldest first; asking for one
// task never claims another (older) one.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace taskforce::control {

/// What a lease is on.
enum class lease_kind { root, lock };

/// "root" or "lock".
const char* to_string(lease_kind x);

/// One row of bg_leases: a holder (a managed task's id, or
/// `run_task_holder(run, task)`) writes under a root or holds a lock.
struct lease {
  std::string holder;
  lease_kind kind = lease_kind::root;
  std::string name;
};

/// The holder name of a task-list run's task: "run/<run>/<task>".
std::string run_task_holder(const std::string& run_id,
                            const std::string& task_id);

/// A root or lock wanted while another holder has a conflicting one.
struct lease_conflict {
  /// Who has it.
  std::string holder;
  lease_kind kind = lease_kind::root;
  /// What they have (e.g. "src").
  std::string held;
  /// What was wanted (e.g. "src/lib").
  std::string wanted;

  /// "root src/lib overlaps root src of bg-1".
  std::string describe() const;
};

/// The first conflict of `roots` and `locks` (canonical) with `held` leases
/// of holders other than `self`; nullopt when there is none.
std::optional<lease_conflict>
find_conflict(const std::string& self, const std::vector<std::string>& roots,
              const std::vector<std::string>& locks,
              const std::vector<lease>& held);

/// A queued task as the choice sees it.
struct candidate {
  std::string id;
  std::vector<std::string> roots;
  std::vector<std::string> locks;
  /// Every prerequisite is done.
  bool deps_done = true;
  /// Why not, when its prerequisites are not done ("waits for bg-1").
  std::string deps_reason;
};

/// What the choice found.
struct choice {
  /// The index into the candidates of the one to claim; nullopt when none.
  std::optional<size_t> index;
  /// Why nothing was chosen, in plain words; empty when one was.
  std::string reason;
};

/// The oldest eligible candidate (`candidates` are oldest first), or, when
/// `only` names one, that one or nothing. `free_slots` is
/// max_concurrent minus the slots held; with `enforce_roots` false roots do
/// not conflict (locks always do).
choice choose(const std::vector<candidate>& candidates,
              const std::vector<lease>& held, size_t free_slots,
              bool enforce_roots,
              const std::optional<std::string>& only = std::nullopt);

} // namespace taskforce::control
