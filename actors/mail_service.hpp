// The run's mailbox as the workers see it: a detached actor with its own
// connection to the ledger that hands each task its waiting answers and
// messages exactly once (store::mailbox::take_undelivered). The worker asks
// before its first turn (an answer makes it an answer turn) and after each
// passing check (what arrived meanwhile becomes a message turn).
#pragma once

#include <filesystem>

#include <caf/fwd.hpp>

#include "actors/worker.hpp"

namespace taskforce {

/// Spawns the mailbox of the ledger at `ledger_file` (opened for writing;
/// throws store::ledger_error when it cannot be).
worker_mail_actor spawn_mail_service(caf::actor_system& sys,
                                     const std::filesystem::path& ledger_file);

} // namespace taskforce
