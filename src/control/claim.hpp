// Which queued task gets the next slot: pure functions over the live leases
// and the candidates, so the rule is tested without a ledger.
//
// A task may be claimed when a slot is free, every prerequisite is done, and
// none of its roots or locks overlaps a lease another holder has (a managed
// task's or a task-list run's; see src/scope/lease.hpp). Work is handed out
// oldest first; asking for one task never claims another (older) one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/scope/lease.hpp"

namespace taskforce::control {

// The rule of leases itself (what overlaps what, how a conflict is told)
// is src/scope/lease.hpp, shared with task-list runs.
using scope::find_conflict;
using scope::lease;
using scope::lease_conflict;
using scope::lease_kind;

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
