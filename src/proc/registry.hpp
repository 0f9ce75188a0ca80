// The pids this process started through spawn() and has not reaped yet.
// Anything else among our children is an orphan we adopted as subreaper, so
// the runner may reap it without stealing another caller's exit status.
#pragma once

#include <sys/types.h>

#include <mutex>
#include <unordered_set>

namespace taskforce::proc {

/// Guards registered_children() and every posix_spawn call.
std::mutex& registry_mutex();

/// The pids started by spawn() and not yet forgotten (hold the mutex).
std::unordered_set<pid_t>& registered_children();

/// Drops `pid` after its owner reaped it.
void forget_child(pid_t pid);

} // namespace taskforce::proc
