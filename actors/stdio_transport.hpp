// The stdio transport of `taskforce serve --stdio`: a reader that feeds a
// bridge from a file descriptor and a writer that drains a bridge's output
// into one. Both block on their descriptor, so both run detached, never on
// CAF's cooperative scheduler.
#pragma once

#include <caf/fwd.hpp>

namespace taskforce {

/// Spawns a detached writer: each `std::string` chunk it receives is written
/// whole to `fd`, and the chunk's sender is told (written_atom, bytes) once
/// it left the queue; `close` ends it. A reader that is gone (broken pipe),
/// or `wake_fd` turning readable while `fd` takes nothing more (shutdown
/// with a reader that does not read), drops further output quietly, still
/// acknowledging it.
caf::actor spawn_fd_writer(caf::actor_system& sys, int fd, int wake_fd);

/// Spawns a detached reader: it reads `fd` in chunks and sends each to
/// `bridge` as a request, waiting for the answer before reading on (so the
/// bridge's mailbox stays bounded; the bridge withholds the answer while
/// its output is not read). At end of input it sends `close`. It
/// stops without `close` when `wake_fd` becomes readable (shutdown).
caf::actor spawn_fd_reader(caf::actor_system& sys, int fd, int wake_fd,
                           caf::actor bridge);

} // namespace taskforce
