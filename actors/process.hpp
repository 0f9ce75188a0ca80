// The process helper: one detached actor per command a worker runs. On its
// own thread it writes the command's input files, runs it under proc::run
// (its own process group, recorded in the process registry before it
// starts, the time limit, nothing of it left behind), and tells its owner
// as messages: `proc_started` (pid and mark), `proc_output` (at most one per
// interval, when asked for) and `proc_exited`; then it quits. It takes no
// orders: it is blocked in the command. The owner kills the command through
// the registry by its mark (proc::kill_running), sharing nothing with the
// helper's thread.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
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

/// Starts a process helper for `job` (detached).
caf::actor spawn_process(caf::actor_system& sys, process_job job);

/// How an owner starts a helper: the real one, or a fake in tests.
using process_spawner
  = std::function<caf::actor(caf::actor_system&, process_job)>;

/// What a run's result tells the owner.
proc_exited exit_of(const proc::run_result& r);

} // namespace taskforce
