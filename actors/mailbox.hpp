// The run's mailbox: mail down to a run's task workers, durable in the
// ledger's database (src/store/mailbox.hpp) before anyone is told it is
// there. A worker takes its task's undelivered answers and messages (each
// exactly once, across processes: `taskforce inbox` from inside the worker
// takes from the same table); the driver's control endpoint posts what a
// person sends (`send`, `broadcast`), and the run host posts an answer
// before the attempt that continues with it starts.
//
// Detached: every request is a blocking SQLite transaction on the
// mailbox's own connection to the ledger's file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/worker.hpp"
#include "messages/interfaces.hpp"

namespace taskforce {

/// The mailbox: a worker's mail source, and where mail down is posted.
using mailbox_actor = worker_mail_actor::extend<
  /// (run, task, kind, text): stores a mail down to the task (kind
  /// `message` or `answer`); answers the mail's id once durable, or
  /// run_errc unknown_task / ledger_io.
  caf::replies_to<post_atom, std::string, std::string, turn_kind,
                  std::string>::with<int64_t>>;

/// Spawns the mailbox on its own connection to the ledger at `ledger_file`:
/// detached (tests on the deterministic scheduler pass false). Throws
/// store::ledger_error when the file cannot be opened.
mailbox_actor spawn_mailbox(caf::actor_system& sys,
                            const std::filesystem::path& ledger_file,
                            bool detached = true);

} // namespace taskforce
