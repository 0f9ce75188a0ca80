// The actors of one driven run, started and stopped together: the ledger
// service, the git service, the mailbox, the orchestrator (which starts a
// worker per attempt, each with the mailbox as its mail), the control actor
// and its loopback endpoint. The run layer (src/run/run_setup.hpp) opens the
// run; the host drives it; a front end (the command line's live table, the
// server) watches it through the watcher it passes in.
//
//   open_run() ──▶ run_host ──spawns── ledger, git, mailbox, orchestrator,
//                     │                control + endpoint (driver.json)
//                     └─ stop(): endpoint closed and driver.json removed
//                        first, then the git service's cleanup, then every
//                        actor
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "actors/control.hpp"
#include "actors/mailbox.hpp"
#include "messages/interfaces.hpp"
#include "src/config/config.hpp"
#include "src/run/run_setup.hpp"

namespace taskforce {

/// What a run host needs.
struct run_host_options {
  /// The repository's top folder.
  std::filesystem::path root;
  /// The effective config.
  config cfg;
  /// Receives run_event and (finished_atom, run_state, reason).
  caf::actor watcher;
  /// The `taskforce` executable (for the scripted backend).
  std::string self_exe;
  /// Listen for a person's commands on the loopback interface.
  bool control = true;
};

/// The actors of one run; see the top of this file.
class run_host {
 public:
  /// Spawns the run's actors for `opened` (its lock stays held by the host
  /// until it is destroyed). Nothing is scheduled before `start`.
  run_host(caf::actor_system& sys, run::opened_run opened,
           run_host_options opts);
  ~run_host();
  run_host(const run_host&) = delete;
  run_host& operator=(const run_host&) = delete;

  /// The run's id.
  const std::string& run_id() const;

  /// The run's task file (relative to the repository).
  const std::string& file() const;

  /// The run as it was loaded (tasks, states, reasons).
  const run::loaded_run& loaded() const;

  /// The orchestrator (to monitor, pause or steer it).
  orchestrator_actor orchestrator() const;

  /// Starts scheduling.
  void start();

  /// Asks the run to pause (`interrupt`: cancel the running attempts).
  void pause(const std::string& why, bool interrupt);

  /// The run is over: closes the endpoint (removing driver.json), lets the
  /// git service remove the merged worktrees it kept, and stops every
  /// actor. Idempotent; the destructor calls it.
  void stop();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace taskforce
