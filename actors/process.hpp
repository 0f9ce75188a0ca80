// The process helper: a detached actor that runs a command. On its own
// thread it writes the command's input files, runs it under proc::run (its
// own process group, recorded in the process registry before it starts, the
// time limit, nothing of it left behind), and tells its owner as messages:
// `proc_started` (pid and mark), `proc_output` (at most one per interval,
// when asked for) and `proc_exited`. It takes no orders while the command
// runs: the owner kills the command through the registry by its mark
// (proc::kill_running), sharing nothing with the helper's thread.
//
// A helper runs one command and quits (spawn_process), or it is a lane:
// lent by the run's lanes (spawn_process_lanes) to one owner at a time, it
// runs that owner's commands one after the other, each sent to it as
// (start_atom, process_job), and goes back to the lanes when the owner is
// gone. Tasks that start one after another then reuse a few threads
// instead of making one per command. Either way the owner tells its
// helper's messages apart by their sender.
//
//   worker ──acquire──▶ lanes ──lends──▶ lane (a thread, kept)
//   worker ──(start_atom, job)──▶ lane ──proc_started, proc_exited──▶ worker
//   worker down ──▶ lanes: the lane is free again
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/fwd.hpp>

#include "messages/process.hpp"
#include "src/proc/run.hpp"

namespace taskforce {

/// One command for a process helper.
struct process_job {
  /// What to run and how (argv, cwd, env, stdin, log, limits, label,
  /// record folder). An empty `run.mark` is made from `run.label`.
  proc::run_options run;
  /// Files written (folders created) before the start: the prompt, the
  /// turn's text. One that cannot be written is a start that failed.
  std::vector<std::pair<std::string, std::string>> inputs;
  /// Receives the helper's messages.
  caf::actor owner;
  /// Output progress at most this often; zero = none.
  std::chrono::milliseconds progress_every{0};
};

/// Starts a process helper for `job` (detached); it quits after it.
caf::actor spawn_process(caf::actor_system& sys, process_job job);

/// Starts a run's lanes (event-based). `(acquire_atom)` answers the lane
/// lent to the sender (an idle one, else a new one); the same lane while
/// the sender lives, free again once it is gone. Send the lane
/// `(start_atom, process_job)`: it runs its jobs in the order they came.
/// `(ready_atom, std::vector<std::string> folders)` has it make folders
/// the jobs will need, ahead of them.
/// The lanes end with the actor; stop it when no owner runs any more.
caf::actor spawn_process_lanes(caf::actor_system& sys);

/// How an owner starts a helper: the real one, or a fake in tests.
using process_spawner
  = std::function<caf::actor(caf::actor_system&, process_job)>;

/// What a run's result tells the owner.
proc_exited exit_of(const proc::run_result& r);

} // namespace taskforce

// Sent only between actors of one process (it holds callbacks).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(taskforce::process_job)
