// The stdio transport of `taskforce serve --stdio`: a reader that feeds a
// bridge from a file descriptor and a writer that drains a bridge's output
// into one. Both block on their descriptor, so both run detached, never on
// CAF's cooperative scheduler.
#pragma once

#include <caf/fwd.hpp>

namespace taskforce {

/// Spawns a detached writer: each `std::string` chunk it receives is written
/// whole to `fd`; `close` ends it. A broken pipe drops further output
/// quietly (the reader on the other side is gone).
caf::actor spawn_fd_writer(caf::actor_system& sys, int fd);

/// Spawns a detached reader: it reads `fd` in chunks and sends each to
/// `bridge` as a request, waiting for the answer before reading on (so the
/// bridge's mailbox stays bounded). At end of input it sends `close`. It
/// stops without `close` when `wake_fd` becomes readable (shutdown).
caf::actor spawn_fd_reader(caf::actor_system& sys, int fd, int wake_fd,
                           caf::actor bridge);

} // namespace taskforce
