// The actor system configuration every taskforce process uses: the type-ID
// block, the error category, CAF's io module and a scheduler tuned for a
// small machine: one worker with work sharing, measured fastest on two cores.
#pragma once

#include <cstddef>

#include <caf/actor_system_config.hpp>

namespace taskforce {

/// An actor_system_config with taskforce's types, errors and io module.
class runtime_config : public caf::actor_system_config {
public:
  /// `threads` scheduler workers; 0 takes TASKFORCE_THREADS, else one (the
  /// measured optimum on two cores). Loads the io module when `with_io`.
  explicit runtime_config(size_t threads = 0, bool with_io = true);
};

} // namespace taskforce
