// The actor system configuration every taskforce process uses: the type-ID
// block, the error category, CAF's io module and a scheduler tuned for a
// small machine: one worker with work sharing, measured fastest on two cores.
#pragma once

#include <cstddef>
#include <string>

#include <caf/actor_system_config.hpp>

namespace taskforce {

/// Scheduler threads when neither the caller nor TASKFORCE_THREADS asks for a
/// number: one. Blocking work runs on threads of its own, so the scheduler
/// only routes messages, and one thread measured fastest on two cores.
constexpr size_t default_scheduler_threads = 1;

/// The scheduler threads a TASKFORCE_THREADS value asks for.
struct thread_count {
  size_t threads;
  /// Why the value was not taken (then `threads` is the default), or empty.
  std::string warning;
};

/// `value` is a whole number from 1 to 256, or null or empty for the default;
/// anything else gives the default and a warning naming the value.
thread_count scheduler_threads(const char* value);

/// An actor_system_config with taskforce's types, errors and io module.
class runtime_config : public caf::actor_system_config {
 public:
  /// `threads` scheduler workers; 0 takes TASKFORCE_THREADS, else
  /// default_scheduler_threads (a bad TASKFORCE_THREADS is logged as a
  /// warning). Loads the io module when `with_io`.
  explicit runtime_config(size_t threads = 0, bool with_io = true);
};

} // namespace taskforce
