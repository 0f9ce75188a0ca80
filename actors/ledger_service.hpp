// The ledger service: the one SQLite connection through which a run's
// transitions become durable. Detached (SQLite blocks, and with
// synchronous=FULL every commit waits for the disk). A transition is
// answered only after its transaction committed, so the orchestrator never
// acts on something a crash could take back. A write the lifecycle refuses
// is answered with an error naming the task and the move.
#pragma once

#include <caf/fwd.hpp>

#include "messages/interfaces.hpp"
#include "src/store/ledger.hpp"

namespace taskforce {

/// Spawns the ledger service owning `db` (detached).
ledger_actor spawn_ledger_service(caf::actor_system& sys, store::ledger db);

/// Applies one task_transition to `db` (the service's own handler, exposed
/// for tests): an empty state only updates the task's fields. Returns the
/// task's attempt number. Throws store::ledger_error.
uint64_t apply_transition(store::ledger& db, const task_transition& tr);

/// Applies transitions in one transaction (group commit); returns each
/// attempt number. Throws store::ledger_error when any change was refused
/// (the others are written).
std::vector<uint64_t> apply_batch(store::ledger& db,
                                  const std::vector<task_transition>& trs);

} // namespace taskforce
