// The ledger service: the one SQLite connection through which a run's
// changes become durable. Detached (SQLite blocks, and with
// synchronous=FULL every commit waits for the disk). A change is answered
// only after its transaction committed, so the orchestrator never acts on
// something a crash could take back. Each change of a batch is answered on
// its own: a change the ledger refuses (it has the task elsewhere, or the
// lifecycle forbids the move) is acknowledged as refused with the state
// the ledger has, and the others are written. A start whose scope another
// holder reserves (a managed background task: src/store/leases.hpp) is
// refused as waiting (`waits`), its reason recorded. A failure of the database
// itself is a run_errc::ledger_io error and writes nothing of the batch.
#pragma once

#include <vector>

#include <caf/fwd.hpp>

#include "messages/interfaces.hpp"
#include "src/store/ledger.hpp"

namespace taskforce {

/// Spawns the ledger service owning `db` (detached).
ledger_actor spawn_ledger_service(caf::actor_system& sys, store::ledger db);

/// The store's change for a typed transition: the move (refused unless the
/// ledger has the task in `from`) with the facts the store keeps.
store::task_change to_store_change(const task_transition& tr);

/// The store's columns for typed facts (those it keeps).
store::task_fields to_store_fields(const task_facts& facts);

/// Applies a batch in one transaction (the service's own handler, exposed
/// for tests): one ack per change. Throws store::ledger_error when the
/// transaction itself fails (nothing is written then).
std::vector<transition_ack> apply_batch(store::ledger& db,
                                        const transition_batch& batch);

} // namespace taskforce
